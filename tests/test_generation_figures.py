"""The Generation page's figures and formulas (``gptviz/app/generation/figures.py`` and
``formulas.py``): bar charts, temperature panels, the sampling histogram, the seeds' ↦
display, P_T and H filled in, token chips and the history table."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gptviz.app.generation import figures as figs
from gptviz.app.generation import formulas as tex
from gptviz.generation import sampling as gen
from gptviz.tokenizers.base import TokenInfo


def balanced(s: str) -> bool:
    """Braces balance once escaped ones are removed (KaTeX would refuse the string)."""
    depth = 0
    for ch in s.replace(r"\{", "").replace(r"\}", ""):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def infos(text: str, special: set[int] = frozenset(), unknown: set[int] = frozenset()
          ) -> list[TokenInfo]:
    return [TokenInfo(i, c, c.encode(), (i, i + 1), special=i in special, unknown=i in unknown)
            for i, c in enumerate(text)]


# ---- figures ------------------------------------------------------------------------------

def test_top_ids_and_percent():
    assert figs.top_ids([0.1, 0.6, 0.3], 5).tolist() == [1, 2, 0]
    assert figs.top_ids([0.5, 0.5], 1).tolist() == [0]  # ties by id
    assert [figs.percent(p) for p in (0.2931, 0.0049, 0.0, 1.0)] == ["29.3%", "0.49%", "0%",
                                                                     "100.0%"]


def test_topk_bars_marks_the_chosen_token():
    probs = np.array([0.05, 0.6, 0.3, 0.05])
    fig = figs.topk_bars(["a", " b", "\n", "d"], probs, chosen=2, k=3)
    bar = fig.data[0]
    assert list(fig.layout.yaxis.ticktext) == ["·b", "↵ ◀ chosen", "a"]
    assert list(bar.marker.color) == [figs.BAR, figs.CHOSEN, figs.BAR]
    assert list(bar.text) == ["60.0%", "30.0%", "5.0%"]


def test_topk_bars_adds_a_chosen_token_outside_the_top_k():
    fig = figs.topk_bars(list("abcd"), [0.4, 0.3, 0.2, 0.1], chosen=3, k=2,
                         logits=[4.0, 3.0, 2.0, 1.0])
    assert list(fig.layout.yaxis.ticktext) == ["a", "b", "d ◀ chosen"]
    assert fig.data[0].customdata[-1][1] == pytest.approx(1.0)  # its logit on hover


def test_topk_bars_without_a_choice_is_the_preview():
    fig = figs.topk_bars(list("ab"), [0.5, 0.5], chosen=None)
    assert set(fig.data[0].marker.color) == {figs.BAR}
    assert "chosen" not in " ".join(fig.layout.yaxis.ticktext)


def test_temperature_panels_share_candidates_and_show_entropy():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    panels = []
    for t in (0.5, 1.0, 2.0):
        p = gen.next_token_probs(logits, t)
        panels.append((t, p.numpy(), gen.entropy(p)))
    fig = figs.temperature_panels(list("abcd"), panels, logits.numpy(), k=3)
    assert len(fig.data) == 3
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0].startswith("T = 0.5<br>H = ") and titles[2].startswith("T = 2.0")
    hs = [float(t.split("H = ")[1].split()[0]) for t in titles]
    assert hs == sorted(hs)  # higher T, flatter P_T, more entropy
    assert list(fig.layout.yaxis.ticktext) == ["a", "b", "c"]
    assert all(len(d.x) == 3 for d in fig.data)


def test_temperature_zero_panel_is_greedy():
    p = gen.next_token_probs(torch.tensor([1.0, 3.0]), 0)
    fig = figs.temperature_panels(["a", "b"], [(0.0, p.numpy(), gen.entropy(p))], [1.0, 3.0])
    assert fig.layout.annotations[0].text == "T = 0 (greedy)<br>H = 0.000"


def test_sample_histogram_counts_every_draw():
    probs = gen.next_token_probs(torch.randn(50, generator=torch.Generator().manual_seed(0)))
    counts = gen.sample_counts(probs, 3000, seed=1).numpy()
    fig = figs.sample_histogram([f"t{i}" for i in range(50)], counts, probs.numpy(), k=10)
    observed = fig.data[1]
    assert int(np.sum(observed.customdata)) == 3000  # the "all others" bar holds the rest
    assert float(np.sum(observed.y)) == pytest.approx(1.0)
    assert float(np.sum(fig.data[0].y)) == pytest.approx(1.0, abs=1e-5)
    assert "3,000" in fig.layout.title.text and fig.layout.xaxis.ticktext[-1] == "all others"


def test_total_variation_shrinks_with_n():
    probs = np.array([0.5, 0.3, 0.2])
    assert figs.total_variation([5, 3, 2], probs) == pytest.approx(0.0)
    tv = [figs.total_variation(gen.sample_counts(torch.tensor(probs), n, seed=0).numpy(), probs)
          for n in (10, 10_000)]
    assert tv[1] < tv[0] and tv[1] < 0.03


# ---- LaTeX --------------------------------------------------------------------------------

def test_tex_running_keeps_the_tail_and_escapes():
    assert tex.tex_running("50% of {x}_1") == r"\text{50\% of \{x\}\_1}"
    assert tex.tex_running("abcdef", 4) == r"\text{…def}"
    assert "↵" in tex.tex_running("a\nb")


def test_mapsto_line_is_the_seeds_display():
    line = tex.mapsto_line(["The", " Steenrod", " problem", " for"], 1, False,
                           [(" closed", 0.29), (" spaces", 0.24), ("#", 0.004)], False)
    assert line.startswith(r"\text{The}\underline{")  # the text before the window, plainly
    assert r"\mapsto \begin{cases}" in line and line.count(" & ") == 3
    assert r"29.0\%" in line and r"0.4\%" in line and r"\#" in line and "{<}" not in line
    assert balanced(line)
    nxt = tex.mapsto_line(["The", " Steenrod", " for", " closed"], 1, True, [(" x", 1.0)], True)
    assert nxt.startswith(r"\implies") and r"\fbox{$" not in nxt and r"\fbox{" in nxt
    # the box holds a strut: KaTeX has no metrics for "↵" and drew the box below it
    assert r"\fbox{\vphantom{Ag}\text{·closed}}" in nxt
    assert balanced(nxt)


def test_mapsto_line_with_a_long_window_shows_its_end():
    line = tex.mapsto_line(list("x" * 200), 50, True, [("y", 0.5)], True)
    assert "…" in line and balanced(line)


@pytest.mark.parametrize("top_k", [None, 2])
def test_pt_formula_numbers_agree(top_k):
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    t = 0.7
    p = gen.next_token_probs(logits, t, top_k)
    kept = p > 0
    log_z = float(torch.logsumexp(logits[kept] / t, 0))
    log_z_all = float(torch.logsumexp(logits / t, 0))
    best = int(p.argmax())
    s = tex.pt_formula("a", best, float(logits[best]), t, log_z, float(p[best]),
                       int(kept.sum()), 4, log_z_all if top_k else None)
    assert math.exp(float(logits[best]) / t - log_z) == pytest.approx(float(p[best]), rel=1e-5)
    assert f"{float(p[best]):.4f}" in s and balanced(s)
    assert ("|S| = 2" in s) == (top_k is not None) and ("P'(i)" in s) == (top_k is not None)
    if top_k:  # P'(i) = P_T(i) / Σ_{j∈S} P_T(j): the mass of S and P_T(best), from softmax
        full = torch.softmax(logits.double() / t, 0)
        assert f"{float(full[kept].sum()):.4f}" in s and f"{float(full[best]):.4f}" in s
        assert r"\sigma\!\Big(\frac{y_N}{T}\Big)_i = \frac{e^{y_{N,i}/T}}{\sum_{j\in V}" in s


def test_pt_formula_at_zero_is_argmax():
    s = tex.pt_formula("the", 17, 3.2, 0.0, 0.0, 1.0, 1, 100)
    assert r"\arg\max" in s and "17" in s and "= 1" in s and balanced(s)


def test_entropy_formula():
    s = tex.entropy_formula(math.log(4))
    assert "1.386" in s and "4.00" in s and balanced(s)


# ---- HTML chips and the table -------------------------------------------------------------

def test_sequence_chips_mark_cut_and_new_tokens():
    html = figs.sequence_chips_html(infos("abcdef"), n_prompt=4, dropped=2)
    assert html.count('<span class="gv-chip') == 6
    assert html.count("gv-cut") - html.count(".gv-cut") == 2  # the two cut chips
    assert html.count("gv-new") - html.count(".gv-new") == 2
    assert html.count("gv-last") - html.count(".gv-last") == 1
    assert html.index("✂") < html.index(">c<")  # the cut sits before the window


def test_sequence_chips_escape_and_show_specials():
    tokens = infos("<b") + [TokenInfo(9, "<|UNK|>", b"<|UNK|>", (0, 0), special=True,
                                      unknown=True)]
    html = figs.sequence_chips_html(tokens, n_prompt=3, dropped=0)
    assert "<b<" not in html and "&lt;" in html
    assert "&lt;|UNK|&gt;" in html and "#ff8a80" in html  # the unknown-token fill


def test_sequence_chips_draw_only_the_last_tokens():
    html = figs.sequence_chips_html(infos("x" * 50), n_prompt=10, dropped=5, max_tokens=20)
    assert html.count('<span class="gv-chip') == 20 and "30 earlier tokens" in html


def test_attention_chips_show_the_weights():
    html = figs.attention_chips_html(infos("abc"), [0.1, 0.2, 0.7])
    assert html.count('<span class="gv-chip"') == 3 and "0.70" in html
    assert "rgba(245,133,24,1.000)" in html  # the largest weight is the darkest


def test_history_table():
    df = figs.history_table(["ab", "abc"], ["c", " "], [0.5, 0.25], [0.7, 1.1],
                           ["T = 1", "greedy (T = 0)"], [0, 1])
    assert list(df["step"]) == [1, 2] and list(df["chosen"]) == ["c", "·"]
    assert list(df.columns)[:4] == ["step", "context (end)", "chosen", "P(chosen)"]
