"""The Generation page's per-session history: the prompt, every step taken, a "Generate n" run.

Pure Python and torch (no Streamlit), so it is tested on its own; the page keeps
one ``History`` in ``st.session_state`` and changes it only in button callbacks,
one step at a time, so a rerun can never see half a step.

Step i draws with ``Sampling.generator(i)`` (``gptviz.generate``'s one seeding rule): a
fixed seed gives the same text whether it is built by n clicks of "Next token", one
"Generate n" or ``generate()``, and "Undo" then "Next token" draws the same token again.

Streamlit may start a new run while the interrupted one is still finishing its
current statement (``runner.fastReruns``), so two threads can touch one History:
every change holds its lock, and a "Generate n" loop advances only while it owns
the run (``claim``); Stop, Undo, Reset or a newer loop take that ownership away.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import torch

from gptviz import generate as gen
from gptviz.generate import Sampling
from gptviz.model import GPT

MAX_TOKENS = 1000  # generated tokens kept per session (each keeps its logits: |V| floats)
N_TOP = 10  # candidates a Step lists


@dataclass(frozen=True)
class Turn:
    """One generated token and what it was drawn from (probabilities are derived)."""

    chosen: int  # the appended id
    logits: np.ndarray  # (|V|,) float32: y_N at this step
    sampling: Sampling  # the settings in force when it was drawn
    cropped: int  # ids dropped from the front to fit the context window
    entropy: float  # H(P_T) in nats


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
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + [t.chosen for t in self.turns]

    @property
    def full(self) -> bool:
        return len(self.turns) >= MAX_TOKENS

    def advance(self, model: GPT, sampling: Sampling) -> Turn:
        """Draw one token, append it and return its Turn (the only place turns grow)."""
        with self.lock:
            if self.full:
                raise ValueError(f"the history holds at most {MAX_TOKENS:,} generated tokens: "
                                 "undo or reset to go on.")
            s = gen.step(model, self.ids, sampling.temperature, sampling.top_k, sampling.top_p,
                         sampling.generator(len(self.turns)), n_top=N_TOP)
            turn = Turn(s.chosen, s.logits.numpy().astype(np.float32), sampling, s.cropped,
                        s.entropy)
            self.turns.append(turn)
            return turn

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
            made = min(new, MAX_TOKENS - len(self.turns))
            for _ in range(made):
                self.advance(model, sampling)
            return made

    def undo(self) -> Turn | None:
        """Remove the last token (ending any "Generate n"); None when only the prompt is left."""
        with self.lock:
            self.stop()
            return self.turns.pop() if self.turns else None

    def reset(self) -> None:
        with self.lock:
            self.stop()
            self.turns.clear()

    def start(self, n: int) -> int:
        """Plan a "Generate n" run; returns how many tokens will really be made."""
        with self.lock:
            n = max(0, min(int(n), MAX_TOKENS - len(self.turns)))
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

    def step(self, i: int, n_ctx: int) -> gen.Step:
        """Turn i as a ``generate.Step``: its context window, P_T, top candidates, choice."""
        turn = self.turns[i]
        ids = self.ids[: len(self.prompt_ids) + i]
        cropped = max(0, len(ids) - n_ctx)
        s = turn.sampling
        logits = torch.from_numpy(turn.logits)  # (|V|,)
        probs = gen.next_token_probs(logits, s.temperature, s.top_k, s.top_p)  # (|V|,)
        best = torch.topk(probs, min(N_TOP, probs.numel()))
        top = [(int(j), float(p)) for p, j in zip(best.values, best.indices, strict=True)]
        return gen.Step(ids[cropped:], cropped, logits, probs, top, turn.chosen, turn.entropy)

    def preview(self, model: GPT, sampling: Sampling) -> gen.Step:
        """The step "Next token" would take now (same seed, so the same choice)."""
        return gen.step(model, self.ids, sampling.temperature, sampling.top_k, sampling.top_p,
                        sampling.generator(len(self.turns)), n_top=N_TOP)
