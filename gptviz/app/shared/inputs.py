"""The inputs every model page shares: a prompt, a layer and a head, all bound to the URL.

``?prompt=…&layer=1&head=2`` opens a page on that view, so a teacher can share
it. Streamlit drops a bound value that is not a valid option (``layer=7`` on a
2-layer model, ``head=x``); these helpers notice and say so instead of
silently showing something else.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from gptviz.app.shared.chips import prompt_chips_html, token_label
from gptviz.app.shared.presenter import Top
from gptviz.app.shared.widgets import cap_text, linked_text_area, problem, set_linked_text
from gptviz.app.speedups.choice import choose
from gptviz.checkpoints.folder import Checkpoint
from gptviz.i18n import _, ngettext, number
from gptviz.model import GPTConfig
from gptviz.tokenizers import TokenizerError
from gptviz.tokenizers.base import TokenInfo
from gptviz.tokenizers.specials import UNK

# The most tokens of a prompt the pages read, for a model whose context is longer (GPT-2's is
# 1,024). Every page runs the model on the whole prompt for every visitor and keeps what it
# captured, and attention maps grow with T²: GPT-2 small's 144 heads hold 9.4 MB of pattern
# at T = 128, 38 MB at 256, 600 MB at 1,024. Measured on its Attention page with a long
# prompt: 0.8 s warm and +264 MB at 128; 4.9 s (one pass no longer fits the 64 MB result
# cache) and +640 MB at 256; 84 s and +8.3 GB uncapped. 128 is also the largest bundled
# context, so the bundled models never meet the cap and every figure was drawn at this size.
PAGE_TOKENS = 128

# A prompt each kind of bundled corpus makes sense of (the card names the corpus).
EXAMPLES = {
    "induction": "qzmfkwpxbt|qzmfkwpxbt\njdlrvnsyoa|jdlrv",
    "": "The Steenrod problem asks which homology classes of a space are images of "
        "fundamental classes of closed manifolds.",
}


@dataclass(frozen=True)
class Prompt:
    """The prompt as the pages read it: its last ``page_tokens(config)`` tokens."""

    text: str
    all_tokens: list[TokenInfo]  # every token of the text
    dropped: int  # tokens cut from the front: over the context window, or PAGE_TOKENS

    @property
    def tokens(self) -> list[TokenInfo]:
        return self.all_tokens[self.dropped:]

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(t.id for t in self.tokens)

    @property
    def labels(self) -> list[str]:
        """What axes show for each token, e.g. ['The', '·Steen', 'rod']."""
        return [token_label(t) for t in self.tokens]


def grouped(n: int) -> str:
    """A count with its thousands grouped as the reader's language groups them."""
    return number(n, 0, grouping=True)


def page_tokens(config: GPTConfig) -> int:
    """How many tokens of a prompt the pages read: the context, at most PAGE_TOKENS.

    >>> page_tokens(GPTConfig(vocab_size=9, context_length=1024, d_model=8, n_layer=1,
    ...                       n_head=1)), page_tokens(model.config)
    (128, 8)
    """
    return min(config.context_length, PAGE_TOKENS)


def example_prompt(ckpt: Checkpoint) -> str:
    """A prompt in the style of the model's training corpus, e.g. 'abc|abc' for induction."""
    corpus = Path(str(ckpt.card.get("corpus", ""))).stem.lower()
    return next((text for key, text in EXAMPLES.items() if key and key in corpus), EXAMPLES[""])


def prompt_input(ckpt: Checkpoint) -> str:
    """The prompt box (``?prompt=`` in the URL), starting on the model's example prompt."""
    example = example_prompt(ckpt)
    text = linked_text_area(_("Prompt"), "prompt", example, height=80,
                            help=_("What the model reads; it is cut to the model's context "
                                   "window. Ctrl+Enter applies."))
    if text != example:
        st.button(_("Use this model's example prompt"), icon=":material/restart_alt:",
                  on_click=set_linked_text, args=("prompt", example), type="tertiary")
    return text


def encode(ckpt: Checkpoint, text: str, chips_in: Any = None) -> Prompt | None:
    """Tokens of ``text`` cropped to the context; draws them (in ``chips_in``, default in
    place), and every note about them.

    Returns None (after saying why) for an empty prompt or one that cannot be encoded.
    """
    text = cap_text(text)
    if not text:
        st.info(_("The prompt is empty: type some text above (or use the example prompt) to "
                  "see the model at work."), icon=":material/edit_note:")
        return None
    try:
        tokens = ckpt.tokenizer.tokens(text)
    except TokenizerError as exc:
        problem(_("This model's tokenizer cannot read the prompt: {error}").format(error=exc))
        return None
    if not tokens:  # e.g. blanks, for a tokenizer that drops them
        st.info(_("The prompt gives no tokens: type some text above (or use the example "
                  "prompt) to see the model at work."), icon=":material/edit_note:")
        return None
    if not text.strip():  # spaces and line breaks are tokens too, as on the Generation page
        st.info(_("The prompt is only spaces and line breaks. They are tokens like any other "
                  "(shown as · and ↵), so the model reads them; type some text to see more."),
                icon=":material/space_bar:")
    prompt = Prompt(text, tokens, max(0, len(tokens) - page_tokens(ckpt.config)))
    (chips_in or st).html(prompt_chips_html(tokens, text, prompt.dropped))
    _notes(prompt, ckpt)
    return prompt


def prompt_or_stop(ckpt: Checkpoint, top: Top | None = None) -> Prompt:
    """The prompt box, encoded; stops the page (after its message) when it is unusable.
    In presenter mode the box and its tokens fold into a "Prompt" popover of the title row
    (``top``); a message about the prompt still shows on the page."""
    if top is not None and top.presenter:
        with top.row.popover(_("Prompt"), icon=":material/edit:"):
            text = prompt_input(ckpt)
            chips = st.container()
        prompt = encode(ckpt, text, chips_in=chips)
    else:
        prompt = encode(ckpt, prompt_input(ckpt))
    if prompt is None:
        st.stop()
    return prompt


def _notes(prompt: Prompt, ckpt: Checkpoint) -> None:
    n_ctx, reads = ckpt.config.context_length, page_tokens(ckpt.config)
    if prompt.dropped and reads < n_ctx:
        st.warning(_("The prompt has {n} tokens; the pages read its last {reads}: the first "
                     "{cut} are cut (faded above). This model could read {n_ctx} (its context "
                     "window), but every page runs the model on the whole prompt for every "
                     "visitor and keeps its attention maps, which grow with the square of the "
                     "length: {n_ctx} tokens would take {times} times the memory of {reads}. "
                     "The Generation page reads up to the full window.").format(
            n=grouped(len(prompt.all_tokens)), reads=reads, cut=grouped(prompt.dropped),
            n_ctx=grouped(n_ctx), times=number((n_ctx / reads) ** 2, 0)),
            icon=":material/content_cut:")
    elif prompt.dropped:
        how = (_("The prompt has {n} tokens but the model reads at most N = {n_ctx} (its "
                 "context window): the first {cut} are cut; generation slides its window the "
                 "same way, keeping the rotated keys it already cached (faded above).")
               if ckpt.config.rope else
               _("The prompt has {n} tokens but the model reads at most N = {n_ctx} (its "
                 "context window): the first {cut} are cut, as generation would cut them "
                 "(faded above)."))
        st.warning(how.format(n=grouped(len(prompt.all_tokens)), n_ctx=n_ctx,
                              cut=grouped(prompt.dropped)), icon=":material/content_cut:")
    unknown = sum(t.unknown for t in prompt.tokens)
    if unknown:
        st.warning(ngettext(
            "{n} piece of the prompt is not in this model's vocabulary and became {unk} (red "
            "chips); the model learned little about that id. Try the example prompt.",
            "{n} pieces of the prompt are not in this model's vocabulary and became {unk} (red "
            "chips); the model learned little about that id. Try the example prompt.",
            unknown).format(n=grouped(unknown), unk=UNK), icon=":material/help:")
    if "<|" in prompt.text and "|>" in prompt.text:
        specials = ", ".join(sorted(ckpt.tokenizer.special_tokens)) or _("none")
        st.info(_("The prompt contains text that looks like a special token (<|…|>). Typed "
                  "text is always read as ordinary characters here, so it is several tokens, "
                  "not one special id (this model's specials: {specials}).").format(
            specials=specials), icon=":material/info:")


PILLS_UP_TO = 8  # choices that fit half the page as pills; more get a slider (GPT-2: 12)


def _bound_choice(label: str, key: str, n: int, help: str, refused: str) -> int:
    """Pills 0 .. n-1 (a slider past ``PILLS_UP_TO``, so every label stays readable) bound
    to ``?key=``; an invalid URL value gets the message ``refused`` (``{raw}``, ``{last}``,
    ``{value}``), not a crash."""
    raw = st.query_params.get(key)
    common = dict(format_func=str, key=key, bind="query-params", persist_state="session",
                  help=help)
    if n <= PILLS_UP_TO:
        value = st.segmented_control(label, list(range(n)), default=0, required=True, **common)
    else:
        value = st.select_slider(_("{label} (0 to {last})").format(label=label, last=n - 1),
                                 list(range(n)), value=0, **common)
    value = 0 if value is None else int(value)
    # The bound widget writes its own value into the URL: after a switch to a model with
    # fewer layers that value is still there, and no link asked for it (say nothing then).
    own, st.session_state[f"{key}@url"] = st.session_state.get(f"{key}@url"), str(value)
    if raw is not None and raw != str(value) and raw != own:
        st.warning(refused.format(raw=raw, last=n - 1, value=value),
                   icon=":material/link_off:")
    return value


def layer_input(n_layer: int) -> int:
    """The layer pills (``?layer=``)."""
    return _bound_choice(_("Layer"), "layer", n_layer,
                         _("Blocks are numbered from 0 (the one that reads the embeddings)."),
                         _("The link asks for layer “{raw}”, but this model's layers are "
                           "numbered 0 to {last}; showing layer {value} instead."))


def head_input(n_head: int) -> int:
    """The head pills (``?head=``)."""
    return _bound_choice(_("Head"), "head", n_head, _("Each head has its own W_Q, W_K, W_V."),
                         _("The link asks for head “{raw}”, but this model's heads are "
                           "numbered 0 to {last}; showing head {value} instead."))


def layer_and_head(n_layer: int, n_head: int) -> tuple[int, int]:
    """Layer and head side by side, one under the other when the row is too narrow for both
    (columns would clip a control's last options instead)."""
    with st.container(horizontal=True, gap="large"):
        return layer_input(n_layer), head_input(n_head)


def fresh_choice(key: str, options: Sequence[Any], default: Any, made_on: Hashable) -> None:
    """Before the select box ``key`` is drawn: its choice becomes ``default``, set from code,
    when what it was chosen among (``made_on``: a prompt, a step) changed or it is no longer
    one of ``options``. Dropped instead, the box kept the old choice's label on screen, and
    in a rerun from the box's own widget state read back that label, not the option.

    A choice outlives a run that did not draw its box (another view of the page was open,
    and Streamlit forgets an undrawn widget's state): it is kept beside it and brought back
    while ``made_on`` is the same."""
    stamp, kept = f"{key}@for", f"{key}@kept"
    state = st.session_state
    if state.get(stamp) != made_on:
        state[key] = default
    elif state.get(key) not in options:  # forgotten while the box was away, or out of range
        state[key] = state[kept] if state.get(kept) in options else default
    state[stamp], state[kept] = made_on, state[key]


def position_input(prompt: Prompt, label: str | None = None, key: str = "position",
                   default_last: bool = True, container=st, upto: int | None = None) -> int:
    """A position of the (cropped) prompt, shown as 'i: token' in a ``choice`` box; not in
    the URL. Positions run to ``upto`` (default: the last token).

    A new prompt brings back the default (its last token, or its first): the choice made on
    another prompt named another token. The box always shows the token the page uses.
    """
    labels = prompt.labels
    n = len(labels) if upto is None else upto + 1
    return choose(label or _("Token"), [f"{i}: {labels[i]}" for i in range(n)],
                  n - 1 if default_last else 0, key, made_on=prompt.ids, container=container)
