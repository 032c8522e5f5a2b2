"""Learning: one gradient step under the microscope, and the gradient checked on screen."""


from gptviz.app.learning import controls as ui
from gptviz.app.learning import view as views
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import picked_or_stop
from gptviz.app.shared.presenter import page_top
from gptviz.app.shared.widgets import view_tabs
from gptviz.i18n import _

top = page_top(
    _("Learning"),
    _("Training repeats one move millions of times: read a window of text, measure how badly "
    "the model predicted each next token (the loss $L$), work out how every parameter should "
    "move to lower it (the gradient $g = \\partial L/\\partial\\theta$, by back-propagation), "
    "and move a little: $\\theta \\leftarrow \\theta - \\eta\\, g$. Here that move is made "
    "once, for one prediction, with every number on screen. It is made on a private copy: "
    "the model itself never changes."), notes=index_note)

picked = picked_or_stop()
with top.folded(_("Text and target"), icon=":material/text_snippet:"):
    source = ui.source_or_stop(picked)
    window = ui.window_or_stop(picked, source)
    position = ui.position_or_stop(picked, window, views.typical_position(picked, window))

view_tabs(views.VIEWS, dict(picked=picked, window=window, position=position))
