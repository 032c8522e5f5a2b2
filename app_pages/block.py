"""Transformer block: LayerNorm → attention → residual → LayerNorm → FFN → residual."""


from gptviz.app.block import view as sections
from gptviz.app.shared.inputs import layer_and_head, prompt_or_stop
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import picked_or_stop
from gptviz.app.shared.presenter import page_top
from gptviz.app.shared.widgets import view_tabs
from gptviz.i18n import _

top = page_top(
    _("Transformer block"),
    _("A GPT is a stack of identical blocks. Each reads the residual stream $X$ (one row of "
    "$d$ numbers per token), normalises it, lets the tokens exchange information by attention, "
    "adds the result back, then transforms every token on its own with a small feed-forward "
    "network and adds that back too. Shapes never change: $N\\times d$ in, $N\\times d$ out."),
    notes=index_note)

picked = picked_or_stop()
config = picked.checkpoint.config

prompt = prompt_or_stop(picked.checkpoint, top)
layer, head = layer_and_head(config.n_layer, config.n_head)
cache = sections.page_activations(picked, prompt)

view_tabs(sections.VIEWS, dict(picked=picked, prompt=prompt, cache=cache, layer=layer,
                                head=head))
