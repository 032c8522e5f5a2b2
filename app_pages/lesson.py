"""Lesson: one prompt through the whole model, a step per screen, with questions."""

import streamlit as st

from gptviz.app.classroom.teacher import drive as drive_class
from gptviz.app.lesson import view
from gptviz.app.lesson.presenter import HIDE_CONTROLS_CSS
from gptviz.app.lesson.run import build_lesson
from gptviz.app.lesson.steps import build_step
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import picked_or_stop
from gptviz.app.shared.presenter import page_top
from gptviz.i18n import _

top = page_top(
    _("Lesson: one prompt through a GPT"),
    _("Fourteen steps follow your prompt from its text to the next token, each with the live "
      "numbers of a real model. At some steps you first predict, then reveal what the model "
      "computed. Move with the step buttons, Next and Previous, or the → and ← keys; R "
      "reveals; ? lists the keys."), notes=index_note, short=_("Lesson"))
presenter = top.presenter
if presenter:
    st.html(HIDE_CONTROLS_CSS)

picked = picked_or_stop()
prompt, layer, head, temperature, step, seed = view.settings(picked)
if prompt is None:
    view.no_prompt(presenter)
    st.stop()

lesson = build_lesson(picked, prompt, layer, head, temperature, big=presenter, seed=seed)
if presenter:
    with top.row.popover(_("Steps"), icon=":material/list:"):
        view.step_overview(step)
    with top.row.popover(_("Handout"), icon=":material/download:"):
        view.handout_button(lesson)
shown = drive_class(top, lesson, step, build_step(lesson, step))  # a class, if one runs
view.draw_step(lesson, step, shown, compact=presenter)
if presenter:
    with top.row.popover(_("Score"), icon=":material/scoreboard:"):
        view.score(lesson)
elif step == view.N_STEPS:
    view.score(lesson)
if not presenter:
    view.handout_button(lesson)
