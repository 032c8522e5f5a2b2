"""Training: train a small GPT in the browser, watch it learn, then explore it everywhere."""

import streamlit as st

from gptviz.app.shared.picker import describe, model_picker
from gptviz.app.shared.presenter import page_top
from gptviz.app.speedups import fold
from gptviz.app.training import view as sections
from gptviz.app.training.afterwards import afterwards
from gptviz.app.training.controls import session_trainer, setup
from gptviz.i18n import N_, _

# The formats a model this server names can have (checkpoints/external.py's cards), as the
# sentence below names them
FORMATS = (N_("Hugging Face GPT-2 folder"), N_("nanoGPT checkpoint"))

page_top(
    _("Training"),
    _("Training a GPT means lowering one number, the **cross-entropy** $L$ of its next-token "
      "predictions, by gradient descent (AdamW) on windows of a corpus. Choose a corpus, a "
      "tokenizer and a model, press Start, and watch $L$ fall from $\\ln|V|$, the loss of a "
      "uniform guess. The result joins the model list of every page, for this session only."))

holder = session_trainer()
busy = sections.register_finished(holder)  # before the picker, so a new model is selectable
picked = model_picker()
job = holder.job
run_box = st.container()  # Start and the live run: first on the page, filled in below

st.header(_("1. Setup"), divider="gray")
s = setup(disabled=busy)

st.header(_("2. The data and the loss"), divider="gray")
if s.tokenizer is None:
    st.info(_("Fix the setup above to see how the corpus becomes training examples."),
            icon=":material/info:")
else:
    evals = job.snapshot().evals if job is not None else []
    same_vocab = job is not None and job.run.model.vocab_size == s.tokenizer.vocab_size
    last = evals[-1] if evals and same_vocab else None
    sections.data_lesson(s, last.val_loss if last else None, last.step if last else None)

st.header(_("3. Train"), divider="gray")
prompt = sections.plan(s, holder)
with run_box:
    sections.start(s, holder, prompt)
    sections.live_panel(holder, busy)

st.header(_("4. Afterwards"), divider="gray")
if picked is None:
    st.info(_("No model to show yet."), icon=":material/info:")
elif kind := picked.checkpoint.card.get("format"):  # a Hugging Face or nanoGPT model
    kind = _(kind) if kind in FORMATS else kind
    st.info(_("**{name}** is a {kind} that this server names. This page trains new models from "
              "scratch: it does not fine-tune {name}, and it does not offer it for download (it "
              "is on the server's disk already). Every Explore page shows it.").format(
                  name=picked.name, kind=kind), icon=":material/info:")
else:
    st.markdown(_("The model chosen in the sidebar, **{name}**: {about}. Turn on \"Upload a "
                  "checkpoint\" in the sidebar to bring back a model trained earlier (only "
                  "safetensors and JSON are read; pickles are refused).").format(
                      name=picked.name, about=describe(picked)))

    def then() -> None:
        afterwards(picked)
        st.page_link("app_pages/attention.py", label=_("See its attention heads"),
                     icon=":material/grid_on:")
    fold.below("training", _("Next: {name} as a checkpoint zip, and its text before and after "
                             "training (drawn as you scroll here).").format(name=picked.name),
               then)
