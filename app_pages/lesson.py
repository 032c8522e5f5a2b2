"""Lesson: one prompt through the whole model, a step per screen, with questions."""

import streamlit as st

from gptviz.app.lesson import view
from gptviz.app.lesson.presenter import presenter_toggle
from gptviz.app.lesson.run import build_lesson
from gptviz.app.lesson.steps import build_step
from gptviz.app.shared.notes import index_note
from gptviz.app.shared.picker import picked_or_stop

top = st.container(horizontal=True, vertical_alignment="center")
top.title("Lesson: one prompt through a GPT", anchor=False)
with top:
    presenter = presenter_toggle()
if not presenter:
    st.markdown(
        "Fourteen steps follow your prompt from its text to the next token, each with the live "
        "numbers of a real model. At some steps you first predict, then reveal what the model "
        "computed. Move with the step buttons, Next and Previous, or the → and ← keys; R "
        "reveals.")

picked = picked_or_stop()
prompt, layer, head, temperature, step, seed = view.settings(picked)
if prompt is None:
    view.no_prompt(presenter)
    st.stop()

lesson = build_lesson(picked, prompt, layer, head, temperature, big=presenter, seed=seed)
view.draw_step(lesson, step, build_step(lesson, step))
if step == view.N_STEPS:
    view.score(lesson)
if not presenter:
    index_note()
    view.handout_button(lesson)
