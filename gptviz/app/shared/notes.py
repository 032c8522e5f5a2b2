"""Sentences several pages say in the same words."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from gptviz.i18n import N_, _, ngettext, number
from gptviz.words import counted  # noqa: F401 - agree's doctest, and pages' import

INDEX_NOTE = N_(
    "Positions and token ids count from 0, as in the code: the first token of the prompt is "
    "at position 0. The seeds write a prompt as $t_1 \\dots t_N$, so their $t_k$ is our "
    "position $k-1$, and their last token $t_N$ is our position $N-1$.")


# card_facts' keys, in the catalog for the pages that show them as ``_(key)``
CARD_FACTS = (N_("corpus"), N_("tokenizer"), N_("steps"), N_("kept step"), N_("trained in"),
              N_("date"))


def index_note() -> None:
    """Say once, on a page that shows positions or ids, that they count from 0."""
    st.caption(_(INDEX_NOTE))


def agree(n: int, one: str, many: str) -> str:
    """The word that agrees with a count of ``n``: ``one`` for 1, else ``many``.

    >>> f"{counted(1, 'piece')} {agree(1, 'is', 'are')}", agree(3, "it is", "they are")
    ('1 piece is', 'they are')
    """
    return one if n == 1 else many


def duration(seconds: float) -> str:
    """Seconds as a reader wants them.

    >>> duration(75), duration(9.6), duration(3563.8)
    ('1 min 15 s', '10 s', '59 min 24 s')
    """
    seconds = round(seconds)
    if seconds < 60:
        return _("{s} s").format(s=seconds)
    return _("{m} min {s} s").format(m=seconds // 60, s=f"{seconds % 60:02d}")


def card_facts(card: dict) -> dict[str, str]:
    """How a model was made, as a reader wants it: the card's corpus, tokenizer, steps, the
    step kept, the training time in minutes and seconds and the date to the minute (UTC).
    The keys are English (``N_``): a page shows ``_(key)``.

    >>> card_facts({"corpus": "a.txt", "steps": 800, "wall_time_s": 3563.8,
    ...             "date": "2026-11-23T21:31:39+00:00"})
    {'corpus': 'a.txt', 'steps': '800', 'trained in': '59 min 24 s', 'date': '2026-11-23 21:31 UTC'}
    """
    out = {}
    for key in ("corpus", "tokenizer", "steps", "kept_step"):
        if key in card:
            v = card[key]
            out[key.replace("_", " ")] = number(v, 0, grouping=True) if isinstance(v, int) \
                else str(v)
    seconds = card.get("wall_time_s")
    if isinstance(seconds, (int, float)):
        out[N_("trained in")] = duration(seconds)
    date = card.get("date")
    if isinstance(date, str):
        try:
            when = datetime.fromisoformat(date)
            when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
            out["date"] = when.strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            out["date"] = date
    return out


def held_out_line(card: dict) -> str:
    """The model's held-out loss as its card gives it: one total, spread over the tokens it
    predicted and over the characters of the text (one token fewer than characters for a
    character model: the first is never predicted, so the two figures differ a little).

    >>> held_out_line({"held_out": {"nats_per_token": 3.9, "nats_per_char": 1.41}})
    'held-out loss 3.900 nats/token = 1.410 nats/char'
    >>> held_out_line({"held_out": {"nats_per_token": 2.7496, "nats_per_char": 2.7495,
    ...                             "tokens": 36581, "chars": 36582}}).split(" = ")
    ['held-out loss 2.750 nats per predicted token (over 36,581 tokens)',
     '2.749 nats per character (36,582 characters)']
    >>> held_out_line({"final_val_loss": 2.5}), held_out_line({"held_out": "?"})
    ('validation loss 2.500', '')
    """
    held = card.get("held_out")
    if isinstance(held, dict):
        per_token, per_char = held.get("nats_per_token"), held.get("nats_per_char")
        tokens, chars = held.get("tokens"), held.get("chars")
        if all(isinstance(v, (int, float)) for v in (per_token, per_char)):
            if isinstance(tokens, int) and isinstance(chars, int):
                return _("held-out loss {per_token} nats per predicted token (over {tokens}) = "
                         "{per_char} nats per character ({chars})").format(
                    per_token=number(per_token, 3), per_char=number(per_char, 3),
                    tokens=ngettext("{n} token", "{n} tokens", tokens).format(
                        n=number(tokens, 0, grouping=True)),
                    chars=ngettext("{n} character", "{n} characters", chars).format(
                        n=number(chars, 0, grouping=True)))
            return _("held-out loss {per_token} nats/token = {per_char} nats/char").format(
                per_token=number(per_token, 3), per_char=number(per_char, 3))
    val = card.get("final_val_loss")
    return _("validation loss {val}").format(val=number(val, 3)) \
        if isinstance(val, (int, float)) else ""
