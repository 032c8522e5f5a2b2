"""Steps 1–5 of the lesson: from the text to the matrix X the first block receives.

Each step is a function of the ``Lesson`` returning a ``StepView``; its figures and
formulas come from the explore pages' builders (Tokenizers, Embeddings, Positional).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gptviz.analysis import core as analysis
from gptviz.app.embeddings import figures as ve
from gptviz.app.embeddings import formulas as emb_tex
from gptviz.app.lesson import formulas as lt
from gptviz.app.lesson import questions as q
from gptviz.app.lesson.run import Lesson, Link, StepView
from gptviz.app.positional import figures as vp
from gptviz.app.positional import formulas as pos_tex
from gptviz.app.shared.chips import prompt_chips_html, token_table
from gptviz.app.shared.heatmaps import title_room
from gptviz.app.shared.ticks import thin_ticks
from gptviz.app.shared.widgets import LINK_LIMIT
from gptviz.app.tokenizers import formulas as tok_tex
from gptviz.app.tokenizers.controls import MODEL_LABEL
from gptviz.i18n import N_, _, ngettext, number
from gptviz.model.names import act_name
from gptviz.tokenizers.specials import UNK

# How the model places its tokens, one sentence per kind of positions ({n}: the context
# length, {d}: the width).
POSITIONS = {
    "learned": N_("This model learned its position vectors during training: $P$ is a "
                  "trainable {n} × {d} matrix whose row $i$ is added at position $i$."),
    "sinusoidal": N_("This model uses the fixed sinusoidal table of the seeds, "
                     "$p_{{i,2j}} = \\sin(i/10000^{{2j/d}})$ and $p_{{i,2j+1}}$ its cosine."),
    "rope": N_("This model adds nothing here ($p_i = 0$, so $x_i = E[t_i]$): it rotates every "
               "query and key inside attention by an angle that grows with the position "
               "(RoPE), so attention scores depend on how far apart two tokens are."),
    "none": N_("This model adds **no** positions at all ($p_i = 0$, so $x_i = E[t_i]$); it can "
               "still tell order a little, because the causal mask lets token $i$ see only "
               "$i + 1$ tokens."),
}
OTHER_POSITIONS = N_("This model adds position vectors.")


def _n(x: int) -> str:
    return number(x, 0, grouping=True)


def _tokenizers_link(ls: Lesson) -> Link:
    """The Tokenizers page on the prompt, with this model's own tokenizer."""
    params: dict[str, str | list[str]] = {"model": ls.picked.link_value,
                                          "tokenizer": MODEL_LABEL}
    if len(ls.prompt.text) <= LINK_LIMIT:
        params["text"] = ls.prompt.text  # the Tokenizers page calls its box "text"
    return Link("app_pages/tokenizers.py", N_("Tokenizers"), params)


def tokens(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    corpus = Path(str(ls.ckpt.card.get("corpus", ""))).stem
    cut = (ngettext("The model reads at most $N = {n}$ tokens (its context window), so {k} "
                    "token at the start is cut: it is faded, above the ✂.",
                    "The model reads at most $N = {n}$ tokens (its context window), so {k} "
                    "tokens at the start are cut: they are faded, above the ✂.", p.dropped
                    ).format(n=c.context_length, k=_n(p.dropped)) if p.dropped else "")
    unknown = sum(t.unknown for t in p.tokens)
    unk = (ngettext("{k} piece is not in the vocabulary and became {unk} (red).",
                    "{k} pieces are not in the vocabulary and became {unk} (red).", unknown
                    ).format(k=_n(unknown), unk=q.md(UNK)) if unknown else "")
    cuts = (_("A *tokenizer* cuts the text into pieces taken from a fixed vocabulary $V$ of "
              "{v} entries, learned from the {corpus} corpus, and the model sees only that "
              "list of pieces, the tokens $t_1, \\dots, t_N$.") if corpus else
            _("A *tokenizer* cuts the text into pieces taken from a fixed vocabulary $V$ of "
              "{v} entries, and the model sees only that list of pieces, the tokens "
              "$t_1, \\dots, t_N$.")).format(v=_n(c.vocab_size), corpus=q.md(corpus))
    narrative = q.sentences([
        _("A GPT never reads letters."), cuts,
        _("Your prompt of {chars} characters became {n} tokens; once revealed, each chip is "
          "one of them, with its id underneath.").format(chars=_n(len(p.text)),
                                                         n=_n(len(p.all_tokens))),
        cut, unk,
        _("Frequent words tend to be one token; rarer ones are split into several.")])
    return StepView(
        narrative, [prompt_chips_html(p.all_tokens, p.text, p.dropped)],
        [tok_tex.tokenizer_map(p.text, p.all_tokens, c.vocab_size)],
        _tokenizers_link(ls),
        caption=_("Hover a chip for its id and bytes. · is a space, ↵ a newline."),
        question=q.token_count(p.text, p.tokens))


def ids(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    distinct = len(set(p.ids))
    repeats = (_("Only {k} of your {n} ids are different: the same piece always gets the "
                 "same id.").format(k=distinct, n=ls.n) if distinct < ls.n else
               _("The same piece would always get the same id."))
    narrative = q.sentences([
        _("The pieces themselves are not kept either: each token is replaced by its number in "
          "the vocabulary, its *id*, from 0 to {last}. From here on the model receives a list "
          "of {n} whole numbers and nothing else.").format(last=_n(c.vocab_size - 1), n=ls.n),
        repeats,
        _("An id is a name, not an amount: id 500 is not 'more' than id 5, so the model "
          "cannot compute with ids directly. The next step turns each id into a vector.")])
    columns = {"position": _("position"), "id": _("id"), "token": _("token"),
               "bytes": _("bytes")}
    table = token_table(p.tokens, p.text)[list(columns)].rename(columns=columns)
    formula = lt.ids_formula(list(p.ids), c.vocab_size, dropped=p.dropped)
    return StepView(narrative, [table], [formula],
                    _tokenizers_link(ls),
                    caption=_("Positions count from 0 in the table and the code; the seeds' "
                              "${t}$ is position 0.").format(t=f"t_{{{p.dropped + 1}}}"))


def one_hot(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    E = analysis.to_numpy(ls.ckpt.model.embed.weight)  # (|V|, d)
    oh, _rows = analysis.one_hot_embed(list(p.ids), E)  # (N, |V|)
    fig = ls.figure("one-hot", lambda: thin_ticks(title_room(
        ve.one_hot_figure(oh, ls.labels, list(p.ids)))))
    narrative = _(
        "A matrix cannot multiply a name, so each id $t_i$ becomes a *one-hot* row "
        "$e_{{t_i}}$: {v} zeros with a single 1 in column $t_i$. Stacked, your {n} rows form "
        "the matrix {oh}. The picture keeps only the columns your prompt uses; every other "
        "column is 0 in every row. All one-hot vectors are equally far apart, so at this stage "
        "no token is closer to another.").format(
        v=_n(c.vocab_size), n=ls.n,
        oh=f"$\\mathrm{{OH}} \\in \\{{0,1\\}}^{{{ls.n} \\times {c.vocab_size}}}$")
    return StepView(narrative, [fig], [tok_tex.one_hot_formula(p.tokens, c.vocab_size,
                                                             dropped=p.dropped)],
                    ls.link("app_pages/embeddings.py", N_("Embeddings"), "One-hot × E"),
                    question=q.one_hot_ones(ls.n, c.vocab_size, len(set(p.ids))))


def embedding(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    E = analysis.to_numpy(ls.ckpt.model.embed.weight)  # (|V|, d)
    _oh, rows = analysis.one_hot_embed(list(p.ids), E)  # (N, d)
    fig = ls.figure("embedding", lambda: thin_ticks(title_room(
        ve.embedding_rows(rows, ls.labels))))
    last = ls.n - 1
    narrative = _(
        "Multiplying the one-hot row $e_{{t_i}}$ by the embedding matrix {E} (the seeds call "
        "it $A$) picks out row $t_i$ of $E$: a vector of $d = {d}$ numbers that training has "
        "tuned. No arithmetic really happens, which is why frameworks implement it as a table "
        "lookup. Each row of the heatmap is one token's vector (red positive, blue negative); "
        "tokens that are used in similar ways end up with similar rows.").format(
        E=f"$E \\in \\mathbb{{R}}^{{{c.vocab_size} \\times {c.d_model}}}$", d=c.d_model)
    return StepView(narrative, [fig], [
        emb_tex.embedding_of_one_hot(c.vocab_size),
        emb_tex.embedding_lookup(ls.labels[last], p.ids[last], c.vocab_size, rows[last])],
        ls.link("app_pages/embeddings.py", N_("Embeddings"), "One-hot × E"),
        caption=_("The formula follows the last token, position {k}.").format(k=last))


def positions(ls: Lesson) -> StepView:
    c = ls.config
    X = analysis.to_numpy(ls.cache[act_name("embed")][0])  # (N, d)
    PE = analysis.to_numpy(ls.cache[act_name("pos_embed")])  # (N, d)
    fig = ls.figure("positions", lambda: thin_ticks(vp.x_plus_pe_figure(X, PE, ls.labels)))
    last = ls.n - 1
    how = _(POSITIONS.get(c.positional, OTHER_POSITIONS)).format(n=c.context_length,
                                                                 d=c.d_model)
    narrative = q.sentences([
        _("Attention, the next stage, treats its input as a set: without help it could not "
          "tell *where* a token stands. So the model adds a position vector to each row, "
          "$x_i = E[t_i] + p_i$."), how,
        _("The sum $X$ ({n} × {d}) is what the first block receives: the same word at two "
          "positions enters as two different vectors.").format(n=ls.n, d=c.d_model)])
    e_norm = float(np.linalg.norm(X, axis=1).mean())
    p_norm = float(np.linalg.norm(PE, axis=1).mean())
    return StepView(narrative, [fig], [
        pos_tex.x_plus_pe_formula(ls.labels[last], last, X[last], PE[last], c.positional)],
        ls.link("app_pages/positional.py", N_("Positional encoding"), "X + PE for the prompt"),
        caption=_("The three panels share one colour scale."),
        question=q.position_or_token(e_norm, p_norm, c.positional))
