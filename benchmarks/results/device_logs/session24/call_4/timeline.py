"""Run a command and sample, every 20 ms, the CPU time of it (the parent) and of its descendants
(the forked readers and analysers), from /proc; print per 0.1 s how many cores each kept busy,
with the command's stage marks (c3prof's stderr stage lines are off with -q; the marks come from
report_stages-like wrappers when the command is marks.py). Linux only.

    python timeline.py CMD ARGS...
"""
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _cpu_by_pid() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, user + system ticks) of every process."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(p)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
    return out


t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:])
seen: dict[int, int] = {}
rows = []
while proc.poll() is None:
    time.sleep(0.02)
    per = _cpu_by_pid()
    tree, grew = {proc.pid}, True
    while grew:
        grew = False
        for p, (pp, _) in per.items():
            if pp in tree and p not in tree:
                tree.add(p)
                grew = True
    for p in tree:
        if p in per:
            seen[p] = per[p][1]
    parent = seen.get(proc.pid, 0)
    rows.append((time.perf_counter() - t0, parent / TICK, (sum(seen.values()) - parent) / TICK))
print(f"wall {time.perf_counter() - t0:.2f} s, cpu {sum(seen.values()) / TICK:.2f} s", file=sys.stderr)
last = (0.0, 0.0, 0.0)
for t, a, k in rows:
    if t - last[0] >= 0.1:
        dt = t - last[0]
        print(f"{t:5.2f} s  parent {(a - last[1]) / dt:4.2f}  children {(k - last[2]) / dt:4.2f}", file=sys.stderr)
        last = (t, a, k)
