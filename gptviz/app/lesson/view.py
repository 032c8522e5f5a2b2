"""The Lesson page's sections: the teacher's settings, one step on screen, its question,
the score and the handout button. Each takes plain values and draws."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from gptviz.app.lesson.handout import lesson_handout
from gptviz.app.lesson.presenter import CONTROLS, REVEAL, nav_buttons
from gptviz.app.lesson.questions import Question, md, short
from gptviz.app.lesson.run import Lesson, StepView
from gptviz.app.lesson.steps import STEPS, TITLES, title
from gptviz.app.shared.inputs import Prompt, encode, head_input, layer_input, prompt_input
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.presenter import link_params
from gptviz.app.shared.widgets import csv_download, data_grid, plain_table, plot
from gptviz.i18n import N_, _, current

STEP = "step"  # the step's key and URL parameter (?step=7), from 1
SEED = "seed"  # the draws' seed: its key and URL parameter, as on the Generation page
ANSWERS = "lesson_answers"  # st.session_state: {lesson: {step: (question, choice or None)}}
N_STEPS = len(STEPS)
FIGURE_PX = 255  # a figure beside another: its least width (px); two that do not fit stack


def _bad_link(key: str, raw: str | None, ok: Callable[[str], bool], value: float) -> None:
    """Say so when the URL asked for a value (``raw``) that the widget cannot take."""
    if raw is not None and not ok(raw):
        st.warning(_("The link asks for {key} “{raw}”, which this lesson cannot show; "
                     "showing {key} {value} instead.").format(key=key, raw=raw,
                                                              value=short(value)),
                   icon=":material/link_off:")


def _temperature_ok(raw: str) -> bool:
    """Whether the slider can take ``?temperature=raw``.

    >>> _temperature_ok("0.5"), _temperature_ok("7"), _temperature_ok("hot")
    (True, False, False)
    """
    try:
        return 0.0 <= float(raw) <= 3.0
    except ValueError:
        return False


def settings(picked: Picked) -> tuple[Prompt | None, int, int, float, int, int]:
    """Prompt, layer, head, temperature, step (``?step=7``, from 1) and the draws' seed, in
    a box that presenter mode hides (its keys move through the steps)."""
    ckpt = picked.checkpoint
    raw_t, raw_step = st.query_params.get("temperature"), st.query_params.get(STEP)
    with st.container(key=CONTROLS, border=True):
        text = prompt_input(ckpt)
        with st.expander(_("The prompt's tokens, and notes on them"), icon=":material/token:"):
            prompt = encode(ckpt, text)  # folded: step 1 asks about them before showing them
        with st.container(horizontal=True, gap="large"):  # wraps when the row is narrow
            layer, head = layer_input(ckpt.config.n_layer), head_input(ckpt.config.n_head)
            t = st.slider(_("Temperature T"), 0.0, 3.0, 1.0, 0.05, key="temperature",
                          bind="query-params", width=280,
                          help=_("P_T = softmax(y_N / T); T = 0 is greedy."))
            seed = st.number_input(_("Seed of the draws"), 0, 2**31 - 1, 0, key=SEED,
                                   bind="query-params", width=150,
                                   help=_("The random generator of steps 13 and 14 starts "
                                          "from it: the same seed draws the same tokens. Draw "
                                          "again takes the next one."))
        step = st.segmented_control(_("Jump to step"), list(range(1, N_STEPS + 1)), default=1,
                                    required=True, format_func=str, key=STEP,
                                    bind="query-params")
    step = int(step or 1)
    _bad_link("temperature", raw_t, _temperature_ok, t)
    _bad_link(STEP, raw_step, lambda raw: raw in {str(i) for i in range(1, N_STEPS + 1)}, step)
    return prompt, layer, head, float(t), step, int(seed)


def _draw_again() -> None:
    st.session_state[SEED] = int(st.session_state.get(SEED) or 0) + 1


def draw_again_button(ls: Lesson) -> None:
    """A new seed, so a new draw (the step says what the seed does)."""
    st.button(_("Draw again"), key="lesson_redraw", icon=":material/casino:",
              on_click=_draw_again,
              help=_("Draw with seed {new} instead of {old}: the same settings, another run of "
                     "the random generator.").format(new=ls.seed + 1, old=ls.seed))


def no_prompt(presenter: bool) -> None:
    """The lesson needs tokens: say how to give it some (the box may be hidden)."""
    st.info(_("The lesson follows one prompt through the model, and there is none to follow. "
              "Switch presenter mode off to see the prompt box, then type a sentence (or press "
              "“Use this model's example prompt”).") if presenter else
            _("The lesson follows one prompt through the model, and there is none to follow. "
              "Type a sentence (or press “Use this model's example prompt”)."),
            icon=":material/edit_note:")


def lesson_key(ls: Lesson) -> tuple:
    """What a score belongs to: this model, prompt and settings."""
    return (ls.picked.cache_key, ls.prompt.ids, ls.layer, ls.head, ls.temperature)


def _answers(ls: Lesson) -> dict[int, tuple[Question, str | None]]:
    return st.session_state.setdefault(ANSWERS, {}).setdefault(lesson_key(ls), {})


def _choice_key(q: Question) -> str:
    """The radio's key: per question and language (its options are the language's)."""
    return f"lesson_choice_{q.key}_{current()}"


def _reveal(ls: Lesson, step: int, q: Question) -> None:
    _answers(ls)[step] = (q, st.session_state.get(_choice_key(q)))


def question(ls: Lesson, step: int, q: Question) -> None:
    """The question, its choices and Reveal (R)."""
    st.markdown(_("**Predict, then reveal.** {question}").format(question=q.text))
    st.radio(_("Your answer"), q.choices, index=None, key=_choice_key(q), format_func=md,
             label_visibility="collapsed")
    st.button(_("Reveal the answer"), key=REVEAL, icon=":material/visibility:", type="primary",
              on_click=_reveal, args=(ls, step, q),
              help=_("Or press R. The figure and the formula appear with the model's answer."))


def outcome(q: Question, chosen: str | None) -> None:
    """The model's answer beside the student's, and the numbers that decide it."""
    answer = md(q.choices[q.answer])
    if chosen is None:
        st.info(_("{question} The model's answer: **{answer}**.").format(
            question=q.text, answer=answer), icon=":material/visibility:")
    elif q.right(chosen):
        st.success(_("{question} Your answer, **{answer}**, is the model's.").format(
            question=q.text, answer=answer), icon=":material/check_circle:")
    else:
        st.error(_("{question} You said {chosen}; the model's answer is **{answer}**.").format(
            question=q.text, chosen=md(chosen), answer=answer), icon=":material/cancel:")
    st.caption(q.why)


def revealed(ls: Lesson, step: int, q: Question | None) -> tuple[bool, str | None]:
    """Whether step ``step``'s question (if any) has been revealed, and the answer given."""
    if q is None:
        return True, None
    done = _answers(ls).get(step)
    if done is None or done[0].key != q.key:
        return False, None
    asked, chosen = done  # asked perhaps in another language: the same choice in this one
    return True, None if chosen is None else q.choices[asked.choices.index(chosen)]


FIT_PX = 450  # the figures' most height in presenter mode: the step fits a 720-px screen


def _figure(fig: Any, where: Any, key: str, compact: bool = False, most: int = FIT_PX
            ) -> None:
    if isinstance(fig, go.Figure):
        if compact and (fig.layout.height or 450) > most:
            fig = go.Figure(fig).update_layout(height=most)  # a copy: figures are cached
        plot(fig, key=key, container=where)
    elif isinstance(fig, pd.DataFrame):
        data_grid(fig, where, hide_index=True, width="stretch", height=260)
    else:
        where.html(fig)


def draw_step(ls: Lesson, step: int, view: StepView, compact: bool = False) -> None:
    """The narrative on the left; on the right the question, or once it is revealed the
    figure; then the formulas and the link into the explore page. ``compact`` (presenter
    mode) shows a revealed answer in the narrative's place (the text folds) and folds the
    formulas, so a step fits one projector screen."""
    row = st.container(horizontal=True, vertical_alignment="center",
                       horizontal_alignment="distribute")
    row.subheader(_("Step {step} of {n} · {title}").format(step=step, n=N_STEPS,
                                                           title=title(step)), anchor=False)
    with row:
        nav_buttons(step, N_STEPS, STEP)
    left, right = st.columns([2, 3], gap="medium")
    shown, chosen = revealed(ls, step, view.question)
    if compact and shown and view.question is not None:  # the answer first; the text folds
        with left:
            outcome(view.question, chosen)
        left.expander(_("The step's text"), icon=":material/notes:").markdown(view.narrative)
    else:
        left.markdown(view.narrative)
    if not shown:
        with right:
            question(ls, step, view.question)
        return
    if view.question is not None and not compact:
        with left:
            outcome(view.question, chosen)
    if view.figure_widths:  # side by side while each keeps its least width, else stacked;
        # either way they grow to fill the column (a fixed width left a stacked figure at
        # 255 px in a 470-px column, its heatmap 100 px wide)
        right.html("<style>" + "".join(  # the flex item is the block's layout wrapper
            f'[data-testid="stLayoutWrapper"]:has(>.st-key-gv-figure-{k})'
            f"{{flex:1 1 {int(FIGURE_PX * w)}px;min-width:{int(FIGURE_PX * w)}px}}"
            f".st-key-gv-figure-{k}{{width:100%!important}}"
            for k, w in enumerate(view.figure_widths)) + "</style>")
        row = right.container(horizontal=True, gap="small")
        cols = [row.container(key=f"gv-figure-{k}") for k in range(len(view.figure_widths))]
    else:
        cols = [right] * len(view.figures)
    folded = compact and not view.figure_widths and len(view.figures) > 1
    more = None
    for k, (col, fig) in enumerate(zip(cols, view.figures, strict=True)):
        if folded and k >= 1:  # one figure on the projector, the rest folded under it
            more = more or right.expander(_("The step's other figure"),
                                          icon=":material/add_chart:")
            col = more
        _figure(fig, col, f"lesson-fig-{step}-{k}", compact, FIT_PX - 60 if folded else FIT_PX)
    if view.redraw:
        with right:
            draw_again_button(ls)
    below = st.container()
    if compact and view.formulas:  # a projector's screen holds the step; formulas on demand
        below = left.expander(_("The formulas with these numbers"), icon=":material/function:")
    for tex in view.formulas:
        below.latex(tex)
    if view.caption:
        (left if compact else below).caption(view.caption)
    (left if compact else below).page_link(
        view.link.page, label=_("Explore this step on the {page} page").format(
            page=_(view.link.label)),
        icon=":material/open_in_new:", query_params={**view.link.params, **link_params()})


def plain(markdown: str) -> str:
    """A question's Markdown as the plain text a table cell shows: no emphasis, no escapes.

    >>> plain(r"A *previous-token head* for **“a\\_b”**?")
    'A previous-token head for “a_b”?'
    """
    return re.sub(r"\\(.)", r"\1", re.sub(r"(?<!\\)\*{1,2}", "", markdown))


def score(ls: Lesson) -> None:
    """How the questions went in this lesson (kept in this browser session only)."""
    done = _answers(ls)
    if not done:
        st.caption(_("No question answered yet in this lesson."))
        return
    right = sum(q.right(c) for q, c in done.values())
    answered = sum(c is not None for _, c in done.values())
    st.markdown("#### " + _("Your score: {right} right of {answered} answered ({revealed} "
                            "revealed)").format(right=right, answered=answered,
                                                revealed=len(done)))
    table = pd.DataFrame({  # English headers, shown translated; the CSV keeps them
        N_("step"): list(done),
        N_("question"): [plain(q.text) for q, _c in done.values()],
        N_("your answer"): [c or "—" for _q, c in done.values()],
        N_("the model's"): [q.choices[q.answer] for q, _c in done.values()],
        N_("right"): ["—" if c is None else "✓" if q.right(c) else "✗"
                      for q, c in done.values()]})
    plain_table(table)  # plain HTML: whole questions, wrapped (a grid cut them)
    csv_download(table, f"gptviz-lesson-score-{ls.picked.name}.csv")
    st.caption(_("The score lives in this browser session only; nothing is stored on the "
                 "server."))


def step_overview(step: int) -> None:
    """Every step's title as a button that jumps to it (presenter mode's overview)."""
    def jump(to: int) -> None:
        st.session_state[STEP] = to

    for i in range(1, len(TITLES) + 1):
        st.button(f"{i} · {title(i)}", key=f"lesson_jump_{i}", on_click=jump, args=(i,),
                  type="primary" if i == step else "tertiary", width="stretch")


def handout_button(ls: Lesson) -> None:
    """One self-contained HTML file of the whole lesson, built when it is asked for."""
    lang = current()  # the download may be built outside this session's run: in its language
    st.download_button(
        _("Download this lesson"), data=lambda: lesson_handout(ls, lang).encode("utf-8"),
        file_name=f"gptviz-lesson-{ls.picked.name}.html", mime="text/html",
        icon=":material/download:", key="lesson_handout", on_click="ignore",
        help=_("Every step's narrative, figure, formulas and question (answers folded) for "
               "this prompt and model, in one HTML file that works offline."))
