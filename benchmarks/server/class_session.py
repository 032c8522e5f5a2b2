"""A class answering at once: N students send their answers within a window, on one server.

    python -m benchmarks.server.class_session [--students 30 100] [--window 10] [--out f.json]

For each N, a new ``streamlit run app.py`` (headless, loopback, its class store in a
temporary data folder) gets a teacher who starts a class in the Lesson, then N students
(websocket sessions, ``class_client.py``) who join from the code. Every page polls as its
browser would (``shared.POLL_S``, ``FOLLOW_S``): the projector's live count, each phone. Then
each student chooses and sends an answer at a random moment of the ``--window``; the
teacher reveals; every student's page shows the outcome. Times are the server's script runs
as the client sees them over loopback (a rerun sent to its script_finished).

Figures: Send (the run that stores an answer) p50/p95/max, beside the same Send by one
student alone on the same server before the crowd (the reference: the ratio is the
result); seconds from the last answer stored to the projector's count showing all N; from
the reveal to the last student's page showing it; the server's RSS idle (class started) and
at the end, per student session; the store's file size per class. Bounded: ``--timeout``
per run, and each phase stops after ``--window`` + 30 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
from pathlib import Path

from benchmarks.common import Rss, Server, machine
from benchmarks.server.class_client import ClassSession, class_code, count, page_text
from benchmarks.server.crowd import pct

MODEL = "mathematics-char"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK
POLL_S, FOLLOW_S = 1.0, 1.5  # gptviz.app.classroom.shared: the projector's and phones' timers


async def _answer(s: ClassSession, run, code: str, qid: int, choice: int) -> tuple:
    run = await s.choose(run, f"class_answer_{code}_{qid}", choice)
    send = await s.press(run, f"class_send_{qid}")
    return send, send.seconds


async def alone(ws: str, code: str, qid: int, reps: int, timeout: float) -> list[float]:
    """One student on the idle server: join, then ``reps`` Sends (each a new choice)."""
    s = ClassSession(ws, timeout)
    await s.connect()
    run = await s.press(await s.open("join", f"code={code}"), "class_join")
    times = []
    for k in range(reps):
        run, seconds = await _answer(s, run, code, qid, k % 2)
        times.append(seconds)
    await s.close()
    return times


async def crowd(ws: str, code: str, qid: int, n: int, args) -> dict:
    """N students polling and answering within the window, the teacher's projector polling;
    then the reveal."""
    teacher = ClassSession(ws, args.timeout, args.teacher_cookies)
    await teacher.connect()
    trun = await teacher.open("lesson", f"model={MODEL}&step=1")
    joined, ready, stop = [], asyncio.Event(), asyncio.Event()
    sends, polls, failures, stored_at, outcome_at = [], [], [], [], []
    runs = [0]  # every script run the crowd asked for (joins, polls, choices, Sends)
    state = {"reveal_at": None}

    async def student(k: int) -> None:
        s = ClassSession(args.ws, args.timeout)
        try:
            await s.connect()
            await asyncio.sleep(k * args.stagger / n)
            run = await s.press(await s.open("join", f"code={code}"), "class_join")
            runs[0] += 2
            joined.append(k)
            if len(joined) == n:
                ready.set()
            await ready.wait()
            answer_at, sent = time.monotonic() + random.uniform(0, args.window), False
            while not stop.is_set():
                if not sent and time.monotonic() >= answer_at:
                    run, seconds = await _answer(s, run, code, qid, k % 3)
                    sends.append(seconds)
                    runs[0] += 2
                    stored_at.append(time.monotonic())
                    sent = "Sent:" in page_text(run)
                    if not sent:
                        failures.append(f"student {k}: {page_text(run)[-120:]!r}")
                        sent = True
                    continue
                await asyncio.sleep(FOLLOW_S)
                run = await s.poll(run)
                polls.append(run.seconds)
                runs[0] += 1
                if run.status != "ok" or run.exceptions:
                    failures.append(f"student {k}: poll {run.status} {run.exceptions[:1]}")
                if state["reveal_at"] and "the model's" in page_text(run):
                    outcome_at.append(time.monotonic() - state["reveal_at"])
                    return
        except Exception as exc:  # a refused connection, a page without its widget
            failures.append(f"student {k}: {type(exc).__name__}: {exc}")
        finally:
            await s.close()

    args.ws = ws
    tasks = [asyncio.create_task(student(k)) for k in range(n)]
    await asyncio.wait_for(ready.wait(), args.stagger + args.timeout)
    start, seen_all, counts = time.monotonic(), None, []
    while time.monotonic() - start < args.window + 30:
        await asyncio.sleep(POLL_S)
        trun = await teacher.poll(trun)
        shown = count(trun)
        counts.append((time.monotonic() - start, shown))
        if shown and shown[0] == n + 1:  # the crowd, and the student alone before it
            seen_all = time.monotonic()
            break
    lag = seen_all - max(stored_at) if seen_all and stored_at else float("nan")
    state["reveal_at"] = time.monotonic()
    trun = await teacher.press(trun, "lesson_reveal")
    reveal_run = trun.seconds
    done = await asyncio.wait(tasks, timeout=30)
    stop.set()
    await asyncio.gather(*done[1], return_exceptions=True)
    await teacher.close()
    return {"n": n, "send": sends, "poll": polls, "count_lag_s": lag, "runs": runs[0],
            "count_shown": counts[-1][1] if counts else None, "reveal_run_s": reveal_run,
            "outcome_s": outcome_at, "failures": failures}


def measure(n: int, args) -> dict:
    with tempfile.TemporaryDirectory() as data:
        os.environ["GPTVIZ_DATA"] = data
        server = Server(log="class-session")
        rss = Rss(server.proc.pid)
        try:
            teacher = ClassSession(server.ws, max(args.timeout, 180))  # a cold first load

            async def start() -> tuple[str, dict]:
                await teacher.connect()
                run = await teacher.open("lesson", f"model={MODEL}")
                if teacher.widget(run, "class_start") is None:
                    raise SystemExit(f"the Lesson shows no 'Start a class' ({run.status}): "
                                     f"{page_text(run)[-300:]}")
                run = await teacher.press(run, "class_start")
                await teacher.close()
                return class_code(run), dict(teacher.cookies)

            code, args.teacher_cookies = asyncio.run(start())
            from gptviz.classroom.sqlite import SQLiteStore

            store = SQLiteStore(Path(data) / "classes.sqlite3")
            qid = store.get(code).question
            reference = asyncio.run(alone(server.ws, code, qid, args.reps, args.timeout))
            idle, cpu0, t0 = rss.now(), cpu_s(server.proc.pid), time.monotonic()
            result = asyncio.run(crowd(server.ws, code, qid, n, args))
            result["cpu_s"] = cpu_s(server.proc.pid) - cpu0
            result["wall_s"] = time.monotonic() - t0
            result["rss_mb"] = {"idle": idle, "peak": rss.peak, "end": rss.now()}
            tally = store.tally(code, qid)
            result["stored"] = tally.answered - 1  # the reference student answered too
            result["reference"] = reference
            store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the answers in the file
            result["db_kb"] = (Path(data) / "classes.sqlite3").stat().st_size / 1024
            store.close()
        finally:
            rss.stop()
            server.stop()
    return result


def report(results: list[dict], args) -> str:
    def three(xs: list[float]) -> str:
        return " | ".join(f"{pct(xs, q):.3f}" for q in (0.5, 0.95, 1.0)) if xs else "– | – | –"
    lines = [f"{machine()}\n", f"Students answer at random moments of a {args.window:g} s "
             f"window; the projector polls every {POLL_S:g} s, each phone every {FOLLOW_S:g} s.\n",
             "| N | Send p50 (s) | p95 | max | alone p50 (s) | p95 ÷ alone p50 | poll p95 (s) "
             "| answers stored | count shows N, s after the last answer | reveal → last "
             "phone (s) | failures |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ref = pct(r["reference"], 0.5)
        lines.append(f"| {r['n']} | {three(r['send'])} | {ref:.3f} | "
                     f"{pct(r['send'], 0.95) / ref:.1f}× | {pct(r['poll'], 0.95):.3f} | "
                     f"{r['stored']} of {r['n']} | {r['count_lag_s']:.2f} | "
                     f"{max(r['outcome_s'], default=float('nan')):.2f} | "
                     f"{len(r['failures'])} |")
    lines += ["", "| N | server CPU, whole class (s) | wall (s) | cores busy | script runs | "
              "CPU per run (ms) | RSS idle, class started (MB) | peak | end | per student "
              "session (MB) | store file per class (kB) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        m = r["rss_mb"]
        lines.append(f"| {r['n']} | {r['cpu_s']:.1f} | {r['wall_s']:.0f} | "
                     f"{r['cpu_s'] / r['wall_s']:.2f} | {r['runs']} | "
                     f"{1e3 * r['cpu_s'] / max(1, r['runs']):.1f} | {m['idle']:.0f} | "
                     f"{m['peak']:.0f} | {m['end']:.0f} | "
                     f"{(m['end'] - m['idle']) / r['n']:.2f} | {r['db_kb']:.0f} |")
    lines += [f"- N={r['n']}: {f}" for r in results for f in r["failures"][:5]]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, nargs="+", default=[30, 100])
    p.add_argument("--window", type=float, default=10.0, help="seconds in which all answer")
    p.add_argument("--stagger", type=float, default=10.0, help="seconds over which they join")
    p.add_argument("--reps", type=int, default=10, help="Sends of the student alone")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per script run")
    p.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    args = p.parse_args()
    os.environ.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    random.seed(0)
    results = []
    for n in args.students:
        results.append(measure(n, args))
        print(f"N={n} done", flush=True)
    print(f"\n# A class answering at once: N students within {args.window:g} s\n")
    print(report(results, args))
    if args.out:
        args.out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
