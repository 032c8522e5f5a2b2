"""Home: the pipeline of a GPT, the model loaded now, and where each step is shown."""

import streamlit as st

from gptviz.app.shared.notes import card_facts
from gptviz.app.shared.picker import describe, induction_line, model_picker
from gptviz.app.shared.presenter import page_top
from gptviz.i18n import N_, _

page_top(
    _("gptviz — a GPT, step by step"),
    _("A GPT turns text into a probability distribution over the next token. Every step is a "
      "small, exact piece of mathematics, and each page of this app shows one of them with the "
      "live numbers of a real model. The formulas follow the notation of the course notes this "
      "app grew from, which the pages call **the seeds**: row vectors multiplied from the "
      "left, a prompt written $t_1 \\dots t_N$."),
    r"""
\begin{aligned}
&\text{@text}\;\xrightarrow{\;T\;}\;(t_1,\dots,t_N)\;\xrightarrow{\;\mathrm{OH}\;}\;
X\in\{0,1\}^{N\times|V|}\;\xrightarrow{\;A\;}\;XA + P\;\xrightarrow{\;\text{@blocks}\;}\;H\\
&\xrightarrow{\;\mathrm{LN}_f\;}\;\mathrm{LN}_f(H)\;\xrightarrow{\;W_U\;}\;y\;
\xrightarrow{\;\mathrm{softmax}(y_N/T)\;}\;P(t_{N+1})
\end{aligned}
""".replace("@text", _("text")).replace("@blocks", _("blocks")))  # words in the formula

picked = model_picker()
if picked is not None:
    card = picked.checkpoint.card
    with st.container(border=True):
        st.markdown(_("**Model loaded: `{name}`** — {about}").format(name=picked.name,
                                                                     about=describe(picked)))
        facts = card_facts(card)
        if facts:
            st.caption(" · ".join(f"{k}: {v}" for k, v in facts.items()))
        induction = induction_line(card)
        if induction:
            st.caption(induction)

TOKENIZERS = ("app_pages/tokenizers.py", N_("Tokenizers"))
EMBEDDINGS = ("app_pages/embeddings.py", N_("Embeddings"))
POSITIONAL = ("app_pages/positional.py", N_("Positional encoding"))
ATTENTION = ("app_pages/attention.py", N_("Attention"))
BLOCK = ("app_pages/block.py", N_("Transformer block"))
GENERATION = ("app_pages/generation.py", N_("Generation"))
STEPS = [  # (step, what it does, the pages that show it), shown translated
    (N_("Tokens"), N_("Cut the text into tokens and number them: characters, words, "
                      "byte-level BPE or GPT-2's encoding."), [TOKENIZERS]),
    (N_("Embeddings + positions"), N_("Each id selects a row of the embedding matrix; a "
                                      "positional encoding says where the token stands."),
     [EMBEDDINGS, POSITIONAL]),
    (N_("Transformer blocks"), N_("LayerNorm, causal self-attention and a feed-forward "
                                  "network, each added back to the residual stream."),
     [ATTENTION, BLOCK]),
    (N_("Logits"), N_("The last row of the final stream is mapped to one score per "
                      "vocabulary entry, for every step of generation."), [GENERATION]),
    (N_("Sampling"), N_("Temperature, top-k and top-p turn scores into a distribution; one "
                        "token is drawn and appended, and the loop starts again."),
     [GENERATION]),
]
for i, (name, what, pages) in enumerate(STEPS, start=1):
    with st.container(border=True):
        st.markdown(f"**{i}. {_(name)}** — {_(what)}")
        for page, title in pages:
            st.page_link(page, label=_("Open the {page} page").format(page=_(title)),
                         icon=":material/arrow_forward:")
st.page_link("app_pages/training.py", label=_("Train your own GPT"),
             icon=":material/model_training:")
st.caption(_("Runs offline: every model, tokenizer and corpus ships with the app."))
