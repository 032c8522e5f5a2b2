"""Generation: y_N → P_T = softmax(y_N / T) → one token drawn and appended, step by step."""

import streamlit as st

from gptviz.app.generation import controls as ui
from gptviz.app.generation import link
from gptviz.app.generation import view as views
from gptviz.app.generation.controls import PromptTokens
from gptviz.app.generation.sampling_widgets import sampling_controls
from gptviz.app.shared.inputs import prompt_input
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import Picked, describe, model_picker
from gptviz.app.shared.presenter import page_top
from gptviz.app.shared.widgets import view_tabs
from gptviz.generation.sampling import Sampling
from gptviz.i18n import _, number

top = page_top(
    _("Generation"),
    _("A GPT reads the last $N$ tokens $x_1,\\dots,x_N$ and returns logits "
      "$y_N\\in\\mathbb{R}^{|V|}$ for the next one. Dividing by a temperature $T$ and taking "
      "the softmax gives the distribution $P_T(i)=\\sigma(y_N/T)_i$; one token is chosen from "
      "it (the most probable one when $T=0$), appended, and the loop starts again."),
    notes=index_note)

picked = model_picker()
if picked is None:
    st.stop()
ckpt = picked.checkpoint
if top.presenter:
    st.caption(_("Model **{name}**").format(name=picked.name), help=describe(picked))
else:
    st.caption(_("Model **{name}** — {about}").format(name=picked.name, about=describe(picked)))

with top.folded(_("Prompt"), icon=":material/edit:"):
    text = prompt_input(ckpt)
prompt = ui.prompt_tokens(ckpt, text)
if prompt is None:
    st.stop()
sampling = sampling_controls(ckpt.config.vocab_size)


def generating(picked: Picked, prompt: PromptTokens, sampling: Sampling,
               streaming: bool = True) -> None:
    """The buttons, the text and the views of one step: everything a click changes."""
    ckpt = picked.checkpoint
    hist = ui.history(picked, prompt, sampling)
    if hist.pending and not streaming:
        st.rerun()  # a Generate n was just planned: it runs in a whole-page run (see below)
    ui.buttons(hist, ckpt.model, sampling)

    text_box = st.empty()
    if hist.pending:
        ui.stream(hist, ckpt.model, sampling, text_box, ckpt.tokenizer)
    text_box.html(ui.text_html(hist, prompt, ckpt.tokenizer, ckpt.config.context_length))
    if len(hist.ids) > ckpt.config.context_length:
        st.caption(_("✂ The text has {n} tokens; the model reads only the last N = {n_ctx} "
                     "(its context window). The struck-through tokens before ✂ are cut, exactly "
                     "as generation crops its input.").format(
                         n=number(len(hist.ids), 0, grouping=True),
                         n_ctx=ckpt.config.context_length))

    view = views.viewed(hist, picked, sampling)
    view_tabs(views.VIEWS, dict(v=view, hist=hist, picked=picked, sampling=sampling))
    link.sync(hist, picked)  # the tree of branches and the current text, in the page's link


# A click reruns only the fragment: the text above, the prompt and the sampling controls stay
# drawn. A Generate n streams in a whole-page run instead, because a click inside a fragment
# waits for the fragment's run to end (Streamlit does not interrupt it), and Stop must
# interrupt the stream at once. Its container takes the fragment's place on the page, so
# the views below stay drawn while the text streams, as do the page's scroll position.
if ui.history(picked, prompt, sampling).pending:
    with st.container():
        generating(picked, prompt, sampling)
else:
    st.fragment(generating)(picked, prompt, sampling, streaming=False)
