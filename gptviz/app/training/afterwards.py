"""The Training page's last section: the chosen model as a checkpoint zip, and its text
beside its untrained self's on the same prompt."""

from __future__ import annotations

import math
import re

import streamlit as st

from gptviz.app.shared.cache import per_model, untrained_twin
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import grouped, num, words
from gptviz.app.shared.widgets import cap_text, text_block
from gptviz.checkpoints.folder import Checkpoint, checkpoint_to_zip
from gptviz.i18n import _
from gptviz.train.before_after import Continuation, continuation


def bytes_note(texts: list[str], container=st) -> None:
    """Say what ‹e2 80› means when a sample has one."""
    if any("‹" in t for t in texts):
        container.caption(_("‹e2 80›: bytes the model wrote that make no whole UTF-8 "
                            "character (a byte-level model can stop in the middle of one, or "
                            "write a byte that fits nowhere), shown in hex as the token chips "
                            "show them rather than as “�”. \\x1b is a control character."))


@per_model
def _continue(ckpt: Checkpoint, untrained: bool, prompt: str) -> Continuation:
    """80 sampled tokens after ``prompt`` from the model or, ``untrained``, from its
    untrained twin, cached per model and prompt: for every session when the model is
    bundled (a class opening this page pays once), for this session alone when it is its
    own. The twin is built only when its text is not cached, and dropped once written."""
    model = untrained_twin(ckpt) if untrained else ckpt.model
    return continuation(model, ckpt.tokenizer, prompt, 80)


def _file_name(name: str) -> str:
    """The download's file name: only letters, digits, ``.``, ``_`` and ``-``.

    >>> _file_name("trained-math (2)")
    'trained-math-2.zip'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") + ".zip"


def afterwards(picked: Picked) -> None:
    """Download the picked model, and run it and its untrained self on the same prompt."""
    ckpt = picked.checkpoint
    st.download_button(
        _("Download {name} as a checkpoint zip").format(name=picked.name),
        icon=":material/download:",
        data=lambda: checkpoint_to_zip(ckpt.model, ckpt.tokenizer, ckpt.card, ckpt.snapshots),
        file_name=_file_name(picked.name), mime="application/zip", key="tr_download",
        help=_("model.safetensors + config.json + tokenizer.json + card.json; upload it in the "
               "sidebar of any page (here or on another server)."))
    prompt = cap_text(st.text_area(_("Prompt for both"), value=ckpt.card.get("prompt") or "The ",
                                   key=f"tr_compare-{picked.name}", height=68))
    cols = st.columns(2)
    steps = ckpt.card.get("steps", "?")
    shown = []
    for col, untrained, title in ((cols[0], True, _("Before training (step 0, same seed)")),
                                  (cols[1], False, _("After training ({n} steps)").format(
                                      n=steps))):
        try:
            out = _continue(picked, untrained, prompt)
        except ValueError as exc:
            col.error(_("Cannot continue this prompt: {why}").format(why=exc),
                      icon=":material/error:")
            continue
        col.markdown(f"**{title}**")
        if math.isfinite(out.prompt_loss):
            col.latex("L(" + words(_("prompt")) + rf") = {num(out.prompt_loss)},\quad "
                      rf"e^{{L}} = {grouped(math.exp(out.prompt_loss), 1)}")
        text_block(prompt + out.text, col)
        shown.append(out.text)
    bytes_note(shown)
