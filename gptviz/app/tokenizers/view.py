"""The sections of the Tokenizers page; each takes plain values and draws."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from gptviz.app.embeddings import formulas as emb_tex
from gptviz.app.shared.chips import merges_table, show_bytes, token_chips_html, token_table, visible
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.widgets import csv_download, dataframe, on_demand, problem, text_block
from gptviz.app.tokenizers import formulas as latex
from gptviz.app.tokenizers.controls import KIND_LABELS, gpt2_as_our_bpe, loaded
from gptviz.app.tokenizers.languages import languages_view
from gptviz.i18n import N_, _, ngettext, number
from gptviz.tokenizers import ByteLevelBPE, Tokenizer, TokenizerError
from gptviz.tokenizers.byte_tokens import replay_steps
from gptviz.tokenizers.compare import compare
from gptviz.tokenizers.specials import UNK

CHIP_LIMIT = 1500  # chips drawn; the table and the counts cover every token
# compare()'s columns, shown as _(header); its CSV keeps them
COLUMNS = (N_("tokenizer"), N_("vocab size"), N_("tokens"), N_("chars per token"),
           N_("UNK rate (%)"), N_("round trip"), N_("error"))


def grouped(n: int) -> str:
    """A count with its thousands grouped, as the reader's language writes it."""
    return number(n, 0, grouping=True)


def chips(tokens, text: str) -> None:
    st.html(token_chips_html(tokens, text, max_tokens=CHIP_LIMIT))
    if len(tokens) > CHIP_LIMIT:
        st.caption(_("Showing the first {limit} of {n} tokens as chips; the table below has "
                     "them all.").format(limit=grouped(CHIP_LIMIT), n=grouped(len(tokens))))


def tokens_section(tok: Tokenizer, text: str, tokens, name: str) -> None:
    n_unk = sum(t.unknown for t in tokens)
    n_partial = sum(t.partial for t in tokens)
    cols = st.columns(4)
    cols[0].metric(_("Characters"), grouped(len(text)))
    cols[1].metric(_("Tokens"), grouped(len(tokens)))
    cols[2].metric(_("Characters per token"), number(len(text) / max(len(tokens), 1), 2))
    cols[3].metric(_("Vocabulary |V|"), grouped(tok.vocab_size))
    chips(tokens, text)
    notes = []
    if n_unk:
        notes.append(ngettext(
            "**{n} piece** of the text is not in the vocabulary and became `{unk}` (red): "
            "decoding cannot give it back.",
            "**{n} pieces** of the text are not in the vocabulary and became `{unk}` (red): "
            "decoding cannot give them back.", n_unk).format(n=grouped(n_unk), unk=UNK))
    if n_partial:
        notes.append(ngettext(
            "**{n} token** holds only part of a multi-byte UTF-8 character; it is shown as "
            "its bytes ‹…› with a dashed border.",
            "**{n} tokens** hold only part of a multi-byte UTF-8 character; they are shown as "
            "their bytes ‹…› with a dashed border.", n_partial).format(n=grouped(n_partial)))
    if "<|" in text and "|>" in text:
        notes.append(_("The text contains something that looks like a special token. It is "
                       "encoded as ordinary text unless *Recognise special tokens* is on."))
    for note in notes:
        st.info(note, icon=":material/info:")
    st.caption(_("Hover a chip for its id, bytes and the text it came from. "
                 "`·` is a space, `↵` a newline, `→` a tab."))
    index_note()
    st.markdown("#### " + _("The mathematics"))
    st.latex(latex.tokenizer_map(text, tokens, tok.vocab_size))
    st.latex(latex.one_hot_formula(tokens, tok.vocab_size))
    st.latex(emb_tex.embedding_of_one_hot(tok.vocab_size))
    with on_demand(_("Every token as a table"), key=f"token_table_{name}") as shown:
        if shown:  # closed, the page loads no data grid
            df = token_table(tokens, text)
            dataframe(df.assign(kind=df["kind"].map(lambda k: _(k) if k else k)),
                      hide_index=True, width="stretch")
            csv_download(df, f"tokens-{name}.csv")


def compare_section(text: str, toks: dict[str, Tokenizer]) -> None:
    st.markdown(_("The same text through every tokenizer. *Round trip* checks "
                  "$T^{{-1}}(T(x)) = x$: it fails exactly when something became `{unk}`.").format(
        unk=UNK))
    rows = compare(text, {_(KIND_LABELS.get(k, k)): t for k, t in loaded(toks).items()})
    df = pd.DataFrame(rows)
    if "UNK rate" in df:  # in percent, one decimal for every row (4.7% beside 16.7%)
        df = df.assign(**{"UNK rate": 100 * df["UNK rate"]}).rename(
            columns={"UNK rate": "UNK rate (%)"})
    if "round trip" in df:
        df["round trip"] = df["round trip"].map({True: "✓", False: "✗"})
    dataframe(df, hide_index=True, width="stretch", column_config={  # 50,257 as elsewhere
        "vocab size": st.column_config.NumberColumn(format="localized"),
        "tokens": st.column_config.NumberColumn(format="localized"),
        "UNK rate (%)": st.column_config.NumberColumn(format="%.1f"),
        "chars per token": st.column_config.NumberColumn(format="%.2f")})
    csv_download(df, "tokenizer-comparison.csv")
    if "gpt2" in toks:
        ours = gpt2_as_our_bpe(toks["gpt2"]).encode(text)
        same = ours == toks["gpt2"].encode(text)
        st.markdown((_("Our `ByteLevelBPE`, loaded with GPT-2's merge ranks, gives **the same "
                       "ids** ✓ as tiktoken on this text ({n} tokens).") if same else
                     _("Our `ByteLevelBPE`, loaded with GPT-2's merge ranks, gives **different "
                       "ids** ✗ from tiktoken on this text ({n} tokens).")).format(
            n=grouped(len(ours))))


ID_SEPARATORS = re.compile(r"[\s,;\[\]()]+")


def parse_ids(raw: str, example: list[int] | None = None) -> list[int]:
    """'[15496, 995]' -> [15496, 995]; raises TokenizerError naming a non-number, with
    ``example`` (ids of this tokenizer) as ids to write instead.

    >>> parse_ids("[15496, 995]")
    [15496, 995]
    >>> parse_ids("abc, 5", [12, 7])
    Traceback (most recent call last):
    gptviz.tokenizers.base.TokenizerError: “abc” is not a whole number; write ids such as 12, 7.
    """
    out = []
    for piece in filter(None, ID_SEPARATORS.split(raw)):
        try:
            out.append(int(piece))
        except ValueError:
            such = ", ".join(map(str, (example or [15496, 995])[:2]))
            raise TokenizerError(_("“{piece}” is not a whole number; write ids such as "
                                   "{such}.").format(piece=piece, such=such)) from None
    return out


def decode_section(tok: Tokenizer, example: list[int]) -> None:
    st.markdown(_("The partial inverse $T^{-1}$: from ids back to text."))
    default = ", ".join(map(str, example[:12]))
    raw = st.text_input(_("Token ids (commas or spaces)"), value=default, key="decode_ids")
    try:
        ids = tok.check_ids(parse_ids(raw, example))
        if not ids:
            st.info(_("Type some ids to decode."))
            return
        text_block(tok.decode(ids) or _("(empty)"))
        strings = [show_bytes(tok.id_to_bytes(i)) for i in ids]
        pieces = pd.DataFrame([[str(i) for i in ids], strings], index=[_("id"), _("token")])
        st.dataframe(pieces, width="stretch")
    except TokenizerError as exc:
        problem(_("Cannot decode: {error}").format(error=exc))


def bpe_section(tok: ByteLevelBPE | None, error: str | None, text: str) -> None:
    if tok is None:
        problem(error or _("The BPE tokenizer is not available."))
        return
    trace = tok.trace
    st.markdown(ngettext(
        "Starting from the 256 bytes, training learned **{n} merge** (pattern `{pattern}`). "
        "Each merge replaces the most frequent neighbouring pair by a new token; the table "
        "lists them in the order learned.",
        "Starting from the 256 bytes, training learned **{n} merges** (pattern `{pattern}`). "
        "Each merge replaces the most frequent neighbouring pair by a new token; the table "
        "lists them in the order learned.", len(trace)).format(n=grouped(len(trace)),
                                                               pattern=tok.pattern))
    df = merges_table(trace, tok.id_to_bytes)
    dataframe(df, hide_index=True, width="stretch", height=260)
    csv_download(df, "bpe-merges.csv")
    if not trace:
        return
    if st.session_state.get("replay_k", 0) > len(trace):  # a smaller vocabulary since
        st.session_state["replay_k"] = len(trace)  # (set, not dropped: the slider is bound)
    k = st.slider(_("Replay the text after k merges"), 0, len(trace), value=min(len(trace), 40),
                  key="replay_k", bind="query-params")
    max_rank = trace[k - 1].new_id + 1 if k else 256
    tokens = tok.tokens(text, max_rank=max_rank)
    after = ngettext("After **{n} merge**", "After **{n} merges**", k).format(n=grouped(k))
    if k:
        after += _(" — the last one: {pair} → {token}").format(
            pair=df["pair"].iloc[k - 1], token=df["new token"].iloc[k - 1])
    n_bytes = len(text.encode("utf-8"))
    st.markdown(after + ": " + ngettext("**{n} token** for {bytes} bytes.",
                                        "**{n} tokens** for {bytes} bytes.", len(tokens)).format(
        n=grouped(len(tokens)), bytes=grouped(n_bytes)))
    chips(tokens, text)
    chunks = list(dict.fromkeys(c for c in tok.split_text(text) if len(c.encode()) > 1))[:300]
    if chunks:
        chunk = st.selectbox(_("How one chunk is built, merge by merge"), chunks,
                             format_func=visible, key="bpe_chunk")
        (data, steps), = tok.encode_with_steps(chunk)
        states = replay_steps(data, steps, tok.id_to_bytes)
        lines = [" | ".join(show_bytes(p) for p in state) for state in states]
        labels = [_("bytes")] + [_("merge → id {id}").format(id=step[0]) for step in steps]
        dataframe(pd.DataFrame({N_("step"): labels, N_("parts"): lines}), hide_index=True,
                  width="stretch")


def tokens_view(tok: Tokenizer, text: str, tokens, kind: str, error: str | None) -> None:
    if error:
        st.error(_("Cannot tokenize this text: {error}").format(error=error),
                 icon=":material/error:")
    elif tokens:
        tokens_section(tok, text, tokens, kind)


def decode_view(tok: Tokenizer, tokens) -> None:
    decode_section(tok, [t.id for t in tokens or []])


def bpe_view(toks: dict[str, Tokenizer], errors: dict[str, str], text: str) -> None:
    bpe_section(toks.get("bpe"), errors.get("bpe"), text)


VIEWS = {N_("Tokens"): tokens_view, N_("Compare"): compare_section, N_("Decode"): decode_view,
         N_("BPE merges"): bpe_view, N_("Across languages"): languages_view}
