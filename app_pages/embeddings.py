"""Embeddings: each token id selects one row of E (the seeds' A ∘ OH)."""


from gptviz.app.embeddings import view as sections
from gptviz.app.shared.inputs import position_input, prompt_or_stop
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import picked_or_stop
from gptviz.app.shared.presenter import page_top
from gptviz.app.shared.widgets import view_tabs
from gptviz.i18n import _

top = page_top(
    _("Embeddings"),
    _("After the tokenizer, a text is a sequence of ids $t_1,\\dots,t_N$. The embedding turns "
    "each id into a vector: write the id as a one-hot row $e_{t_i}$ and multiply by the "
    "embedding matrix $E\\in\\mathbb{R}^{|V|\\times d}$ (the seeds' $A\\circ\\mathrm{OH}$). "
    "The product is simply row $t_i$ of $E$, a point in $d$-dimensional space that training "
    "has placed."), notes=index_note)

picked = picked_or_stop()
prompt = prompt_or_stop(picked.checkpoint, top)
pos = position_input(prompt, _("Token to follow in the formulas"))

view_tabs(sections.VIEWS, dict(picked=picked, prompt=prompt, pos=pos))
