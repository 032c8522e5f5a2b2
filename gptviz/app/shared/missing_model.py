"""What a page says when its link names a model this session cannot use: which model was
asked for, why it is not here, how to get it back, and which model is shown instead.

A model trained on the Training page (``trained-…``) or uploaded lives in the session that
made it, so a link to it opened in another tab, after a reload that lost the session or
after the server restarted finds nothing; a name that was never a model (``?model=gpt-5``)
finds nothing either. Pure text, no Streamlit: the picker shows it.
"""

from __future__ import annotations

from collections.abc import Sequence

from gptviz.i18n import _

TRAINED_PREFIX = "trained-"  # the Training page names its models "trained-<corpus>-<tokenizer>"
SESSION_TAG = " (this session)"  # the picker's label of a session's model, in its links too


def asked_name(raw: str) -> str:
    """The model a link's ``?model=`` names (a session's model is linked by its label).

    >>> asked_name("trained-math-bpe (this session)"), asked_name("gpt-5")
    ('trained-math-bpe', 'gpt-5')
    """
    return raw.removesuffix(SESSION_TAG)


def missing_model_note(wanted: str, shown: str, available: Sequence[str],
                       problem: str = "") -> str:
    """The notice for a link's ``?model=wanted`` that is not among ``available``.

    ``problem`` is why a model the server names cannot be loaded, when that is the reason.

    >>> note = missing_model_note("trained-mathematics-bpe", "mathematics-bpe", ["a"])
    >>> "another browser session" in note and "upload" in note and "train it again" in note
    True
    >>> missing_model_note("gpt-5", "a", ["a", "b"]).split(". ")[0]
    'The link asks for the model “gpt-5”, and there is no model of that name here'
    """
    listed = ", ".join(available)
    instead = " " + _("Showing **{shown}** instead.").format(shown=shown) if shown else ""
    if problem:
        return _("The link asks for the model “{wanted}”, which this server names but cannot "
                 "load: {problem}").format(wanted=wanted, problem=problem) + instead
    if wanted.startswith(TRAINED_PREFIX):
        return _("The link asks for the model “{wanted}”, a model trained on the Training page "
                 "in another browser session (or before the server restarted). A model you "
                 "train or upload lives only in the session that made it, so this one is not "
                 "here. To get it back, turn on *Upload a checkpoint* in the sidebar and upload "
                 "its checkpoint zip (the one the Training page's *Download … as a checkpoint "
                 "zip* gave you), or train it again on the Training page.").format(
            wanted=wanted) + instead
    return _("The link asks for the model “{wanted}”, and there is no model of that name here. "
             "This server offers {listed}, and the models trained or uploaded in this browser "
             "session. If “{wanted}” is a model you trained or uploaded in another session, "
             "turn on *Upload a checkpoint* in the sidebar and upload its checkpoint zip (the "
             "one the Training page's *Download … as a checkpoint zip* gave you).").format(
        wanted=wanted, listed=listed) + instead
