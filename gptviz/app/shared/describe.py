"""One line about a model for its caption: its shape, size and how well it learned."""

from __future__ import annotations

from typing import Any

from gptviz.app.shared.notes import held_out_line
from gptviz.i18n import N_, _, ngettext, number

POSITIONALS = (N_("learned"), N_("sinusoidal"), N_("rope"), N_("none"))  # config.positional


def describe(picked: Any) -> str:  # a picker.Picked (imported there: no cycle)
    """One line about the model, e.g. '4 layers · 4 heads · d=128 · |V|=1,028 · 0.9M params'."""
    c = picked.checkpoint.config
    n = sum(p.numel() for p in picked.checkpoint.model.parameters())
    quality = held_out_line(picked.checkpoint.card)
    tail = f" · {quality}" if quality else ""
    return _("{layers} · {heads} · d={d} · context {ctx} · |V|={vocab} · {millions}M params · "
             "{positional} positions").format(
        layers=ngettext("{n} layer", "{n} layers", c.n_layer).format(n=c.n_layer),
        heads=ngettext("{n} head", "{n} heads", c.n_head).format(n=c.n_head), d=c.d_model,
        ctx=c.context_length, vocab=number(c.vocab_size, 0, grouping=True),
        millions=number(n / 1e6, 2), positional=_(c.positional)) + tail



def induction_line(card: dict) -> str:
    """The card's standard induction test (gptviz.analysis.induction), in one sentence.

    >>> line = induction_line({"induction": {"results": [{"length": 10, "best_layer": 1,
    ...     "best_head": 2, "score": 0.8, "copy_accuracy": 0.97}]}})
    >>> line.split(": ")[1][:-15]
    'at length 10 the best head, layer 1 head 2, scores 0.80 and the model copies 97 %'
    """
    results = (card.get("induction") or {}).get("results") if isinstance(
        card.get("induction"), dict) else None
    if not isinstance(results, list):
        return ""
    parts = []
    for r in results:
        try:
            parts.append(_("at length {length} the best head, layer {layer} head {head}, "
                           "scores {score} and the model copies {copies} % of the "
                           "repeat").format(
                length=int(r["length"]), layer=int(r["best_layer"]), head=int(r["best_head"]),
                score=number(float(r["score"]), 2),
                copies=number(100 * float(r["copy_accuracy"]), 0)))
        except (KeyError, TypeError, ValueError):
            return ""
    return _("Standard induction test (random letter and digit tokens repeated once, no "
             "separator): {results}.").format(results="; ".join(parts)) if parts else ""
