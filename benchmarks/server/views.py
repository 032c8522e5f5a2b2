"""Every view of the app, as a session opens it: what the GPT-2 benchmarks walk.

A view is a page's lazy tab (``?view=``, read from its ``VIEWS`` by ``session_rss.lazy_views``),
a Lesson step (``?step=``), or a page that has no tabs. ``open_view`` opens one in a
``ProtocolSession`` with the model and the prompt in the query string, as a link would, then
reaches its fold (``fold.below``: what a reader scrolling down draws) when it has one. A page
opened from another shows its default tab on that first run whatever ``?view=`` says (the
tab a page returns to is chosen on arrival), so ``open_view`` first opens the page itself when
the session is on another one and the view is not the default; that run is not the view's.
The walk (``every_view``) opens each page's default first, as a reader arriving does.

``python -m benchmarks.server.views`` lists the walk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from benchmarks.common import prose
from benchmarks.server import streamlit_client as sc
from benchmarks.server.session_rss import lazy_views

NAVIGATION = ["", "lesson", "tokenizers", "embeddings", "positional", "attention", "block",
              "generation", "training", "learning"]  # app.py's order
LESSON_STEPS = 14
TEXT_KEY = {"tokenizers": "text"}  # the query parameter of a page's text box (else "prompt")


@dataclass(frozen=True)
class View:
    page: str  # URL path, "" for Home
    tab: str | None = None  # ?view= label
    step: int | None = None  # the Lesson's ?step=
    default: bool = True  # what the page shows when it is opened from another page

    @property
    def label(self) -> str:
        where = self.page or "home"
        return f"{where}: step {self.step}" if self.step else (
            f"{where}: {self.tab}" if self.tab else where)

    def query(self, model: str | None, prompt: str | None) -> dict[str, str]:
        q = {}
        if model:
            q["model"] = model
        if prompt is not None:
            q[TEXT_KEY.get(self.page, "prompt")] = prompt
        if self.tab:
            q["view"] = self.tab
        if self.step:
            q["step"] = str(self.step)
        return q


def every_view(pages: list[str] | None = None) -> list[View]:
    """The walk: each page of the navigation, then each of its views, in order.

    >>> [v.label for v in every_view(["", "embeddings"])]
    ['home', 'embeddings: One-hot × E', 'embeddings: The vocabulary (PCA)', \
'embeddings: Trained vs untrained']
    """
    out = []
    for page in NAVIGATION if pages is None else pages:
        if page == "lesson":
            out += [View(page, step=i, default=i == 1) for i in range(1, LESSON_STEPS + 1)]
        elif tabs := lazy_views(page):
            out += [View(page, tab=t, default=i == 0) for i, t in enumerate(tabs)]
        else:
            out.append(View(page))
    return out


@dataclass
class Opened:
    view: View
    run: sc.Run  # the view's run
    fold: sc.Run | None  # the run that drew what is below its fold, if it has one

    @property
    def seconds(self) -> float:
        return self.run.seconds

    @property
    def problems(self) -> str:
        runs = [self.run, *([self.fold] if self.fold else [])]
        return "; ".join(r.status if r.status != "ok" else "; ".join(r.exceptions)[:120]
                         for r in runs if r.status != "ok" or r.exceptions)


async def open_view(s: sc.ProtocolSession, view: View, model: str | None,
                    prompt: str | None) -> Opened:
    """Open ``view`` in session ``s`` (after opening its page, if ``s`` is on another one)
    and reach its fold."""
    query = view.query(model, prompt)
    if s.page != view.page and not view.default:
        await s.open(view.page, urlencode({k: v for k, v in query.items()
                                           if k not in ("view", "step")}))
    run = await s.open(view.page, urlencode(query))
    fold = await s.send_state(run, "fold", {"reached": True}) if any(
        kind == "bidi_component" and e.component_name.endswith("fold")
        for kind, e in run.elements.values()) else None
    return Opened(view, run, fold)


def gpt2_prompts(n: int, count: int) -> list[str]:
    """``count`` different prompts of exactly ``n`` tokens of GPT-2's encoding, from the
    benchmarks' prose (Tiny Shakespeare beside the repository, else the bundled corpus),
    sentences without TeX, cut at token boundaries."""
    from gptviz.tokenizers import make_tokenizer

    tok = make_tokenizer("gpt2")
    words = " ".join(prose().read_text(encoding="utf-8").split())
    sentences = re.split(r"(?<=[.?!])\s+", words)
    text = " ".join(x for x in sentences if not re.search(r"[$\\{}^_]", x))  # no TeX
    out, start = [], 0
    while len(out) < count:
        head = text[start:start + 20 * n]
        spans = [t.span for t in tok.tokens(head)]
        if len(spans) < n:
            raise ValueError(f"the prose has too few tokens for {count} prompts of {n}")
        piece = head[: spans[n - 1][1]]
        if len(tok.encode(piece)) == n and piece not in out:
            out.append(piece)
        start += spans[n][0] if len(spans) > n else len(head)
        while start < len(text) and text[start] == " ":
            start += 1
    return out


if __name__ == "__main__":
    for v in every_view():
        print(v.label)
