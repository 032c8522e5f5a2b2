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
from gptviz.app.shared.notes import agree, counted
from gptviz.app.shared.ticks import thin_ticks
from gptviz.app.shared.widgets import LINK_LIMIT
from gptviz.app.tokenizers import formulas as tok_tex
from gptviz.app.tokenizers.controls import MODEL_LABEL
from gptviz.model.names import act_name
from gptviz.tokenizers.specials import UNK

POSITIONS = {
    "learned": "learned its position vectors during training: $P$ is a trainable "
               "{n} × {d} matrix whose row $i$ is added at position $i$",
    "sinusoidal": "uses the fixed sinusoidal table of the seeds, "
                  "$p_{{i,2j}} = \\sin(i/10000^{{2j/d}})$ and $p_{{i,2j+1}}$ its cosine",
    "rope": "adds nothing here ($p_i = 0$, so $x_i = E[t_i]$): it rotates every query and key "
            "inside attention by an angle that grows with the position (RoPE), so attention "
            "scores depend on how far apart two tokens are",
    "none": "adds **no** positions at all ($p_i = 0$, so $x_i = E[t_i]$); it can still tell "
            "order a little, because the causal mask lets token $i$ see only $i + 1$ tokens",
}


def _tokenizers_link(ls: Lesson) -> Link:
    """The Tokenizers page on the prompt, with this model's own tokenizer."""
    params: dict[str, str | list[str]] = {"model": ls.picked.link_value,
                                          "tokenizer": MODEL_LABEL}
    if len(ls.prompt.text) <= LINK_LIMIT:
        params["text"] = ls.prompt.text  # the Tokenizers page calls its box "text"
    return Link("app_pages/tokenizers.py", "Tokenizers", params)


def tokens(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    corpus = Path(str(ls.ckpt.card.get("corpus", ""))).stem
    learned = f", learned from the {q.md(corpus)} corpus" if corpus else ""
    crop = (f" The model reads at most $N = {c.context_length}$ tokens (its context window), so "
            f"{counted(p.dropped, 'token')} at the start {agree(p.dropped, 'is', 'are')} cut: "
            f"{agree(p.dropped, 'it is', 'they are')} faded, above the ✂."
            if p.dropped else "")
    unknown = sum(t.unknown for t in p.tokens)
    unk = (f" {counted(unknown, 'piece')} {agree(unknown, 'is', 'are')} not in the "
           f"vocabulary and became {q.md(UNK)} (red)." if unknown else "")
    narrative = (
        "A GPT never reads letters. A *tokenizer* cuts the text into pieces taken from a fixed "
        f"vocabulary $V$ of {c.vocab_size:,} entries{learned}, and the model sees only that "
        f"list of pieces, the tokens $t_1, \\dots, t_N$. Your prompt of {len(p.text):,} "
        f"characters became {len(p.all_tokens):,} tokens; once revealed, each chip is one of "
        f"them, with its id underneath.{crop}{unk} Frequent words tend to be one token; "
        "rarer ones are split into several.")
    return StepView(
        narrative, [prompt_chips_html(p.all_tokens, p.text, p.dropped)],
        [tok_tex.tokenizer_map(p.text, p.all_tokens, c.vocab_size)],
        _tokenizers_link(ls),
        caption="Hover a chip for its id and bytes. · is a space, ↵ a newline.",
        question=q.token_count(p.text, p.tokens))


def ids(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    distinct = len(set(p.ids))
    repeats = (f" Only {distinct} of your {ls.n} ids are different: the same piece always "
               "gets the same id." if distinct < ls.n else
               " The same piece would always get the same id.")
    narrative = (
        "The pieces themselves are not kept either: each token is replaced by its number in "
        f"the vocabulary, its *id*, from 0 to {c.vocab_size - 1:,}. From here on the model "
        f"receives a list of {ls.n} whole numbers and nothing else.{repeats} An id is a name, "
        "not an amount: id 500 is not 'more' than id 5, so the model cannot compute with ids "
        "directly. The next step turns each id into a vector.")
    table = token_table(p.tokens, p.text)[["position", "id", "token", "bytes"]]
    formula = lt.ids_formula(list(p.ids), c.vocab_size, dropped=p.dropped)
    return StepView(narrative, [table], [formula],
                    _tokenizers_link(ls),
                    caption="Positions count from 0 in the table and the code; the seeds' "
                            f"$t_{{{p.dropped + 1}}}$ is position 0.")


def one_hot(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    E = analysis.to_numpy(ls.ckpt.model.embed.weight)  # (|V|, d)
    oh, _ = analysis.one_hot_embed(list(p.ids), E)  # (N, |V|)
    fig = ls.figure("one-hot", lambda: thin_ticks(title_room(
        ve.one_hot_figure(oh, ls.labels, list(p.ids)))))
    narrative = (
        "A matrix cannot multiply a name, so each id $t_i$ becomes a *one-hot* row "
        f"$e_{{t_i}}$: {c.vocab_size:,} zeros with a single 1 in column $t_i$. Stacked, your "
        f"{ls.n} rows form the matrix $\\mathrm{{OH}} \\in \\{{0,1\\}}^{{{ls.n} \\times "
        f"{c.vocab_size}}}$. The picture keeps only the columns your prompt uses; every other "
        "column is 0 in every row. All one-hot vectors are equally far apart, so at this stage "
        "no token is closer to another.")
    return StepView(narrative, [fig], [tok_tex.one_hot_formula(p.tokens, c.vocab_size,
                                                             dropped=p.dropped)],
                    ls.link("app_pages/embeddings.py", "Embeddings", "One-hot × E"),
                    question=q.one_hot_ones(ls.n, c.vocab_size, len(set(p.ids))))


def embedding(ls: Lesson) -> StepView:
    p, c = ls.prompt, ls.config
    E = analysis.to_numpy(ls.ckpt.model.embed.weight)  # (|V|, d)
    _, rows = analysis.one_hot_embed(list(p.ids), E)  # (N, d)
    fig = ls.figure("embedding", lambda: thin_ticks(title_room(
        ve.embedding_rows(rows, ls.labels))))
    last = ls.n - 1
    narrative = (
        f"Multiplying the one-hot row $e_{{t_i}}$ by the embedding matrix $E \\in "
        f"\\mathbb{{R}}^{{{c.vocab_size} \\times {c.d_model}}}$ (the seeds call it $A$) picks "
        f"out row $t_i$ of $E$: a vector of $d = {c.d_model}$ numbers that training has tuned. "
        "No arithmetic really happens, which is why frameworks implement it as a table lookup. "
        "Each row of the heatmap is one token's vector (red positive, blue negative); tokens "
        "that are used in similar ways end up with similar rows.")
    return StepView(narrative, [fig], [
        emb_tex.embedding_of_one_hot(c.vocab_size),
        emb_tex.embedding_lookup(ls.labels[last], p.ids[last], c.vocab_size, rows[last])],
        ls.link("app_pages/embeddings.py", "Embeddings", "One-hot × E"),
        caption=f"The formula follows the last token, position {last}.")


def positions(ls: Lesson) -> StepView:
    c = ls.config
    X = analysis.to_numpy(ls.cache[act_name("embed")][0])  # (N, d)
    PE = analysis.to_numpy(ls.cache[act_name("pos_embed")])  # (N, d)
    fig = ls.figure("positions", lambda: thin_ticks(vp.x_plus_pe_figure(X, PE, ls.labels)))
    last = ls.n - 1
    how = POSITIONS.get(c.positional, "adds position vectors").format(n=c.context_length,
                                                                      d=c.d_model)
    narrative = (
        "Attention, the next stage, treats its input as a set: without help it could not tell "
        "*where* a token stands. So the model adds a position vector to each row, "
        f"$x_i = E[t_i] + p_i$. This model {how}. The sum $X$ ({ls.n} × {c.d_model}) is what "
        "the first block receives: the same word at two positions enters as two different "
        "vectors.")
    e_norm = float(np.linalg.norm(X, axis=1).mean())
    p_norm = float(np.linalg.norm(PE, axis=1).mean())
    return StepView(narrative, [fig], [
        pos_tex.x_plus_pe_formula(ls.labels[last], last, X[last], PE[last], c.positional)],
        ls.link("app_pages/positional.py", "Positional encoding", "X + PE for the prompt"),
        caption="The three panels share one colour scale.",
        question=q.position_or_token(e_norm, p_norm, c.positional))
