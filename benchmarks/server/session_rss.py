"""The memory of one server after one session has visited every page (issue 11: ≤ 400 MB).

    python -m benchmarks.server.session_rss [--timeout 60] [--top 12] [--views] [--out rss.json]
                                     [--pages "" learning] [--gpt2]
    python -m benchmarks.server.session_rss --shaped gpt2 [--sessions 3] [--linger 180]

Starts ``streamlit run app.py`` (headless, loopback, a free port, the sources unwatched),
reads its RSS idle, then has ONE session (a websocket session, ``streamlit_client.py``: what
a browser tab sends, without a browser) open every page the navigation lists, in the
sidebar's order, each in its default view, reading the RSS after each page and 5 s after
the last. Beside it, in the same run, the floors: a bare one-line page on its own server
after one visit (what Streamlit and Python cost), and ``python -c "import torch"`` alone.
RSS is the server process and its children, split as ``/proc/PID/status`` splits it:
RssAnon (the heap: Python objects, tensors, Rust and C++ allocations) and RssFile (mapped
files: shared libraries and the like, shared with other processes, but still resident).

``--views`` also opens, on the pages whose views are lazy tabs (``?view=``), every other
view once, after the walk: the worst case of one session, not the issue's measure.
``--top N`` lists the N largest file mappings of the server at the end
(``/proc/PID/smaps``, by Rss), to see which libraries the walk brought in.

``--gpt2`` then measures the Positional encoding page with a GPT-2-shaped model (random
weights, GPT-2 small's shapes: context 1,024, d = 768, saved as a Hugging Face folder the
server names with GPTVIZ_MODELS) on a server of its own: one session opens the page on
the default model and scrolls to "The similarity depends only on i − j" (the fold's
marker reached), then the same on the GPT-2-shaped model; the RSS after each step and
its peak during it (sampled every 100 ms). That view once took the server from 0.85 GB
to 7.3 GB (issue 37).

``--shaped SHAPE`` (distilgpt2, gpt2, gpt2-medium) measures a server that names a model of that
shape (random weights, written to a temporary folder given as ``GPTVIZ_MODELS``): its RSS
idle, after Home opened on the model (the model loaded: "model", the floor of the figures
below), the peak (sampled every 100 ms) and the end of ONE session's walk of every view
(``views.every_view``: each lazy tab, each Lesson step, each fold reached) on a 23-token
prompt, then after each of ``--sessions`` − 1 more sessions walking it on prompts of their
own (all still connected), then every ``--every`` s for ``--linger`` s after the last
disconnects (Streamlit keeps a disconnected session ``server.disconnectedSessionTTL``,
120 s by default, for a reconnect). Each figure is also given as "model + X"."""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]

from benchmarks.common import Rss, machine  # noqa: E402
from benchmarks.server import streamlit_client as sc  # noqa: E402

FIELDS = ("RssAnon", "RssFile", "RssShmem")
BARE = 'import streamlit as st\n\nst.write("hello")\n'
TORCH = "import torch; print(open('/proc/self/status').read())"


def status_kb(text: str) -> dict[str, int]:
    """The Rss fields of a ``/proc/PID/status`` text, in kB.

    >>> status_kb("RssAnon:\\t  10 kB\\nRssFile:\\t 5 kB\\nRssShmem:\\t 0 kB\\n")
    {'RssAnon': 10, 'RssFile': 5, 'RssShmem': 0}
    """
    return {f: int(m.group(1)) if (m := re.search(rf"{f}:\s+(\d+)", text)) else 0
            for f in FIELDS}


def family(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):  # a process gone
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")")[-1].split()[1])
    found, grew = {pid}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return sorted(found)


def rss(pid: int) -> dict[str, float]:
    """RssAnon, RssFile (and RssShmem) of ``pid`` and its children, in MB, and their total."""
    kb = dict.fromkeys(FIELDS, 0)
    for p in family(pid):
        with contextlib.suppress(OSError):
            for f, v in status_kb(Path(f"/proc/{p}/status").read_text()).items():
                kb[f] += v
    mb = {f: v / 1024 for f, v in kb.items()}
    return {**mb, "total": sum(mb.values())}


def top_mappings(pid: int, n: int) -> list[tuple[str, float]]:
    """The ``n`` files mapped by ``pid`` with the most resident memory (MB), and the
    anonymous memory as one line."""
    by_file: dict[str, float] = {}
    name = "[anonymous]"
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
            head = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                path = head[5] if len(head) > 5 else ""
                name = path or "[anonymous]"
            elif head[0] == "Rss:":
                by_file[name] = by_file.get(name, 0.0) + int(head[1]) / 1024
    return sorted(by_file.items(), key=lambda kv: -kv[1])[:n]


async def walk(server: sc.Server, timeout_s: float, views: bool,
               pages: list[str] | None = None) -> list[tuple[str, dict, str]]:
    """One session: every page of the navigation in its default view (then, with ``views``,
    every other lazy view, each in a session of its own, as a link ``?view=`` would open
    it); the server's RSS after each, with what went wrong."""
    s, rows = sc.ProtocolSession(server.ws, timeout_s), []
    await s.connect()
    try:
        first = await s.open("")
        order = list(s.pages) if pages is None else pages  # default: the navigation's order
        for page in order:
            run = first if page == "" else await s.open(page)
            rows.append((page or "(home)", rss(server.proc.pid), problems(run)))
    finally:
        await s.close()
    for page in order if views else ():
        for label in lazy_views(page)[1:]:
            other = sc.ProtocolSession(server.ws, timeout_s)
            await other.connect()
            try:
                run = await other.open(page, urlencode({"view": label}))
            finally:
                await other.close()
            rows.append((f"{page}, view {label}", rss(server.proc.pid), problems(run)))
    return rows


def problems(run: sc.Run) -> str:
    return run.status if run.status != "ok" else "; ".join(run.exceptions)[:80]


def lazy_views(page: str) -> list[str]:
    """The view labels of a page whose views are lazy tabs (``view_tabs`` without
    ``lazy=False``), read from the sources (the ``VIEWS`` dict of its view module) without
    importing them; [] for the others."""
    source = ROOT / "app_pages" / f"{page}.py"
    text = source.read_text() if page and source.is_file() else ""
    module = re.search(r"^from gptviz\.app\.(\w+) import view as (\w+)", text, re.M)
    if not module or not re.search(rf"view_tabs\({module[2]}\.VIEWS", text) \
            or "lazy=False" in text:
        return []
    tree = ast.parse((ROOT / "gptviz" / "app" / module[1] / "view.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "VIEWS"
                                                for t in node.targets):
            return [(k.args[0] if isinstance(k, ast.Call) else k).value  # N_("…") or "…"
                    for k in node.value.keys]
    return []


def torch_alone() -> dict[str, float]:
    """RssAnon/RssFile of ``python -c "import torch"`` (read by the process itself)."""
    out = subprocess.run([sys.executable, "-c", TORCH], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    mb = {f: v / 1024 for f, v in status_kb(out).items()}
    return {**mb, "total": sum(mb.values())}


def measure(args) -> dict:
    os.environ.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    start = time.monotonic()
    rows = [("python -c 'import torch'", torch_alone(), "")]
    bare = sc.Server(BARE)
    try:
        time.sleep(2)
        rows.append(("bare page server, idle", rss(bare.proc.pid), ""))
        run = asyncio.run(_one_visit(bare.ws, args.timeout))
        rows.append(("bare page server, after one visit", rss(bare.proc.pid), run))
    finally:
        bare.stop()
    server = sc.Server()
    top = []
    try:
        time.sleep(2)
        rows.append(("app server, idle", rss(server.proc.pid), ""))
        rows += [(f"app: {p}", m, w) for p, m, w in asyncio.run(
            walk(server, args.timeout, args.views, args.pages))]
        time.sleep(5)
        rows.append(("app server, 5 s after the walk", rss(server.proc.pid), ""))
        top = top_mappings(server.proc.pid, args.top) if args.top else []
    finally:
        server.stop()
    if args.gpt2:
        rows += gpt2_positional(args.timeout)
    return {"rows": rows, "top": top, "wall_s": time.monotonic() - start}


async def _one_visit(ws: str, timeout_s: float) -> str:
    s = sc.ProtocolSession(ws, timeout_s)
    await s.connect()
    try:
        run = await s.open("")
        return "" if run.status == "ok" else run.status
    finally:
        await s.close()


SECTION = "The similarity depends only on i − j"


def gpt2_positional(timeout_s: float) -> list[tuple[str, dict, str]]:
    """The Positional page scrolled to its i − j identity, on the default model and on a
    GPT-2-shaped one, in one session of a server that names the latter (``--gpt2``)."""
    import tempfile

    import torch

    from gptviz.checkpoints.folder import DEFAULT_MODEL
    from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
    from gptviz.model import GPT, GPT_CONFIG_124M, GPTConfig

    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        config = GPTConfig(**{**GPT_CONFIG_124M, "dropout": 0.0, "activation": "gelu_tanh"})
        save_hf_gpt2(Path(tmp) / "gpt2-shaped", GPT(config))
        saved = {k: os.environ.get(k) for k in ("GPTVIZ_MODELS", "GPTVIZ_HF_CACHE")}
        os.environ.update(GPTVIZ_MODELS=tmp, GPTVIZ_HF_CACHE="0")
        try:
            server = sc.Server()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        try:
            time.sleep(2)
            rows = [("GPT-2 server, idle", rss(server.proc.pid), "")]
            rows += asyncio.run(_scroll(server, (DEFAULT_MODEL, "gpt2-shaped"), timeout_s))
        finally:
            server.stop()
    return rows


async def _scroll(server: sc.Server, models: tuple[str, ...], timeout_s: float
                  ) -> list[tuple[str, dict, str]]:
    s, rows = sc.ProtocolSession(server.ws, timeout_s), []
    await s.connect()
    try:
        for model in models:
            for step in ("opened", "scrolled to the i − j identity"):
                peak = sc.Rss(server.proc.pid)
                if step == "opened":
                    run = await s.open("positional", urlencode({"model": model}))
                else:
                    run = await s.send_state(run, "fold", {"reached": True}) or run
                    if not any(SECTION in t for t in run.texts("markdown")):
                        run.status = f"{SECTION!r} not drawn"
                peak.stop()
                now = rss(server.proc.pid)
                rows.append((f"positional, {model}, {step}", now | {"peak": max(
                    peak.peak, now["total"])}, problems(run)))
    finally:
        await s.close()
    return rows


def table(result: dict) -> str:
    lines = ["| process, moment | RSS (MB) | RssAnon | RssFile | peak during (MB) | problems |",
             "|---|---|---|---|---|---|"]
    for label, m, wrong in result["rows"]:
        peak = f"{m['peak']:.0f}" if "peak" in m else ""
        lines.append(f"| {label} | {m['total']:.0f} | {m['RssAnon']:.0f} | "
                     f"{m['RssFile']:.0f} | {peak} | {wrong or ''} |")
    if result["top"]:
        lines += ["", "| largest mappings of the app server at the end | RSS (MB) |", "|---|---|"]
        lines += [f"| {Path(name).name if name.startswith('/') else name} | {mb:.1f} |"
                  for name, mb in result["top"]]
    return "\n".join(lines)


async def _walk_views(server: sc.Server, model: str, prompt: str, timeout_s: float,
                      sampler: Rss) -> tuple[list[tuple], sc.ProtocolSession]:
    """One session walks every view on ``prompt``: (view, RSS after it, the peak sampled
    while it drew, problems) each, and the session, still connected."""
    from benchmarks.server.views import every_view, open_view

    s, rows = sc.ProtocolSession(server.ws, timeout_s), []
    await s.connect()
    for view in every_view():
        sampler.peak = 0.0
        opened = await open_view(s, view, model, prompt)
        after = rss(server.proc.pid)["total"]
        rows.append((view.label, after, max(sampler.peak, after), opened.problems))
    return rows, s


def measure_shaped(args) -> dict:
    """The ``--shaped`` measure (module doc)."""
    import tempfile

    from benchmarks.server.gpt2_shape import write_shaped
    from benchmarks.server.views import gpt2_prompts

    os.environ.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    start = time.monotonic()
    out: dict = {"shape": args.shaped, "rows": [], "sessions": [], "after": []}
    prompts = gpt2_prompts(23, args.sessions)
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_shaped(Path(tmp) / f"{args.shaped}-shaped", args.shaped)
        out["weights_mb"] = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
        model = folder.name
        os.environ.update(GPTVIZ_MODELS=tmp, GPTVIZ_HF_CACHE="0")
        bare = sc.Server(BARE)
        try:
            time.sleep(2)
            asyncio.run(_one_visit(bare.ws, args.timeout))
            out["bare"] = rss(bare.proc.pid)["total"]
        finally:
            bare.stop()
        server = sc.Server()
        sampler = Rss(server.proc.pid)
        try:
            time.sleep(2)
            out["idle"] = rss(server.proc.pid)["total"]
            asyncio.run(_home(server.ws, model, prompts[0], args.timeout))
            time.sleep(2)
            out["model"] = rss(server.proc.pid)["total"]

            async def walks() -> None:
                sessions = []
                try:
                    for i, prompt in enumerate(prompts):
                        rows, s = await _walk_views(server, model, prompt, args.timeout,
                                                    sampler)
                        sessions.append(s)
                        if i == 0:
                            out["rows"] = rows
                        out["sessions"].append({"peak": max(r[2] for r in rows),
                                                "after": rss(server.proc.pid)["total"],
                                                "problems": [r for r in rows if r[3]]})
                finally:
                    for s in sessions:
                        await s.close()

            asyncio.run(walks())
            closed = time.monotonic()
            while time.monotonic() - closed < args.linger:
                time.sleep(args.every)
                out["after"].append((time.monotonic() - closed, rss(server.proc.pid)["total"]))
            out["top"] = top_mappings(server.proc.pid, args.top) if args.top else []
        finally:
            sampler.stop()
            server.stop()
    out["wall_s"] = time.monotonic() - start
    return out


async def _home(ws: str, model: str, prompt: str, timeout_s: float) -> None:
    """Home opened on ``model`` in a session of its own: the model loads."""
    s = sc.ProtocolSession(ws, timeout_s)
    await s.connect()
    try:
        await s.open("", urlencode({"model": model, "prompt": prompt}))
    finally:
        await s.close()


def shaped_table(r: dict) -> str:
    """The ``--shaped`` figures, each also as model + X."""
    m = r["model"]

    def plus(v: float) -> str:
        return f"{v:,.0f} MB (model + {v - m:,.0f})"

    lines = [f"Random {r['shape']}-shaped weights: {r['weights_mb']:,.0f} MB of safetensors. "
             f"\"Model\" = the app server idle after Home opened on it.", "",
             "| process, moment | RSS |", "|---|---|",
             f"| bare one-line page's server after one visit (reference) | {r['bare']:,.0f} MB |",
             f"| app server idle, no model loaded | {r['idle']:,.0f} MB |",
             f"| app server, Home opened on the model (\"model\") | {m:,.0f} MB "
             f"(weights {r['weights_mb']:,.0f} + {m - r['weights_mb']:,.0f}) |"]
    for i, sess in enumerate(r["sessions"], start=1):
        lines.append(f"| session {i}'s walk of every view: peak | {plus(sess['peak'])} |")
        lines.append(f"| after session {i}'s walk ({i} connected) | {plus(sess['after'])} |")
    for i in range(1, len(r["sessions"])):
        grew = r["sessions"][i]["after"] - r["sessions"][i - 1]["after"]
        lines.append(f"| session {i + 1} added | {grew:+,.0f} MB |")
    for t, v in r["after"]:
        lines.append(f"| {t:.0f} s after the last session disconnected | {plus(v)} |")
    lines += ["", "| view (session 1) | peak while it drew (MB) | RSS after (MB) | problems |",
              "|---|---|---|---|"]
    lines += [f"| {label} | {top:,.0f} | {v:,.0f} | {wrong} |"
              for label, v, top, wrong in r["rows"]]
    if r.get("top"):
        lines += ["", "| largest mappings at the end | RSS (MB) |", "|---|---|"]
        lines += [f"| {Path(n).name if n.startswith('/') else n} | {mb:.1f} |"
                  for n, mb in r["top"]]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timeout", type=float, default=60, help="seconds per script run")
    p.add_argument("--top", type=int, default=0, help="list the N largest file mappings")
    p.add_argument("--views", action="store_true", help="also open every lazy view")
    p.add_argument("--pages", nargs="+", help="only these pages (URL paths, '' for Home), "
                   "in this order: to see what one page costs")
    p.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    p.add_argument("--gpt2", action="store_true", help="also the Positional page's i − j "
                   "identity with a GPT-2-shaped model, on a server of its own")
    p.add_argument("--shaped", choices=["distilgpt2", "gpt2", "gpt2-medium"],
                   help="walk every view with a model of this shape (module doc)")
    p.add_argument("--sessions", type=int, default=2, help="with --shaped: sessions walking")
    p.add_argument("--linger", type=float, default=180,
                   help="with --shaped: seconds to watch RSS after the last session leaves")
    p.add_argument("--every", type=float, default=30, help="with --shaped: seconds between reads")
    args = p.parse_args()
    if args.shaped:
        args.timeout = max(args.timeout, 600)
        result = measure_shaped(args)
        print(f"\n# {args.shaped}-shaped model, every view: {machine()}, "
              f"{result['wall_s']:.0f} s\n")
        print(shaped_table(result))
        if args.out:
            args.out.write_text(json.dumps(result))
        return
    result = measure(args)
    print(f"\n# One session, every page: {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, {result['wall_s']:.0f} s\n")
    print(table(result))
    if args.out:
        args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
