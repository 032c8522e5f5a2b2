"""The Generation page's per-session history: the prompt, every step, the tree of branches,
a "Generate n" run. No Streamlit: the page keeps one ``History`` in session state and
changes it only in callbacks, so a rerun never sees half a step.

The text is one path through a tree of every token ever appended (``History.nodes``, keyed
by path); branching or selecting a node makes its path the text. Step i draws with
``Sampling.generator(i)``, so a fixed seed gives the same text by clicks, "Generate n" or
``generate()``. Two runs may overlap (``runner.fastReruns``): every change holds the lock,
and a "Generate n" loop advances only while it owns the run (``claim``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from torch import Tensor

from gptviz.app.generation.turn import N_TOP, Turn
from gptviz.app.serving.threads import one_thread
from gptviz.generation import sampling as gen
from gptviz.generation.beam import next_logits
from gptviz.generation.sampling import Sampling
from gptviz.i18n import _, ngettext, number
from gptviz.model import GPT

MAX_TOKENS = 1000  # generated tokens in one text
MAX_NODES = 2000  # tokens in the whole tree of branches
RECENT = 4  # steps' logits a History keeps, drawn or recomputed (|V| floats each)
Path = tuple[int, ...]  # a node of the tree: the ids chosen after the prompt, in order


def _n(n: int) -> str:
    return number(n, 0, grouping=True)


@dataclass
class History:
    """The prompt's ids, the turns after it, and the progress of a "Generate n" run.

    >>> h = History(("model", "prompt"), [3, 7]); h.ids
    [3, 7]
    """

    key: tuple  # (model, prompt): when it changes, the history starts again
    prompt_ids: list[int]
    turns: list[Turn] = field(default_factory=list)
    pending: int = 0  # tokens a "Generate n" run still has to produce
    planned: int = 0  # n of the current (or last) "Generate n" run
    note: str = ""  # one message for the next run to show (e.g. "stopped after 12 of 50")
    owner: int = 0  # the "Generate n" loop allowed to advance (see ``claim``)
    clicks_seen: int = 0  # "Next token" clicks already turned into tokens (see ``catch_up``)
    nodes: dict[Path, Turn] = field(default_factory=dict)  # the tree: every token kept
    model: GPT | None = field(default=None, repr=False, compare=False)  # set by ``preview``
    recent: OrderedDict = field(default_factory=OrderedDict, repr=False, compare=False)
    ahead: tuple | None = field(default=None, repr=False, compare=False)  # see ``preview``
    reader: gen.TextCache | None = field(default=None, repr=False, compare=False)  # its KV cache
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + [t.chosen for t in self.turns]

    @property
    def path(self) -> Path:
        """The current text's node: the ids after the prompt."""
        return tuple(t.chosen for t in self.turns)

    @property
    def full(self) -> bool:
        return len(self.turns) >= MAX_TOKENS or len(self.nodes) >= MAX_NODES

    def advance(self, model: GPT, sampling: Sampling) -> Turn:
        """Draw one token, append it and return its Turn (the only place turns grow)."""
        with self.lock:
            if self.full:
                raise ValueError(_("the history holds at most {most} generated tokens in a text "
                                   "and {nodes} in the tree: undo or reset to go on.").format(
                                       most=_n(MAX_TOKENS), nodes=_n(MAX_NODES)))
            s = self.preview(model, sampling)
            turn = Turn.of(s.logits, s.chosen, sampling, s.cropped)
            self._keep(tuple(self.ids), s.logits)  # its replay needs no forward pass
            self.turns.append(turn)
            self.nodes[self.path] = turn
            return turn

    def branch(self, i: int, token: int, expected: Path, model: GPT | None = None,
               sampling: Sampling | None = None) -> Turn:
        """Step i (from 0) takes ``token`` instead: the text becomes the path before step i,
        then ``token``. ``expected`` is that path as the caller saw it; if the text has
        changed since (undone, reset, another branch), nothing happens and ValueError says so.
        At i = len(turns) the next token is chosen by hand (``sampling`` gives its
        distribution); ``model`` recomputes the step's logits (the history's own if None).

        >>> h = History(("m", ""), [3]); h.advance(model, Sampling(seed=1)).chosen
        1
        >>> h.branch(0, 7, (), model).chosen, h.path, round(h.turns[0].p_chosen, 4)  # P(7 | 3)
        (7, (7,), 0.1051)
        >>> h.branch(1, 2, (9,))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: step 2 no longer exists in this text (it has 1 step now, ...
        """
        with self.lock:
            if i > len(self.turns) or self.path[:i] != tuple(expected):
                n = len(self.turns)
                raise ValueError(ngettext(
                    "step {i} no longer exists in this text (it has {n} step now, after an "
                    "undo, a reset, a new prompt or another branch): choose the step again.",
                    "step {i} no longer exists in this text (it has {n} steps now, after an "
                    "undo, a reset, a new prompt or another branch): choose the step again.",
                    n).format(i=i + 1, n=n))
            path = self.path[:i] + (int(token),)
            if path not in self.nodes and len(self.nodes) >= MAX_NODES:
                raise ValueError(_("the tree holds at most {most} tokens: reset to go on.").format(
                    most=_n(MAX_NODES)))
            self.stop()
            if i < len(self.turns):
                old = self.turns[i]
                turn = Turn.of(self.logits(i, model), int(token), old.sampling, old.cropped,
                               "picked")
            else:
                s = self.preview(model, sampling)
                turn = Turn.of(s.logits, int(token), sampling, s.cropped, "picked")
            turn = self.nodes.setdefault(path, turn)  # a node that exists stays as it was
            self.turns[i:] = [turn]
            return turn

    def select(self, path: Path) -> None:
        """Make ``path`` (a node of the tree, or () for the prompt) the current text."""
        with self.lock:
            path = tuple(path)
            missing = next((k for k in range(1, len(path) + 1) if path[:k] not in self.nodes),
                           None)
            if missing is not None:
                raise ValueError(_("that node is no longer in the tree (step {i} is missing): "
                                   "choose another one.").format(i=missing))
            self.stop()
            self.turns[:] = [self.nodes[path[:k]] for k in range(1, len(path) + 1)]

    def catch_up(self, model: GPT, sampling: Sampling, clicks: int) -> int:
        """One token per "Next token" click not yet seen; returns how many were appended.

        >>> h = History(("m", ""), [3], clicks_seen=2); h.catch_up(None, Sampling(), 2)
        0
        """
        with self.lock:
            new = clicks - self.clicks_seen
            if new <= 0:
                return 0
            self.clicks_seen = clicks
            made = 0
            while made < new and not self.full:
                self.advance(model, sampling)
                made += 1
            return made

    def undo(self) -> Turn | None:
        """Remove the last token (ending any "Generate n"); None when only the prompt is left.
        The token leaves the tree too, unless other branches grow from it."""
        with self.lock:
            self.stop()
            if not self.turns:
                return None
            path = self.path
            if not any(len(p) > len(path) and p[: len(path)] == path for p in self.nodes):
                self.nodes.pop(path, None)
            return self.turns.pop()

    def reset(self) -> None:
        """Back to the prompt alone; every branch is gone."""
        with self.lock:
            self.stop()
            self.turns.clear()
            self.nodes.clear()

    def start(self, n: int) -> int:
        """Plan a "Generate n" run; returns how many tokens will really be made."""
        with self.lock:
            n = max(0, min(int(n), MAX_TOKENS - len(self.turns), MAX_NODES - len(self.nodes)))
            self.pending = self.planned = n
            return n

    def stop(self) -> int:
        """End a running "Generate n"; returns how many of its tokens were made."""
        with self.lock:
            self.owner += 1  # a loop still running in an old thread stops at its next token
            done = self.planned - self.pending
            self.pending = self.planned = 0
            return done

    def claim(self) -> int:
        """Make the caller's loop the only one that may continue the planned run."""
        with self.lock:
            self.owner += 1
            return self.owner

    def stream_step(self, model: GPT, sampling: Sampling, owner: int) -> bool:
        """One token of the planned run, if ``owner`` still owns it and tokens are pending.

        >>> h = History(("m", ""), [3]); h.start(2), h.claim()
        (2, 1)
        >>> h.stream_step(None, Sampling(), owner=0)  # an old loop: not its run, no step
        False
        """
        with self.lock:
            if owner != self.owner or self.pending <= 0 or self.full:
                return False
            self.advance(model, sampling)
            self.pending -= 1
            return True

    def finish(self, owner: int) -> int | None:
        """End the run ``owner`` made; the number of its tokens, or None if it lost the run."""
        with self.lock:
            if owner != self.owner:
                return None
            return self.stop()

    def logits(self, i: int, model: GPT | None = None) -> Tensor:
        """y_N of step i (|V|,), recomputed from the ids before it by ``model`` (the
        history's own if None); the last ``RECENT`` are kept, so a replayed step costs one
        forward pass once."""
        with self.lock:
            ids = tuple(self.ids[: len(self.prompt_ids) + i])
            hit = self.recent.get(ids)
            model = model or self.model
        if hit is not None:
            return hit
        if model is None:
            raise ValueError(_("no model to recompute the step with: take a step first."))
        with one_thread(model):
            y = next_logits(model, ids)  # (|V|,)
        self._keep(ids, y)
        return y

    def _keep(self, ids: tuple[int, ...], y: Tensor) -> None:
        with self.lock:
            self.recent[ids] = y
            while len(self.recent) > RECENT:
                self.recent.popitem(last=False)

    def step(self, i: int, n_ctx: int, model: GPT | None = None) -> gen.Step:
        """Turn i as a ``generate.Step``: its context window, P_T, top candidates, choice
        (its logits recomputed, see ``logits``)."""
        turn = self.turns[i]
        ids = self.ids[: len(self.prompt_ids) + i]
        cropped = max(0, len(ids) - n_ctx)
        s = turn.sampling
        logits = self.logits(i, model)  # (|V|,)
        probs = gen.next_token_probs(logits, s.temperature, s.top_k, s.top_p,
                                     s.min_p)  # (|V|,)
        return gen.Step(ids[cropped:], cropped, logits, probs, list(turn.top), turn.chosen,
                        turn.entropy)

    def preview(self, model: GPT, sampling: Sampling) -> gen.Step:
        """The step "Next token" would take now (same seed, so the same choice). The last
        one is kept: the page shows it, then the click that takes it reuses it.

        Its logits come through the text's KV cache (``gen.TextCache``), as ``generate``
        decodes: a step reads only the new token, Undo and a branch cut the cache back to
        the prefix they keep, and past the context window the window is recomputed."""
        with self.lock:
            self.model, ids = model, tuple(self.ids)
            if (hit := self.ahead) is not None and hit[:3] == (model, ids, sampling):
                return hit[3]
            if self.reader is None or self.reader.model is not model:
                self.reader = gen.TextCache(model)
            with one_thread(model):
                s = gen.step(model, ids, sampling.temperature, sampling.top_k, sampling.top_p,
                             sampling.generator(len(self.turns)), n_top=N_TOP,
                             min_p=sampling.min_p, cache=self.reader)
            self.ahead = (model, ids, sampling, s)
            return s
