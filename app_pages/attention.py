"""Attention: softmax(QKᵀ/√d_k + M) V, head by head, with the live numbers."""


from gptviz.app.attention import view as sections
from gptviz.app.shared.inputs import layer_and_head, prompt_or_stop
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import picked_or_stop
from gptviz.app.shared.presenter import page_top
from gptviz.app.shared.widgets import view_tabs
from gptviz.i18n import _

top = page_top(
    _("Attention"),
    _("Attention lets each token gather information from the tokens before it. A head turns "
    "every token into a query $q_i$, a key $k_j$ and a value $v_j$; query $i$ scores key $j$ "
    "by $q_i\\cdot k_j/\\sqrt{d_k}$, the mask $M$ forbids the future, a softmax turns each row "
    "of scores into weights, and token $i$ receives $z_i=\\sum_j w_{ij}v_j$."),
    r"W_{\text{attn}} = \mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big),\qquad "
         r"M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases},\qquad "
         r"Z = W_{\text{attn}}\, V", notes=index_note)

picked = picked_or_stop()
config = picked.checkpoint.config
prompt = prompt_or_stop(picked.checkpoint, top)
layer, head = layer_and_head(config.n_layer, config.n_head)
cache = sections.page_activations(picked, prompt)

view_tabs(sections.VIEWS, dict(picked=picked, prompt=prompt, cache=cache, layer=layer,
                                head=head))
