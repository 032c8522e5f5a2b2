"""The Generation page's sampling settings: temperature, top-k, top-p, min-p and seed (the
first three and the seed kept in the page's link), and the notes on settings that change
nothing or that a link got wrong."""

from __future__ import annotations

import math

import streamlit as st

from gptviz.app.generation.turn import short
from gptviz.app.shared.widgets import problem
from gptviz.generation.sampling import Sampling
from gptviz.i18n import _, number


def sampling_controls(vocab_size: int) -> Sampling:
    """Temperature, top-p, min-p and seed (``?temperature=…&top_p=…&min_p=…&seed=…`` in the
    URL: the Lesson's links draw as it does), top-k, with their notes."""
    raw, raw_min = st.query_params.get("temperature"), st.query_params.get("min_p")
    c1, c2, c3, c5, c4 = st.columns([3, 2, 2, 2, 1.4])
    t = c1.slider(_("Temperature T"), 0.0, 3.0, 1.0, 0.05, key="temperature",
                  bind="query-params",
                  help=_("P_T = softmax(y_N / T). T = 0 is greedy (always the argmax); T < 1 "
                         "sharpens the distribution, T > 1 flattens it."))
    k = c2.number_input(_("top-k (0 = off)"), 0, 1_000_000, 0, key="top_k",
                        help=_("Keep only the k most probable tokens, then renormalise."))
    p = c3.slider(_("top-p (1 = off)"), 0.05, 1.0, 1.0, 0.05, key="top_p", bind="query-params",
                  help=_("Keep the smallest set of most probable tokens whose probabilities "
                         "add up to at least p, then renormalise."))
    m = c5.slider(_("min-p (0 = off)"), 0.0, 1.0, 0.0, 0.01, key="min_p", bind="query-params",
                  help=_("Keep only the tokens whose probability is at least min-p times the "
                         "largest one, P_T(i) ≥ min-p · max P_T, then renormalise."))
    seed = c4.number_input(_("Seed"), 0, 2**31 - 1, 0, key="seed", bind="query-params",
                           help=_("Step i draws with a generator seeded by (seed, i): the same "
                                  "seed gives the same text."))
    if raw is not None and not _same(raw, t):
        st.warning(_("The link asks for temperature “{raw}”, which is not a number from 0 to "
                     "3; using T = {t}.").format(raw=raw, t=short(t)), icon=":material/link_off:")
    if raw_min is not None and not _same(raw_min, m):
        st.warning((_("The link asks for min-p “{raw}”, which is not a number from 0 to 1 "
                      "(min-p keeps the tokens whose probability is at least min-p times the "
                      "largest, so it lies in [0, 1]); using min-p = {m} (off).") if m == 0 else
                    _("The link asks for min-p “{raw}”, which is not a number from 0 to 1 "
                      "(min-p keeps the tokens whose probability is at least min-p times the "
                      "largest, so it lies in [0, 1]); using min-p = {m}.")).format(
                          raw=raw_min, m=short(m)), icon=":material/link_off:")
    return settings(t, k, p, seed, vocab_size, m)


def _same(raw: str, value: float) -> bool:
    try:
        return math.isclose(float(raw), value)
    except ValueError:
        return False


def settings(t: float, k: int, p: float, seed: int, vocab_size: int,
             min_p: float = 0.0) -> Sampling:
    """The widgets' values as a Sampling, explaining settings that change nothing."""
    top_k = int(k) if k and k < vocab_size else None
    top_p = float(p) if p < 1 else None
    m = float(min_p) if min_p else None
    if m is not None and not 0 < m <= 1:  # the slider cannot, a caller might
        problem(_("min-p must lie in [0, 1], got {m}: min-p is off. Choose a value from 0 "
                  "(off) to 1 (only the most probable token).").format(m=min_p))
        m = None
    if k and k >= vocab_size:
        st.info(_("top-k = {k} is at least the vocabulary size |V| = {v}: it keeps every token, "
                  "so it filters nothing. Choose k < |V| to cut the tail.").format(
                      k=number(k, 0, grouping=True), v=number(vocab_size, 0, grouping=True)),
                icon=":material/info:")
    if t == 0:
        active = [n for n, on in (("top-k", top_k), ("top-p", top_p), ("min-p", m)) if on]
        if not active:
            text = _("**Greedy decoding (T = 0):** each step takes the most probable token; the "
                     "seed is not used. Raise T above 0 to sample.")
        elif len(active) == 1:
            text = _("**Greedy decoding (T = 0):** each step takes the most probable token; "
                     "{a} changes nothing here (the argmax is always kept), and the seed is not "
                     "used. Raise T above 0 to sample.").format(a=active[0])
        elif len(active) == 2:
            text = _("**Greedy decoding (T = 0):** each step takes the most probable token; "
                     "{a} and {b} change nothing here (the argmax is always kept), and the seed "
                     "is not used. Raise T above 0 to sample.").format(a=active[0], b=active[1])
        else:
            text = _("**Greedy decoding (T = 0):** each step takes the most probable token; "
                     "top-k, top-p and min-p change nothing here (the argmax is always kept), "
                     "and the seed is not used. Raise T above 0 to sample.")
        st.info(text, icon=":material/target:")
    return Sampling(float(t), top_k, top_p, int(seed), m)
