"""The live data a lesson reads, and the shape of one step of it.

One forward pass of the prompt (through the shared cache, so the explore pages' numbers and
the lesson's are the same), the layer, head, temperature and seed the teacher chose, and a
short continuation drawn with the Generation page's seeding rule and top-p ``TOP_P``, so
that "explore this step" shows the very token the lesson drew. A step is data
(``StepView``): the page draws it and the handout writes it, from the same object.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gptviz.app.shared.cache import activations, cached_result, per_model, vocab_labels
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.inputs import Prompt
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import LINK_LIMIT
from gptviz.checkpoints.folder import Checkpoint
from gptviz.generation import sampling as gen
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import attention_page_names, block_page_names

if TYPE_CHECKING:
    from gptviz.app.lesson.questions import Question

SEED = 0  # the Generation page's default seed: its first "Next token" draws our token
# The draws keep the fewest most probable tokens whose probabilities reach TOP_P (top-p):
# drawing from all of P_T, the default seed took a token of 0.8 % (rank 20) on
# mathematics-bpe, and the continuation went on as gibberish.
TOP_P = 0.9
CONTINUATION = 8  # tokens the last step appends, one at a time
FLAT_T, SHARP_T = 2.0, 0.2  # the two temperatures the P_T step compares
BIG_FONT = 16  # px, plotly's type in presenter mode (its default is 12)


@dataclass(frozen=True)
class Link:
    """Where "explore this step" goes: an app page, its tab and the state in its URL."""

    page: str  # e.g. "app_pages/attention.py"
    label: str  # e.g. "Attention"
    params: dict[str, str | list[str]]  # the URL's query parameters (a list: repeated)


@dataclass(frozen=True)
class StepView:
    """What one step shows. ``figures`` holds plotly figures, HTML strings (token chips)
    and DataFrames; ``formulas`` LaTeX strings; ``narrative`` Markdown with ``$…$``."""

    narrative: str
    figures: list[Any]
    formulas: list[str]
    link: Link
    caption: str = ""
    question: Question | None = None
    figure_widths: list[float] = field(default_factory=list)  # side by side, as st.columns
    redraw: bool = False  # the step shows a random draw: offer "Draw again" (a new seed)


@dataclass(frozen=True)
class Drawn:
    """One token of the continuation and what it was drawn from."""

    chosen: int
    top: tuple[tuple[int, float], ...]  # the most probable (id, P_T), best first
    cropped: int  # ids cut from the front to fit the context window
    n_ids: int  # ids in the text when it was drawn (cropped ones included)
    entropy: float


@dataclass(frozen=True)
class Lesson:
    """The prompt's forward pass and the teacher's settings, for every step to read."""

    picked: Picked
    prompt: Prompt
    layer: int
    head: int
    temperature: float
    cache: ActivationCache  # lesson_names(n_layer) of the cropped prompt
    logits: np.ndarray  # (|V|,) y_N, the last position's logits
    big: bool = False  # presenter mode: figures with larger type
    seed: int = SEED  # the draws' seed (the Generation page's rule: step i seeded by it and i)
    offline: bool = False  # no Streamlit caches (a thread without a session: the handout)
    _memo: dict = field(default_factory=dict, repr=False, compare=False)  # offline's cache

    @property
    def ckpt(self) -> Checkpoint:
        return self.picked.checkpoint

    @property
    def config(self):
        return self.ckpt.config

    @property
    def labels(self) -> list[str]:
        return self.prompt.labels

    @property
    def n(self) -> int:
        """Tokens the model reads (after the crop)."""
        return len(self.prompt.ids)

    @functools.cached_property
    def vocab(self) -> list[str]:
        """Every vocabulary entry as visible text, by id."""
        return vocab_labels.__wrapped__(self.ckpt) if self.offline else vocab_labels(self.picked)

    @property
    def sampling(self) -> gen.Sampling:
        """How the lesson draws: T, top-p ``TOP_P`` and the seed (T = 0: greedy)."""
        return gen.Sampling(float(self.temperature), top_p=TOP_P, seed=int(self.seed))

    def drawn(self, n: int = CONTINUATION) -> tuple[list[Drawn], np.ndarray]:
        """The first ``n`` tokens of the continuation, each with what it was drawn from,
        and P' (|V|,) of the first, the top-p set's P_T renormalised: one pass of the model
        per token."""
        return self._cached(_draws, n)

    def _cached(self, fn: Callable[..., Any], n: int) -> Any:
        ids = tuple(t.id for t in self.prompt.all_tokens)  # as the Generation page: uncropped
        t, seed = float(self.temperature), int(self.seed)
        if not self.offline:
            return fn(self.picked, ids, t, int(n), seed)
        # No shared cache: draw the longest continuation once; its first n are draws(n)'s.
        key = (fn.__name__, max(n, CONTINUATION), seed)
        if key not in self._memo:
            self._memo[key] = fn.__wrapped__(self.ckpt, ids, t, key[1], seed)
        drawn, first = self._memo[key]
        return drawn[:n], first

    def result(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per (model, prompt, settings), e.g. P_T over the whole vocabulary
        at three temperatures: shared, never change what it returns."""
        if self.offline:
            if ("result", name) not in self._memo:
                self._memo[("result", name)] = compute()
            return self._memo[("result", name)]
        args = (self.prompt.ids, self.layer, self.head, self.temperature)
        return cached_result(self.picked, f"lesson-{name}", args, compute)

    def figure(self, name: str, build: Callable[[], Any]) -> Any:
        """``build()`` (a figure or a list of them) once per (model, prompt, settings), with
        larger type for a projector. Shared: never change what it returns."""
        def styled() -> Any:
            figs = build()
            for fig in figs if isinstance(figs, list) else [figs]:
                if self.big:
                    fig.update_layout(font=dict(size=BIG_FONT))
            return figs

        if self.offline:
            return styled()
        args = (self.prompt.ids, self.layer, self.head, self.temperature, self.big, self.seed)
        return cached_figure(self.picked, f"lesson-{name}", args, styled)

    def link(self, page: str, label: str, view: str | None = None, **extra: Any) -> Link:
        """A link to ``page`` in this lesson's state: model, prompt (while it fits in a
        link; the session keeps longer ones), ``view`` (the page's tab) and ``extra``."""
        params: dict[str, str | list[str]] = {"model": self.picked.link_value}
        if len(self.prompt.text) <= LINK_LIMIT:
            params["prompt"] = self.prompt.text
        if view:
            params["view"] = view
        params.update({k: [str(x) for x in v] if isinstance(v, list) else str(v)
                       for k, v in extra.items()})
        return Link(page, label, params)


def lesson_names(n_layer: int, rope: bool = False) -> list[str]:
    """Every activation a step reads: the Block page's and the Attention page's, once each.

    >>> len(lesson_names(1)), lesson_names(1)[:2], len(lesson_names(1, rope=True))
    (16, ['hook_embed', 'hook_pos_embed'], 18)
    """
    return list(dict.fromkeys([*block_page_names(n_layer),
                               *attention_page_names(n_layer, rope)]))


def build_lesson(picked: Picked, prompt: Prompt, layer: int, head: int, temperature: float,
                 big: bool = False, seed: int = SEED) -> Lesson:
    """The forward pass of the (cropped) prompt, from the shared cache."""
    c = picked.checkpoint.config
    cache, logits = activations(picked, prompt.ids,
                                lesson_names(c.n_layer, rope=c.rope))
    return Lesson(picked, prompt, int(layer), int(head), float(temperature), cache, logits, big,
                  seed=int(seed))


@per_model
def _draws(ckpt: Checkpoint, ids: tuple[int, ...], temperature: float, n: int, seed: int
           ) -> tuple[list[Drawn], np.ndarray]:
    drawn, first = [], None
    for k, s in enumerate(gen.step_through(ckpt.model, ids, n, temperature, top_p=TOP_P,
                                           seed=seed)):
        if first is None:
            first = s.probs.numpy().astype(np.float32)  # (|V|,)
        drawn.append(Drawn(s.chosen, tuple(s.top), s.cropped, len(ids) + k, s.entropy))
    return drawn, first

