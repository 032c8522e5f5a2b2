"""The Learning page's SGD step: the η slider, P(y) and L before and after, the first- and
second-order predictions beside the real ΔL, and what a too-large η does.

Every η of the slider was stepped when the page computed the gradient (on a copy of the
model), so moving the slider only looks a row up.
"""

from __future__ import annotations

import math

import streamlit as st

from gptviz.analysis.learning import Microscope, Step
from gptviz.app.learning import figures as fg
from gptviz.app.learning import formulas as tex
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import percent
from gptviz.app.shared.widgets import chart, problem

# The slider's learning rates: 0, the range where steps behave, then absurd ones that
# overshoot and finally overflow float32, so that a student can see each regime.
ETAS = (0.0, 1e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 10.0, 100.0,
        1e4, 1e8, 1e12, 1e16, 1e20)
DEFAULT_ETA = 1e-4
CHART_ETA = 100.0  # the chart's η axis ends here unless η is set beyond: the range where
# the real loss and its two Taylor models part; the slider's 1e4 … 1e20 only overflow
BIG = 1e5  # beyond this a loss or a change is written in scientific notation (a metric's room)
FIRST_ORDER_GAP = 0.10  # |real − predicted| / |predicted| under which the line "matches"


def eta_label(v: float) -> str:
    """η as the slider shows it.

    >>> eta_label(0.0), eta_label(1e-4), eta_label(0.3), eta_label(1e12)
    ('0', '1e-04', '0.3', '1e+12')
    """
    if v == 0:
        return "0"
    return f"{v:g}" if 1e-3 <= v < 1e4 else f"{v:.0e}"


def step_section(picked: Picked, m: Microscope, vocab: list[str]) -> None:
    st.markdown("#### 4. One step of gradient descent (SGD)")
    eta = st.select_slider(
        "Learning rate η", ETAS, value=DEFAULT_ETA, key="learn_eta", bind="query-params",
        format_func=eta_label,
        help="How far to move against the gradient: θ' = θ − η g. The model shown to "
             "everyone never changes; the step is taken on a private copy.")
    if eta == 0:
        st.info("η = 0: the step θ − 0 · g leaves every parameter where it is, so P(y) and L "
                "cannot change. Move the slider to the right to take a step.",
                icon=":material/pause_circle:")
    else:
        s = m.step(eta)
        st.latex(tex.sgd_latex(eta, m.grad_sq, m.curvature, s.change, s.precise))
        if math.isfinite(s.loss):
            _before_after(m, s, vocab)
            _verdict(m, s)
        else:
            problem(f"With η = {eta_label(eta)} the step overflows: the weights move so far "
                    "that the forward pass exceeds float32's range (≈ 3.4 × 10³⁸ becomes ∞, "
                    "and ∞ − ∞ is NaN), so the loss is NaN, not a number. A training run "
                    "would stay NaN from here on. Lower η by many orders of magnitude "
                    f"(try {eta_label(DEFAULT_ETA)}).")
    steps = [s for s in m.steps if s.eta <= max(CHART_ETA, eta)]  # the slider's far end
    chart(fg.step_profile_figure([s.eta for s in steps], [s.loss for s in steps],
                                 [s.rest_loss for s in steps], m.loss, m.rest_loss, m.grad_sq,
                                 m.curvature, eta or None))
    st.caption(too_large_note(m))


def change(x: float, decimals: int = 4) -> str | None:
    """A metric's change: ``decimals`` places, or two significant digits when those places
    would read 0 (never "-0.0000") or the number is too long for a metric (a huge step);
    None (no badge) when nothing changed.

    >>> change(0.01234), change(-3e-6), change(0.0), change(-0.0), change(6.9e15)
    ('+0.0123', '-3.0e-06', None, None, '+6.9e+15')
    """
    if x == 0:
        return None
    return f"{x:+.{decimals}f}" if round(x, decimals) != 0 and abs(x) < BIG else f"{x:+.1e}"


def p_change(d: float) -> str | None:
    """A change of a probability as a metric's badge: its sign, then ``percent`` of its size
    (percentage points); None (no badge) when nothing changed.

    >>> p_change(0.0123), p_change(-1.9e-5), p_change(0.0)
    ('+1.23%', '-1.90e-5', None)
    """
    if d == 0:
        return None
    return ("+" if d > 0 else "-") + percent(abs(d), 3)


def loss_text(x: float) -> str:
    """A loss as a metric shows it: four places, or scientific beyond ``BIG``.

    >>> loss_text(2.34567), loss_text(6889450741211429.0)
    ('2.3457', '6.89e+15')
    """
    return f"{x:.4f}" if abs(x) < BIG else f"{x:.3g}"


def _before_after(m: Microscope, s: Step, vocab: list[str]) -> None:
    cols = st.columns(5)
    cols[0].metric("P(y) after", percent(s.p_target, 3), p_change(s.p_target - m.p_target))
    # max: float32 gives a certain P(y) a loss of −0.0 or −1e-7, which would read "-0.0000"
    cols[1].metric("L after", f"{max(0.0, s.loss):.4f}", change(s.change),
                   delta_color="inverse")
    # '#': three significant digits kept, so the two stand side by side (-0.00580, -0.00588)
    cols[2].metric("real ΔL", f"{s.change:+#.3g}", help=(
        "L(θ') − L(θ) computed in float64: in float32 (the model's own precision) the "
        "rounding of L, about 1e-7 × L, would be a visible part of a change this small."
        if s.precise else "L(θ') − L(θ) as the model computes it, in float32: its rounding "
        "(about 1e-7 × L) is far below a change this large."))
    cols[3].metric("first order −η‖g‖²", f"{-s.eta * m.grad_sq:+#.3g}")
    if math.isfinite(m.rest_loss):
        cols[4].metric("other positions: mean L", loss_text(s.rest_loss),
                       change(s.rest_loss - m.rest_loss), delta_color="inverse")
    top = vocab[s.top] if s.top >= 0 else "?"
    st.caption(f"Before the step P(y) = {percent(m.p_target, 3)}; after it "
               f"{percent(s.p_target, 3)}. The most probable next token is now “{top}”"
               + (" — the target." if s.top == m.target else "."))


def small_percent(x: float) -> str:
    """A relative gap as a percentage: one decimal, or one significant digit below 0.1 %.

    >>> small_percent(0.055), small_percent(0.000059), small_percent(0.0)
    ('5.5%', '0.006%', '0%')
    """
    return f"{x:.1%}" if x >= 1e-3 else f"{x * 100:.1g}%"


def out_of_range(loss: float, first: float, second: float) -> str | None:
    """Why the second-order Taylor prediction means nothing at this η, or None: it puts the
    loss below 0, which no cross-entropy reaches, or its correction ½η² gᵀHg is as large as
    the first-order term it corrects (a series is no longer converging there).

    >>> out_of_range(2.99, -127.0, -44.1)
    'it puts the loss at 2.99 - 44.1 = -41.1, below 0, where no cross-entropy goes'
    >>> out_of_range(3.0, -0.5, -0.4) is None, out_of_range(3.0, -0.5, 0.6) is not None
    (True, True)
    """
    if loss + second < 0:
        return (f"it puts the loss at {loss:.3g} - {-second:.3g} = {loss + second:.3g}, "
                "below 0, where no cross-entropy goes")
    if abs(second - first) >= abs(first):
        return (f"its correction ½η² gᵀHg = {second - first:+.3g} is as large as the "
                f"first-order term {first:+.3g} it corrects, so the expansion in η has "
                "stopped converging")
    return None


def _verdict(m: Microscope, s: Step) -> None:
    real, predicted = s.change, -s.eta * m.grad_sq
    gap = abs(real - predicted) / abs(predicted)
    second = predicted + 0.5 * s.eta ** 2 * m.curvature  # −η‖g‖² + ½η² gᵀHg
    if real < 0 and gap <= FIRST_ORDER_GAP:
        st.success(f"A small step: the loss fell by {-real:.3g}, and the first-order prediction "
                   f"−η‖g‖² = {predicted:.3g} is within {small_percent(gap)} of it.",
                   icon=":material/check_circle:")
    elif real > 0:
        st.warning(f"η = {eta_label(s.eta)} is too large: the loss at this position went UP by "
                   f"{real:.3g}, although the first-order prediction says {predicted:.3g}. "
                   "The step jumped past the low point along −g.", icon=":material/warning:")
    elif (outside := out_of_range(m.loss, predicted, second)) is not None:
        below = m.loss + predicted
        st.info(f"The loss fell by {-real:.3g}, less than the first-order prediction "
                f"({-predicted:.3g}): {gap:.0%} apart. At this η the Taylor models have left "
                f"the range where they mean anything: the second-order prediction "
                f"{second:+.3g} fails, as {outside}"
                + (f"; the first order puts the loss at {below:.3g}" if below < 0 else "")
                + ". So neither accounts for the gap. A cross-entropy never goes below 0: no "
                f"step can lower this loss by more than L = {m.loss:.3g}, a floor that "
                "polynomials in η know nothing of.", icon=":material/info:")
    elif abs(real - second) <= 0.5 * abs(real - predicted):
        st.info(f"The loss fell by {-real:.3g}, less than the first-order prediction "
                f"({-predicted:.3g}): {gap:.0%} apart. At this η the curvature of L "
                f"already matters: with the second-order term ½η² gᵀHg the prediction is "
                f"{second:+.3g}, which accounts for most of the gap.",
                icon=":material/info:")
    else:
        st.info(f"The loss fell by {-real:.3g}. Neither Taylor model holds this far from "
                f"the weights: the first order predicts {predicted:+.3g}, the second "
                f"order {second:+.3g}. A cross-entropy never goes below 0, so no step can "
                f"lower this loss by more than L = {m.loss:.3g}; the models are polynomials "
                "in η and know nothing of that floor.", icon=":material/info:")
    if math.isfinite(m.rest_loss) and s.rest_loss - m.rest_loss > 0.05 * max(m.rest_loss, 1e-9):
        st.warning(f"The other positions of the window got worse: their mean loss rose from "
                   f"{m.rest_loss:.3f} to {loss_text(s.rest_loss)}. A step fitted to one token "
                   "serves that token; training averages the gradient over many positions so that "
                   "each step serves them all.", icon=":material/warning:")


def too_large_note(m: Microscope) -> str:
    """What a too-large η does, in this prediction's numbers (always on screen)."""
    g2, h = m.grad_sq, m.curvature
    if h > 0:
        bend = (f"The curvature along g, gᵀHg = {h:.3g}, bends the curve up: the quadratic "
                f"model L − η‖g‖² + ½η² gᵀHg is lowest at η* = ‖g‖²/gᵀHg = {g2 / h:.2g} and "
                f"climbs back above today's L past 2η* = {2 * g2 / h:.2g}, where it predicts "
                "that a step overshoots the valley.")
    else:
        bend = (f"Here gᵀHg = {h:.3g} ≤ 0: along −g the loss first curves down, so the "
                "quadratic model sets no limit, yet the real curve still turns up later.")
    return ("What a too-large η does: −η‖g‖² is the tangent line of L along −g, right only "
            f"near η = 0 (dashed). {bend} The quadratic model holds only near η = 0 as well: "
            "where the real curve (solid) leaves it, it tells what a step does. A cross-entropy "
            "never goes below 0, so the real loss levels off where the models keep falling or "
            "rise. A step this large can make the model certain of this one token (L → 0) "
            "while the rest of the window gets far worse (grey), which is why training "
            "averages many positions and keeps η small. " + _overflow_note(m))


def _overflow_note(m: Microscope) -> str:
    """Where on the slider this prediction's step overflows float32, if it does."""
    nan = next((s.eta for s in m.steps if not math.isfinite(s.loss)), None)
    if nan is None:
        return (f"Even η = {eta_label(ETAS[-1])}, the slider's end, keeps this loss finite "
                "(the chart follows the slider past 100).")
    return (f"From η = {eta_label(nan)} on the step overflows float32 and the loss is NaN (×; "
            "the chart follows the slider past 100).")
