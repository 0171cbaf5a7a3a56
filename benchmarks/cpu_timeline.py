#!/usr/bin/env python3
"""How many cores a command and its forked children keep busy over time (for finding where one core
works alone while another waits, e.g. in a `c3prof report` on two cores).

Runs the command, samples the CPU time (user + system, from /proc) of the command's process and of
all its descendants every ``--every`` seconds, and prints per ``--bucket`` seconds how many cores
the parent and the children used, then the stretches where the children used less than
``--alone`` of a core (one core working alone). Linux only.

The exit status is the command's. ``--cpus LIST`` pins the command (and so its children) to those
CPUs; ``--sampler-cpu N`` pins this sampler to another CPU, so that its scans of /proc take no time
from the command (session 24's device timelines ran the sampler on the report's own two CPUs).

    python benchmarks/cpu_timeline.py --cpus 0,1 --sampler-cpu 2 -- python -m c3prof report T --json O -q
    python benchmarks/cpu_timeline.py --json timeline.json -- CMD ARGS...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, user + system clock ticks) of every process now."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:   # gone meanwhile
            continue
        out[int(name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return out


def descendants(root: int, procs: dict[int, tuple[int, int]]) -> set[int]:
    """``root`` and every process below it."""
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, (parent, _) in procs.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def sample(cmd: list[str], every: float, cpus: set[int] | None) -> tuple[list[tuple[float, float, float]], float, int]:
    """(seconds since start, parent CPU seconds, children CPU seconds) at each sample, the wall
    time and the command's exit status. A child's CPU time is kept after it exits (its last sample)."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, preexec_fn=pin)
    seen: dict[int, int] = {}
    samples = []
    while proc.poll() is None:
        time.sleep(every)
        procs = cpu_ticks()
        for pid in descendants(proc.pid, procs):
            if pid in procs:
                seen[pid] = procs[pid][1]
        parent = seen.get(proc.pid, 0)
        samples.append((time.perf_counter() - t0, parent / TICK, (sum(seen.values()) - parent) / TICK))
    return samples, time.perf_counter() - t0, proc.returncode


def buckets(samples: list[tuple[float, float, float]], width: float) -> list[tuple[float, float, float]]:
    """(end of the bucket, cores the parent used, cores the children used) per ``width`` seconds."""
    out, last = [], (0.0, 0.0, 0.0)
    for t, parent, children in samples:
        if t - last[0] >= width:
            span = t - last[0]
            out.append((t, (parent - last[1]) / span, (children - last[2]) / span))
            last = (t, parent, children)
    return out


def alone(rows: list[tuple[float, float, float]], threshold: float) -> list[tuple[float, float]]:
    """(start, end) of the stretches of buckets where the children used less than ``threshold`` cores."""
    spans: list[tuple[float, float]] = []
    previous = 0.0
    open_at: float | None = None
    for end, _, children in rows:
        if children < threshold and open_at is None:
            open_at = previous
        elif children >= threshold and open_at is not None:
            spans.append((open_at, previous))
            open_at = None
        previous = end
    if open_at is not None:
        spans.append((open_at, previous))
    return spans


def _cpu_list(text: str) -> set[int]:
    return {int(c) for c in text.split(",")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--cpus", type=_cpu_list, metavar="LIST", help="pin the command to these CPUs (0,1)")
    ap.add_argument("--sampler-cpu", type=int, metavar="N", help="pin this sampler to CPU N")
    ap.add_argument("--every", type=float, default=0.02, help="seconds between samples")
    ap.add_argument("--bucket", type=float, default=0.1, help="seconds per printed line")
    ap.add_argument("--alone", type=float, default=0.2, help="children below this many cores: one core alone")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write the samples and stretches as JSON")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="the command (after --)")
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command given (put it after --)")
    if args.sampler_cpu is not None:
        os.sched_setaffinity(0, {args.sampler_cpu})
    samples, wall, status = sample(cmd, args.every, args.cpus)
    rows = buckets(samples, args.bucket)
    spans = alone(rows, args.alone)
    cpu = samples[-1][1] + samples[-1][2] if samples else 0.0
    print(f"wall {wall:.2f} s, CPU {cpu:.2f} s (parent and children, as last sampled)", file=sys.stderr)
    for end, parent, children in rows:
        print(f"{end:6.2f} s  parent {parent:4.2f}  children {children:4.2f}", file=sys.stderr)
    print("one core alone (children < {:.2f} cores): {}".format(
        args.alone, ", ".join(f"{a:.2f}-{b:.2f} s" for a, b in spans) or "never"), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"cmd": cmd, "wall_s": wall, "every_s": args.every,
                                         "cpus": sorted(args.cpus or []), "sampler_cpu": args.sampler_cpu,
                                         "exit_status": status, "samples": samples, "alone": spans},
                                        indent=1) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
