"""A lecture hall under a crowd: the same students against 1, 2, 4 and 8 replicas.

    python -m benchmarks.server.hall --replicas 1 2 4 8 --students 300 --stagger 60 --think 2

For each replica count, in one run: ``deploy/serve.py``'s hall (Redis, the replicas, HAProxy
with sticky cookies) on free loopback ports with a fresh run folder; one warm-up walk on each
replica at its own address (every replica has loaded its models before the class comes);
then ``--students`` students through the proxy (``crowd.students_at``: each keeps the
proxy's cookie, starts within ``--stagger`` s and waits ``--think`` s between actions). The
hall is stopped before the next count starts.

Figures: each step's script-run time (from the rerun sent to script_finished, timed by the
student on loopback: the server's time for that step, waiting included) as p50, p95 and max;
failures (a run that timed out or failed, an exception on a page, lost clicks); students
that reached two replicas (the stickiness broken); each replica's RSS (idle after the
warm-up, peak) and Redis's and the proxy's; the share of a core the load generator (this
process, pinned to the last core where there are two or more) used; the load average.
The p95 over all steps of each count is set beside one replica's, measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import Rss, machine
from benchmarks.server.crowd import pct, pin, prompts, steps_table, students_at, walk
from deploy.serve import Hall, free_port


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive ports free on loopback now."""
    for _ in range(200):
        first = free_port()
        if all(free_port_at(port) for port in range(first, first + n)):
            return first
    raise SystemExit(f"no {n} consecutive free ports")


def free_port_at(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def one_hall(replicas: int, texts: list[str], args, deadline: float) -> dict:
    """Start a hall of ``replicas``, warm every replica, send the students, stop it."""
    with tempfile.TemporaryDirectory() as run:
        hall = Hall(replicas, Path(run), "127.0.0.1", free_port(), redis_port=free_port(),
                    first_port=free_ports(replicas), restart=False, quiet=True)
        started = time.monotonic()
        with hall:
            start_s = time.monotonic() - started
            pids = {name: proc.pid for name, proc in hall.procs.items()}
            rss = {name: Rss(pid) for name, pid in pids.items()}
            try:
                async def warm() -> None:
                    await asyncio.gather(*(walk(f"ws://{b.host}:{b.port}", texts[-1],
                                                args.timeout, deadline) for b in hall.backends))
                asyncio.run(warm())
                time.sleep(3)
                idle = {name: r.now() for name, r in rss.items()}
                for r in rss.values():
                    r.peak = 0.0
                crowd = students_at(hall.url, args.students, texts, args, deadline)
                peak = {name: r.peak for name, r in rss.items()}
            finally:
                for r in rss.values():
                    r.stop()
    names = [b.name for b in hall.backends]
    return {**crowd, "replicas": replicas, "start_s": start_s,
            "rss_idle": {n: idle[n] for n in names}, "rss_peak": {n: peak[n] for n in names},
            "redis_mb": peak["redis"], "proxy_mb": peak["proxy"], "reached": crowd["replicas"]}


def summary(results: list[dict]) -> str:
    """One row per replica count, its overall p95 set beside one replica's."""
    every = {r["replicas"]: [t for ts in r["runs"].values() for t in ts] for r in results}
    one = pct(every.get(1, []), 0.95)
    lines = ["| replicas | students | script runs | failures | on two replicas | p50 all steps "
             "(s) | p95 | × 1 replica's p95 | max | RSS per replica idle (MB) | peak (mean · "
             "max) | Redis · proxy peak (MB) | generator CPU (share of a core) | load avg "
             "before → after | wall (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        xs = every[r["replicas"]]
        peaks = list(r["rss_peak"].values())
        lines.append(
            f"| {r['replicas']} | {r['n']} | {len(xs)} | {len(r['failures'])} | "
            f"{len(r['moved'])} | {pct(xs, 0.5):.2f} | {pct(xs, 0.95):.2f} | "
            f"{pct(xs, 0.95) / one:.2f}× | {max(xs, default=float('nan')):.2f} | "
            f"{statistics.mean(r['rss_idle'].values()):.0f} | {statistics.mean(peaks):.0f} · "
            f"{max(peaks):.0f} | {r['redis_mb']:.0f} · {r['proxy_mb']:.0f} | "
            f"{r['cpu_share']:.2f} | {r['load'][0]:.1f} → {r['load'][1]:.1f} | "
            f"{r['wall_s']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--students", type=int, default=300)
    p.add_argument("--stagger", type=float, default=60, help="seconds over which they start")
    p.add_argument("--think", type=float, default=2, help="seconds between a student's actions")
    p.add_argument("--timeout", type=float, default=120, help="seconds per script run")
    p.add_argument("--budget", type=float, default=3600, help="seconds for the whole run")
    p.add_argument("--cpu", type=int, help="the load generator's core (default: the last)")
    p.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    args = p.parse_args()
    os.environ.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    core = pin(args.cpu)
    texts, deadline = prompts(), time.monotonic() + args.budget
    if args.students > len(texts) - 1:
        texts = (texts * (args.students // len(texts) + 2))[:args.students + 1]
    print(machine(), flush=True)
    results = []
    for replicas in args.replicas:
        if time.monotonic() > deadline:
            print(f"{replicas} replicas skipped: the {args.budget:.0f} s budget is spent")
            continue
        results.append(one_hall(replicas, texts, args, deadline))
        r = results[-1]
        print(f"{replicas} replicas: {len(r['failures'])} failures, wall {r['wall_s']:.0f} s, "
              f"load {r['load'][1]:.1f}", flush=True)
        if args.out:
            args.out.write_text(json.dumps(results))
    print(f"\n# A lecture hall: {args.students} students through HAProxy, started over "
          f"{args.stagger:.0f} s, {args.think:g} s between actions\n\n{machine()} · load "
          f"generator pinned to core {core}; the hall's processes on every core\n")
    print(summary(results) + "\n")
    print(steps_table(results, "replicas"))
    for r in results:
        for kind in ("failures", "moved"):
            print("".join(f"- {r['replicas']} replicas, {kind}: {x}\n" for x in r[kind][:8]),
                  end="")


if __name__ == "__main__":
    main()
