"""Positional encoding: where each token stands, added to its embedding."""


from gptviz.app.positional import view as sections
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import picked_or_stop
from gptviz.app.shared.presenter import page_top
from gptviz.app.shared.widgets import view_tabs
from gptviz.i18n import _

page_top(
    _("Positional encoding"),
    _("Nothing in attention's arithmetic says where a token stands. Without a mask, "
      "self-attention is *permutation-equivariant*: shuffle the tokens and the outputs come "
      "out shuffled the same way, each one unchanged. A GPT's causal mask already carries some "
      "order (token $i$ sees only tokens $0,\\dots,i$; see *Order without positions*), but "
      "only indirectly. So a GPT adds to each token's embedding a vector $p_i$ that depends "
      "only on its position $i$: $x_i = E[t_i] + p_i$. The seeds use the sinusoidal table "
      "below; many models (GPT-2 among them) learn $P$ instead. A third way, rotary positions "
      "(RoPE), adds nothing and turns each head's queries and keys by angles that grow with "
      "the position; *Four encodings compared* trains the same model with each option."),
    notes=index_note)

picked = picked_or_stop()

view_tabs(sections.VIEWS, dict(picked=picked))
