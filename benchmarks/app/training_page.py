"""The Training page: the "30-second demo" in the running app, and the app's memory.

    python -m benchmarks.app.training_page      # app + Chromium, then the same run alone
    python -m benchmarks.app.training_page --preset "induction heads"

It starts ``streamlit run app.py``, opens the Home page in headless Chromium (the
default model loads), waits, and reads the server's resident memory (VmRSS of the
streamlit process): **idle**. It opens the Training page, presses Start with the
preset, samples VmRSS every 0.2 s until the page says "Finished": **while training**
(peak) and **after**. It times the run as a user sees it (click to "Finished"),
reads the final validation loss, downloads the checkpoint from the page and writes
1,000 characters with it (T = 0.8, seed 0): the share of its words (letters only)
that occur in the corpus says how word-like the samples are. Last, the same run
without the app (``Trainer`` in this process, one thread) gives the ratio of what
serving the page costs. The browser runs on the same machine, as a user would on a
classroom laptop.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import Server, chromium, machine, proc_kb
from gptviz.checkpoints.folder import load_checkpoint_zip
from gptviz.data import read_corpus
from gptviz.generation.sampling import encode_prompt, generate
from gptviz.tokenizers import train_tokenizer
from gptviz.train.device import pick_dtype
from gptviz.train.plan import PRESETS, default_prompt, run_config, synthetic_text
from gptviz.train.trainer import Trainer
from tests.helpers import unfold, wait_for_app


def rss_mb(pid: int) -> float:
    """Resident memory of a process from /proc (MB = 10^6 bytes)."""
    return proc_kb("VmRSS", pid) * 1024 / 1e6


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def word_likeness(text: str, corpus: str) -> float:
    """Share of the generated words (runs of letters) that are words of the corpus."""
    vocab = set(re.findall(r"[^\W\d_]+", corpus.lower()))
    words = re.findall(r"[^\W\d_]+", text.lower())
    return sum(w in vocab for w in words) / max(1, len(words))


def in_app(preset: str, corpus: str) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {}
    with Server() as server, sync_playwright() as pw:
        url, pid = server.url, server.proc.pid
        browser = chromium(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.goto(url)
        wait_for_app(page)
        page.get_by_text("Model loaded").first.wait_for(timeout=120_000)
        time.sleep(5)
        out["rss_idle"] = rss_mb(pid)
        page.goto(f"{url}/training")
        wait_for_app(page)
        page.get_by_role("button", name=preset).click()
        wait_for_app(page)
        time.sleep(2)
        out["rss_page"] = rss_mb(pid)
        peak, done = [out["rss_page"]], threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak.append(rss_mb(pid))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.monotonic()
        page.get_by_role("button", name="Start training").click()
        page.wait_for_function(
            """() => [...document.querySelectorAll('[data-testid="stProgress"]')]
                     .some(e => /step [1-9]/.test(e.innerText))""", timeout=120_000)
        out["first_step_s"] = time.monotonic() - t0
        page.get_by_text("Finished after").first.wait_for(timeout=600_000)
        out["wall_s"] = time.monotonic() - t0
        done.set()
        sampler.join()
        out["rss_peak"] = max(peak)
        message = page.get_by_text("Finished after").first.inner_text()
        out["message"] = message
        out["val_loss"] = float(re.search(r"validation loss ([\d.]+)", message).group(1))
        unfold(page)  # the new model's zip and its text are below the fold
        wait_for_app(page)
        time.sleep(2)
        out["rss_after"] = rss_mb(pid)
        with page.expect_download() as info:
            page.get_by_role("button", name=re.compile("^Download trained-")).click()
        with tempfile.TemporaryDirectory() as tmp:
            info.value.save_as(Path(tmp) / "model.zip")
            ckpt = load_checkpoint_zip((Path(tmp) / "model.zip").read_bytes())
        out["closed_tab_cpu"] = close_mid_training(browser, url, pid)
        browser.close()
    prompt = default_prompt(corpus)
    ids = encode_prompt(ckpt.tokenizer, prompt)
    text = ckpt.tokenizer.decode(generate(ckpt.model, ids, 1000, temperature=0.8, seed=0))
    out["sample"] = text[:300]
    out["word_likeness"] = word_likeness(text[len(prompt):], corpus)
    out["train_s"] = ckpt.card["elapsed_s"]
    return out


def close_mid_training(browser, url: str, pid: int) -> tuple[float, float]:
    """A second user starts training and closes the tab: the server's CPU share in the
    3 s before closing and in 3 s starting 2 s after (≈ 0 once the thread has stopped)."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{url}/training")
    wait_for_app(page)
    page.get_by_role("button", name="Start training").click()
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stProgress"]')]
                 .some(e => /step [1-9]/.test(e.innerText))""", timeout=120_000)
    c0 = cpu_s(pid)
    time.sleep(3)
    before = (cpu_s(pid) - c0) / 3
    ctx.close()
    time.sleep(2)
    c0 = cpu_s(pid)
    time.sleep(3)
    return before, (cpu_s(pid) - c0) / 3


def alone(preset: str, corpus: str) -> dict:
    """The same run with no app: Trainer in this process, one thread."""
    import torch

    torch.set_num_threads(1)
    spec = PRESETS[preset]
    tok = train_tokenizer(spec.tokenizer, corpus, spec.vocab_size or None)
    run = run_config(spec, tok.vocab_size, pick_dtype())
    t0 = time.monotonic()
    result = Trainer(run, tok.encode(corpus)).train()
    return {"wall_s": time.monotonic() - t0, "train_s": result.elapsed_s,
            "val_loss": result.evals[-1].val_loss}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="30-second demo", choices=list(PRESETS))
    p.add_argument("--skip-alone", action="store_true")
    a = p.parse_args()
    spec = PRESETS[a.preset]
    if spec.corpus.startswith("synthetic:"):
        corpus = synthetic_text(spec.corpus.split(":", 1)[1])
    else:
        corpus = read_corpus(spec.corpus)
    print(f"preset {a.preset!r}: {spec}")
    print(f"{machine()}; load average before: {os.getloadavg()}")
    app = in_app(a.preset, corpus)
    print(f"\nin the app (click -> 'Finished'):  {app['wall_s']:.1f} s wall, first step after "
          f"{app['first_step_s']:.1f} s, {app['train_s']:.1f} s of optimizer steps")
    print(f"  {app['message']}")
    print(f"  word-likeness of 1,000 sampled characters: {app['word_likeness']:.0%} of words "
          "are corpus words")
    print(f"  sample: {app['sample']!r}")
    print(f"memory (VmRSS of the streamlit process): idle with the default model "
          f"{app['rss_idle']:.0f} MB · Training page open {app['rss_page']:.0f} MB · peak while "
          f"training {app['rss_peak']:.0f} MB · after {app['rss_after']:.0f} MB")
    before, after = app["closed_tab_cpu"]
    print(f"a second user closes the tab mid-training: server CPU {before:.0%} of a core "
          f"while training, {after:.0%} two seconds after the tab closed")
    if not a.skip_alone:
        solo = alone(a.preset, corpus)
        print(f"\nalone (no app, same config): {solo['wall_s']:.1f} s wall, "
              f"{solo['train_s']:.1f} s of steps, val loss {solo['val_loss']:.3f}")
        print(f"app / alone, optimizer time: {app['train_s'] / solo['train_s']:.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
