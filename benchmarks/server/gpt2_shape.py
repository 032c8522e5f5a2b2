"""A GPT-2-small-shaped model (random weights, the real shapes: 124M parameters) saved as a
Hugging Face folder, beside the bundled default model, in one run: load time, RSS, the
forward pass and run_with_cache on 64 tokens; with --pages, each page's warm rerun.

    python -m benchmarks.server.gpt2_shape [--repeat 5] [--pages]
    python -m benchmarks.server.gpt2_shape --views [--reps 3] [--shape gpt2] [--out f.json]

Each model is measured in a fresh Python process (so RSS is its own): RSS after the
imports, after the load, and the peak. Times are medians; the machine's other load
shows in them, so compare the two rows of one run rather than absolute times.

``--views`` (issue 40): every view of the app (``views.every_view``: each lazy tab, each
Lesson step, each fold reached) served by ``streamlit run app.py`` naming the model, timed
from the rerun to script_finished over Streamlit's websocket protocol, at 23 and at 128
tokens of GPT-2's encoding. Per view: the first draw of a new prompt (``--reps`` prompts,
each opened once, median and max) and the warm rerun (the same URL again, median), the
first draw of the server's very first prompt apart (it pays the one-off computations that
read the whole model or vocabulary). Beside them, in the same run: one ``transformers``
``GPT2LMHeadModel`` forward pass (built from a config: random weights, no download) of
prompts of the same lengths, a bare one-line Streamlit page's first load and rerun on the
same protocol, and, in a fresh process, the model's load time beside each one-off
computation (timed on the functions the app caches).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, machine, proc_kb

PAGES = ["home", "embeddings", "positional", "attention", "block", "generation", "lesson",
         "learning", "training"]


# name -> (layers, heads, d_model): the GPT-2 family's shapes, 50,257 tokens, context 1,024
SHAPES = {"distilgpt2": (6, 12, 768), "gpt2": (12, 12, 768), "gpt2-medium": (24, 16, 1024)}


def write_shaped(folder: Path, shape: str = "gpt2", seed: int = 0) -> Path:
    """A Hugging Face GPT-2 folder of ``shape``'s sizes with random weights (seed ``seed``),
    as ``hf download`` would leave the real one: config.json and model.safetensors."""
    import torch

    from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
    from gptviz.model import GPT, GPT_CONFIG_124M, GPTConfig

    layers, heads, d = SHAPES[shape]
    torch.manual_seed(seed)
    config = GPTConfig(**{**GPT_CONFIG_124M, "dropout": 0.0, "activation": "gelu_tanh",
                          "n_layer": layers, "n_head": heads, "d_model": d})
    return save_hf_gpt2(folder, GPT(config))


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (VmRSS) or at its peak since exec (VmHWM), MB."""
    return proc_kb(field) / 1024


def measure(path: str, repeat: int) -> dict:
    """One model, in this (fresh) process."""
    import torch

    from gptviz.checkpoints.folder import load_checkpoint

    before = rss_mb()
    t0 = time.perf_counter()
    ckpt = load_checkpoint(path)
    load_s = time.perf_counter() - t0
    loaded = rss_mb()
    ids = torch.randint(0, ckpt.config.vocab_size, (1, 64))
    times: dict[str, list[float]] = {"forward": [], "run_with_cache": []}
    with torch.no_grad():
        for _ in range(repeat):
            for name, run in (("forward", lambda: ckpt.model(ids)),
                              ("run_with_cache", lambda: ckpt.model.run_with_cache(ids))):
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
    return {"params": ckpt.model.num_params(), "load_s": load_s, "rss_imports_mb": before,
            "rss_loaded_mb": loaded, "rss_peak_mb": rss_mb("VmHWM"),
            "threads": torch.get_num_threads(),
            **{f"{k}_ms": 1000 * statistics.median(v) for k, v in times.items()}}


def page_reruns(model: str, models_dir: str | None) -> dict[str, float]:
    """Each page's warm rerun (the second run of the same script), in ms, through AppTest."""
    if models_dir:
        os.environ["GPTVIZ_MODELS"] = models_dir
    os.environ["GPTVIZ_HF_CACHE"] = "0"
    from tests.helpers import app_test

    out = {}
    for page in PAGES:
        at = app_test(model=model, timeout=600)
        if page != "home":
            at.switch_page(f"app_pages/{page}.py")
        at.run()  # cold: the model, the forward pass, the figures
        t0 = time.perf_counter()
        at.run()
        out[page] = 1000 * (time.perf_counter() - t0)
        if at.exception:
            out[page] = float("nan")
    return out


def one_offs(path: str) -> dict:
    """In this (fresh) process: the model's load time, then each computation the app makes
    once per server and model, on the functions its caches call."""
    import numpy as np
    import torch

    from gptviz.analysis import learning
    from gptviz.app.attention.taxonomy import _induction
    from gptviz.app.embeddings import figures as ve
    from gptviz.app.embeddings.untrained import fresh_embedding, fresh_rows
    from gptviz.app.learning.controls import median_position, window_length
    from gptviz.app.learning.step import ETAS
    from gptviz.app.shared.cache import _vocab_pca, vocab_labels
    from gptviz.checkpoints.folder import freeze, load_checkpoint, training_seed
    from gptviz.data import read_corpus

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    ckpt = load_checkpoint(path)
    freeze(ckpt.model)
    out["load the model"] = time.perf_counter() - t0

    def timed(name: str, fn) -> object:
        t = time.perf_counter()
        result = fn()
        out[name] = time.perf_counter() - t
        return result

    timed("vocabulary labels (every view's token names)",
          lambda: vocab_labels.__wrapped__(ckpt))
    timed("Embeddings: PCA of E (|V| rows)", lambda: _vocab_pca.__wrapped__(ckpt))
    fe = timed("Embeddings: the untrained E located in its random stream",
               lambda: fresh_embedding(ckpt.config, training_seed(ckpt.card)))
    timed("Embeddings: the untrained rows drawn", lambda: fresh_rows(
        fe, ve.drawn_rows(fe.rows)))
    timed("Attention: induction test of every head (taxonomy)",
          lambda: _induction.__wrapped__(ckpt))
    ids = ckpt.tokenizer.encode(read_corpus("sample"))
    window = learning.take_window(ids, 0, window_length(ckpt.model))
    with torch.no_grad():
        position = median_position(np.asarray(learning.window_losses(ckpt.model, window)))
    timed("Learning: the microscope of the default window", lambda: learning.microscope(
        ckpt.model, window, position, ETAS[1:]))
    out["peak RSS (MB)"] = rss_mb("VmHWM")
    return out


def hf_forward(shape: str, lengths: list[int], reps: int) -> dict[int, float]:
    """Median seconds of one ``transformers`` GPT-2 forward pass (``GPT2LMHeadModel`` from a
    config of ``shape``'s sizes, random weights, eval, no gradients) of ``n`` tokens, for
    each ``n`` in ``lengths``: the reference every view is read against."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    layers, heads, d = SHAPES[shape]
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=layers, n_head=heads, n_embd=d)).eval()
    out = {}
    with torch.no_grad():
        for n in lengths:
            ids = torch.randint(0, 50257, (1, n))
            model(ids)  # warm-up
            times = []
            for _ in range(reps):
                t = time.perf_counter()
                model(ids)
                times.append(time.perf_counter() - t)
            out[n] = statistics.median(times)
    return out


async def _bare_runs(ws: str, reps: int) -> dict[str, float]:
    """The bare page's first load (a new session) and rerun, median seconds of ``reps``."""
    from benchmarks.server import streamlit_client as sc

    first, warm = [], []
    for _ in range(reps):
        s = sc.ProtocolSession(ws, 60)
        await s.connect()
        try:
            first.append((await s.open("")).seconds)
            warm.append((await s.open("")).seconds)
        finally:
            await s.close()
    return {"first": statistics.median(first), "warm": statistics.median(warm)}


async def _view_runs(ws: str, model: str, prompt: str, pages: list[str] | None = None
                     ) -> dict[str, dict]:
    """One session opens every view (of ``pages``: all by default) on ``prompt`` twice:
    {view: first, warm, problems}."""
    from benchmarks.server import streamlit_client as sc
    from benchmarks.server.views import every_view, open_view

    s, out = sc.ProtocolSession(ws, 900), {}
    await s.connect()
    try:
        for view in every_view(pages):
            first = await open_view(s, view, model, prompt)
            warm = await open_view(s, view, model, prompt)
            out[view.label] = {
                "first": first.seconds + (first.fold.seconds if first.fold else 0.0),
                "warm": warm.seconds + (warm.fold.seconds if warm.fold else 0.0),
                "problems": "; ".join(x for x in (first.problems, warm.problems) if x)}
    finally:
        await s.close()
    return out


def views(args) -> dict:
    """The ``--views`` measure (module doc)."""
    import asyncio

    from benchmarks.server import streamlit_client as sc
    from benchmarks.server.session_rss import BARE
    from benchmarks.server.views import gpt2_prompts

    os.environ.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    result: dict = {"machine": machine(), "shape": args.shape, "reps": args.reps}
    lengths = {23: gpt2_prompts(23, args.reps + 1), 128: gpt2_prompts(128, args.reps)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_shaped(Path(tmp) / f"{args.shape}-shaped", args.shape)
        result["one_offs"] = child(["--one-offs", str(folder)])
        result["hf_before"] = hf_forward(args.shape, list(lengths), 5)
        with sc.Server(BARE) as bare:
            result["bare"] = asyncio.run(_bare_runs(bare.ws, 5))
        os.environ.update(GPTVIZ_MODELS=tmp, GPTVIZ_HF_CACHE="0")
        runs: dict[int, list[dict]] = {n: [] for n in lengths}
        with sc.Server() as server:
            for n, prompts in lengths.items():
                for prompt in prompts:
                    runs[n].append(asyncio.run(_view_runs(server.ws, folder.name, prompt,
                                                          args.only)))
                    print(f"{n} tokens: a prompt walked, {machine()}", file=sys.stderr)
        result["runs"] = runs
        result["hf_after"] = hf_forward(args.shape, list(lengths), 5)
    result["load_after"] = os.getloadavg()[0]
    return result


def views_table(r: dict) -> str:
    """The ``--views`` tables: per view, seconds and ratios to the references."""
    hf = {int(n): statistics.median([r["hf_before"][n], r["hf_after"][n]])
          for n in r["hf_before"]}
    bare = r["bare"]
    o = r["one_offs"]
    lines = [r["machine"] + f" (load {r['load_after']:.1f} at the end)", "",
             "| one-off, once per server and model | s | × loading the model |",
             "|---|---|---|"]
    load = o["load the model"]
    for name, v in o.items():
        if name != "peak RSS (MB)":
            lines.append(f"| {name} | {v:.2f} | {v / load:.2f}× |")
    lines += ["", "| reference, same run | 23 tokens | 128 tokens |", "|---|---|---|",
              f"| transformers GPT2LMHeadModel forward (before / after the walks) | "
              f"{r['hf_before'][23] * 1e3:.0f} / {r['hf_after'][23] * 1e3:.0f} ms | "
              f"{r['hf_before'][128] * 1e3:.0f} / {r['hf_after'][128] * 1e3:.0f} ms |",
              f"| bare one-line page: first load / rerun | {bare['first'] * 1e3:.0f} / "
              f"{bare['warm'] * 1e3:.0f} ms | |", ""]
    for n, walks in r["runs"].items():
        n = int(n)
        server_first, rest = (walks[0], walks[1:]) if n == 23 else ({}, walks)
        lines += [f"**{n} tokens** ({len(rest)} prompts; × HF = over the transformers "
                  f"forward of {n} tokens, {hf[n] * 1e3:.0f} ms; × bare = over the bare "
                  "page's first load)", "",
                  "| view | first draw, median / max (s) | × HF | × bare | warm (s) | × HF |"
                  + (" server's first prompt (s) |" if server_first else "") + " problems |",
                  "|---|---|---|---|---|---|" + ("---|" if server_first else "") + "---|"]
        for label in rest[0]:
            firsts = [w[label]["first"] for w in rest]
            warm = statistics.median([w[label]["warm"] for w in walks])
            med = statistics.median(firsts)
            wrong = "; ".join(sorted({w[label]["problems"] for w in walks} - {""}))[:80]
            lines.append(
                f"| {label} | {med:.2f} / {max(firsts):.2f} | {med / hf[n]:.0f}× | "
                f"{med / bare['first']:.1f}× | {warm:.2f} | {warm / hf[n]:.0f}× |"
                + (f" {server_first[label]['first']:.2f} |" if server_first else "")
                + f" {wrong} |")
        lines.append("")
    return "\n".join(lines)


def child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "benchmarks.server.gpt2_shape", *args],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pages", action="store_true", help="also each page's warm rerun")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child: measure this model
    parser.add_argument("--pages-of", nargs=2, help=argparse.SUPPRESS)  # a child: name, dir
    parser.add_argument("--views", action="store_true", help="every view, 23 and 128 tokens")
    parser.add_argument("--reps", type=int, default=3, help="with --views: prompts per length")
    parser.add_argument("--shape", choices=list(SHAPES), default="gpt2")
    parser.add_argument("--out", type=Path, help="with --views: also write the JSON here")
    parser.add_argument("--only", nargs="+", metavar="PAGE",
                        help="with --views: only these pages' views (URL paths)")
    parser.add_argument("--one-offs", help=argparse.SUPPRESS)  # a child: time them
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.repeat)))
        return
    if args.one_offs:
        print(json.dumps(one_offs(args.one_offs)))
        return
    if args.views:
        result = views(args)
        print(views_table(result))
        if args.out:
            args.out.write_text(json.dumps(result))
        return
    if args.pages_of:
        name, folder = args.pages_of
        print(json.dumps(page_reruns(name, folder or None)))
        return

    import torch

    from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models
    from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
    from gptviz.model import GPT, GPT_CONFIG_124M, GPTConfig

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        torch.manual_seed(0)
        config = GPTConfig(**{**GPT_CONFIG_124M, "dropout": 0.0, "activation": "gelu_tanh"})
        save_hf_gpt2(Path(tmp) / "gpt2-shaped", GPT(config))
        size = sum(f.stat().st_size for f in (Path(tmp) / "gpt2-shaped").iterdir()) / 1e6
        print(f"wrote a random GPT-2-small-shaped Hugging Face folder ({size:.0f} MB) in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
        print(machine())
        rows = {DEFAULT_MODEL: child(["--one", str(bundled_models()[DEFAULT_MODEL]),
                                      "--repeat", str(args.repeat)]),
                "gpt2-shaped": child(["--one", str(Path(tmp) / "gpt2-shaped"),
                                      "--repeat", str(args.repeat)])}
        print("| model | params | load (s) | RSS after imports (MB) | RSS loaded (MB) | "
              "peak RSS (MB) | forward, 64 tokens (ms) | run_with_cache, 64 tokens (ms) |")
        print("|---|---|---|---|---|---|---|---|")
        for name, r in rows.items():
            print(f"| {name} | {r['params'] / 1e6:.1f}M | {r['load_s']:.2f} | "
                  f"{r['rss_imports_mb']:.0f} | {r['rss_loaded_mb']:.0f} | "
                  f"{r['rss_peak_mb']:.0f} | {r['forward_ms']:.1f} | "
                  f"{r['run_with_cache_ms']:.1f} |")
        print(f"\ntorch threads: {rows['gpt2-shaped']['threads']}; medians of {args.repeat}.")
        if args.pages:
            reruns = {DEFAULT_MODEL: child(["--pages-of", DEFAULT_MODEL, ""]),
                      "gpt2-shaped": child(["--pages-of", "gpt2-shaped", tmp])}
            print("\n| page | warm rerun, " + " (ms) | ".join(reruns) + " (ms) |")
            print("|---|---|---|")
            for page in PAGES:
                print(f"| {page} | " + " | ".join(f"{r[page]:.0f}" for r in reruns.values())
                      + " |")


if __name__ == "__main__":
    main()
