#!/usr/bin/env python3
"""Benchmark ``c3prof report --json`` on a large SYNTHETIC trace (not measured data), side by side.

Builds, in a temporary directory, a trace with ``--samples`` repetitions in total (default 10^6 over
10,000 runs: 2500 scenarios x 4 strategy/variants x 4 phases x 25 repetitions; the concurrent phase
carries all five series), then times ``python -m c3prof report TRACE --json OUT --quiet`` in fresh
subprocesses and reports the median wall time and the child's peak RSS. Goal: under 3 s on 2 cores.
``--terminal`` times it printing its terminal report instead (to /dev/null), as a person runs it.

Side by side: ``--baseline REV`` also times the c3prof of git revision REV (its ``c3prof/`` package,
extracted with ``git archive``, run by the same interpreter, with its compiled report modules (the
bootstrap kernels, the JSON finite check, the reader's scan) built in place when Cython is installed,
as ``pip install -e`` builds them; without Cython it runs the numpy code, and says so),
``--baseline-python PY`` the c3prof installed for another interpreter.
The two alternate run by run (``--repeat`` each), so a busy shared machine slows both alike, and
a "pairs" line compares them run by run (paired_differences); the load average is printed before
and after each run and saved with ``--json PATH``.

Every candidate's package is byte-compiled first (``compileall``), as an installed package is by
``pip install``: a host that sets PYTHONDONTWRITEBYTECODE=1 (the device machine does) would otherwise
compile every c3prof module the report imports from source in every timed run, which no installed
c3prof does. That is 0.12 s an import on the 2-core development VM (0.33-0.41 s against
0.21-0.30 s); on the device no difference to the whole report stood out from its noise (4.68 s
compiled against 4.59 s from source, benchmarks/results/device_logs/session16). The same holds for
what the report imports from elsewhere: the device's numpy ships without bytecode, and compiling it
took each report there 0.12-0.28 s more than an installed numpy does. So the timed reports read the
bytecode of every module a report imports (listed by one untimed report of each candidate) from a
private cache in the benchmark's temporary directory (PYTHONPYCACHEPREFIX; bytecode_prefix), never
written beside the installed files (not with ``--figures``: its workers' imports are not listed).
``--no-compile`` times the source trees and the environment as they are.

    python benchmarks/bench_report.py                          # this worktree, 10^6 samples
    python benchmarks/bench_report.py --baseline ed316c2       # and revision ed316c2, alternating
    python benchmarks/bench_report.py --baseline-python /work/main/.venv/bin/python
    python benchmarks/bench_report.py --figures tests/data/h200_default_1.jsonl --baseline main
                                                               # the --figures cost on a real trace
    python benchmarks/bench_report.py --scaling                # also 2.5*10^5, prints RSS per sample
    python benchmarks/bench_report.py --check 3                # exit 1 if slower than 3 s
    python benchmarks/bench_report.py -j 2 --baseline main     # both candidates with report -j 2
    python benchmarks/bench_report.py --baseline main --repeat 5 --json benchmarks/results/bench_report_x.json
    python benchmarks/bench_report.py --scenarios 25           # 100 runs of 2500 repetitions per phase
    python benchmarks/bench_report.py --rounds                 # phases record rounds, as captures do
    python benchmarks/bench_report.py --cpus 0,1 --baseline-tree /tmp/base   # 2 cores of a bigger machine
    python benchmarks/bench_report.py --also-jobs auto         # this worktree with and without report -j auto
    python benchmarks/bench_report.py --no-compile             # source trees as they are (no compileall first)
    python benchmarks/bench_report.py --terminal --baseline main   # with the terminal tables printed (to /dev/null)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from c3prof.errors import C3profError  # noqa: E402
from c3prof.trace import TraceWriter, run_id  # noqa: E402

RUNS = (("base", "default", "sm_copy"), ("sp", "comm_first", "sm_copy"), ("sp", "gemm_first", "sm_copy"),
        ("dma", "ce_peer", "ce_peer"))
PHASES = ("gemm", "comm", "serial", "concurrent")


def build_trace(path: Path, samples: int, scenarios: int = 25, rounds: bool = False) -> int:
    """Write a synthetic trace with about ``samples`` repetitions; returns the exact count.

    ``rounds``: every phase records its repetitions' rounds, as captures since 2026-11 do (one
    repetition of every phase of every run of a scenario per round): the report then resamples each
    scenario by round (paired), the path real captures take. Without: the older unpaired layout."""
    reps = max(1, samples // (scenarios * len(RUNS) * len(PHASES)))
    rng = np.random.default_rng(0)
    with TraceWriter(path, fsync=False, command=["benchmarks/bench_report.py"]) as w:
        w.write({"record": "machine", "gpu": {"name": "SYNTHETIC benchmark GPU (not measured)"}, "versions": {},
                 "clocks_start": {}})
        w.write({"record": "ceilings", "gemm_flops_per_s": {"bf16": {"value": 6.8e14}},
                 "copy_bytes_per_s": {"d2d": {"value": 4.2e12}}})
        w.write({"record": "engine_evidence", "transport": "sm_copy", "carrier": "sm", "method": "synthetic"})
        w.write({"record": "engine_evidence", "transport": "ce_peer", "carrier": "copy_engine", "method": "synthetic"})
        for s in range(scenarios):
            nbytes = (1 << 20) * 2 ** (s % 10)
            sc = {"name": f"bench-{s}", "gemm": {"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
                  "comm": {"op": "transfer", "bytes": nbytes}}
            tg, tc = 0.2, 0.008 + nbytes / 3.9e8
            paired = {"rounds": list(range(reps)), "round_group": f"{sc['name']}@synthetic"} if rounds else {}
            for strategy, variant, transport in RUNS:
                for phase in PHASES:
                    noise = lambda: rng.lognormal(0, 0.01, reps)  # noqa: E731
                    if phase == "gemm":
                        smp = {"total_ms": tg * noise()}
                    elif phase == "comm":
                        smp = {"total_ms": tc * noise()}
                    elif phase == "serial":
                        smp = {"total_ms": (tg + tc + 0.004) * noise()}
                    else:
                        g, c = tg * 1.1 * noise(), tc * 1.3 * noise()
                        smp = {"total_ms": np.maximum(g, c) + 0.002, "gemm_ms": g, "comm_ms": c,
                               "gemm_start_ms": np.zeros(reps), "comm_start_ms": np.zeros(reps)}
                    w.write({"record": "phase", "run": run_id(sc["name"], strategy, variant), "scenario": sc,
                             "strategy": strategy, "variant": variant, "params": {"transport": transport},
                             "phase": phase, "samples": {k: np.round(v, 6).tolist() for k, v in smp.items()},
                             "stop": {}, **paired})
        w.write({"record": "end", "status": "complete"})
    return reps * scenarios * len(RUNS) * len(PHASES)


@dataclass
class Candidate:
    """A c3prof to time: a label, the interpreter, and the directory ``python -m c3prof`` runs from."""

    label: str
    python: str
    cwd: Path
    extra: tuple[str, ...] = ()   # further report options of this candidate (--also-jobs)


def candidates(args: argparse.Namespace, tmp: Path) -> list[Candidate]:
    """This worktree first, then the baseline asked for (if any)."""
    out = [Candidate("worktree", sys.executable, ROOT)]
    if args.baseline or args.baseline_tree:
        src = tmp / "baseline"
        src.mkdir()
        # The package alone, as of REV: `python -m c3prof` run from src imports it (cwd comes first
        # on sys.path). The report path needs no compiled extension.
        if args.baseline_tree:   # a copy made elsewhere (a machine without the git history)
            shutil.copytree(args.baseline_tree / "c3prof", src / "c3prof")
            name = f"tree {args.baseline_tree.name}"
        else:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "c3prof"], capture_output=True)
            if archive.returncode != 0:
                raise SystemExit(f"git archive {args.baseline}: {archive.stderr.decode().strip()}")
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
            name = f"rev {args.baseline}"
        label = name + ("" if _build_kernel(src) else " (numpy, no kernel)")
        out.append(Candidate(label, sys.executable, src))
    if args.baseline_python:
        out.append(Candidate(f"python {args.baseline_python}", args.baseline_python, tmp))  # its installed c3prof
    if args.also_jobs:
        out.append(Candidate(f"worktree -j {args.also_jobs}", sys.executable, ROOT, ("-j", args.also_jobs)))
    return out


# Builds the revision's compiled report modules next to their sources, with setup.py's flags for
# them: the bootstrap kernels, the JSON writer's finite check and the reader's scan (those it has).
_BUILD_KERNEL = """
import os, sys
from setuptools import Extension, setup
from Cython.Build import cythonize
exts = [Extension("c3prof.analysis._bootstrap", ["c3prof/analysis/_bootstrap.pyx"], language="c++",
                  extra_compile_args=["-O3", "-ffp-contract=off", "-pthread"], extra_link_args=["-pthread"]),
        Extension("c3prof.report._finite", ["c3prof/report/_finite.pyx"], extra_compile_args=["-O2"]),
        Extension("c3prof._trace_read", ["c3prof/_trace_read.pyx"], language="c++", extra_compile_args=["-O2"])]
sys.argv = ["setup.py", "build_ext", "--inplace", "-q"]
setup(ext_modules=cythonize([e for e in exts if os.path.exists(e.sources[0])], language_level=3, quiet=True))
"""


def _build_kernel(src: Path) -> bool:
    """Build the extracted revision's compiled report modules in place (False: not built; the
    revision then runs its numpy and Python code, slower than it runs when installed)."""
    if not (src / "c3prof" / "analysis" / "_bootstrap.pyx").exists():
        return False
    proc = subprocess.run([sys.executable, "-c", _BUILD_KERNEL], cwd=src, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  (baseline kernel not built: {(proc.stderr.strip().splitlines() or ['?'])[-1]})")
    return proc.returncode == 0


# Run as `python -c _LIST_IMPORTS OUT report ...` from a candidate's directory: its report, which at
# exit writes to OUT the source files of every module it imported.
_LIST_IMPORTS = """
import atexit, json, runpy, sys
out = sys.argv.pop(1)
def dump():
    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    with open(out, "w") as f:
        json.dump(sorted(x for x in files if isinstance(x, str) and x.endswith(".py")), f)
atexit.register(dump)
sys.argv[0] = "c3prof"
runpy.run_module("c3prof", run_name="__main__", alter_sys=True)
"""
# Run as `python -c _COMPILE FILE...` with the prefix set: compiles each into it, and prints how many
# had no bytecode of their own beside them (for this interpreter's version).
_COMPILE = """
import importlib.util, os, py_compile, sys
prefix, sys.pycache_prefix = sys.pycache_prefix, None
print(sum(not os.path.exists(importlib.util.cache_from_source(f)) for f in sys.argv[1:]))
sys.pycache_prefix = prefix
for f in sys.argv[1:]:
    py_compile.compile(f, doraise=True)
"""


def bytecode_prefix(whos: list[Candidate], trace: Path, tmp: Path) -> tuple[Path, int, int]:
    """Bytecode for every module the candidates' reports import, in a private cache of ours
    (PYTHONPYCACHEPREFIX), never beside the installed files. Why: a host may ship packages without
    bytecode and forbid writing it (the device machine's numpy has none and sets
    PYTHONDONTWRITEBYTECODE=1), so every timed report would compile numpy from source: importing it
    took 0.25-0.40 s there, 0.12 s with its bytecode (device session 21). An installed package has its bytecode (pip
    compiles at install). With the prefix set, Python reads every module's bytecode from it, so all
    of them go in. Returns (the prefix, modules compiled, of which had no bytecode of their own)."""
    prefix = tmp / "pycache"
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(prefix))
    files: dict[str, set[str]] = {}   # per interpreter
    for who in whos:
        listing = tmp / "imports.json"
        cmd = [who.python, "-c", _LIST_IMPORTS, str(listing), "report", str(trace), "--json", str(tmp / "r.json"),
               *OUTPUT, *who.extra]
        subprocess.run(cmd, cwd=who.cwd, env=env, check=True, stdout=subprocess.DEVNULL)
        files.setdefault(who.python, set()).update(json.loads(listing.read_text()))
    lacking = 0
    for python, names in files.items():
        done = subprocess.run([python, "-c", _COMPILE, *sorted(names)], env=env, check=True, capture_output=True,
                              text=True)
        lacking += int(done.stdout)
    return prefix, sum(len(names) for names in files.values()), lacking


def compile_package(who: Candidate) -> bool:
    """Byte-compile the c3prof package a candidate runs from its directory (False: it runs an
    installed one, compiled at install, or compileall failed, which is printed)."""
    package = who.cwd / "c3prof"
    if not package.is_dir():
        return False
    proc = subprocess.run([who.python, "-m", "compileall", "-q", str(package)], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  ({who.label}: compileall failed: {(proc.stdout + proc.stderr).strip().splitlines()[-1:]})")
    return proc.returncode == 0


def time_report(who: Candidate, trace: Path, out: Path, extra: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one `c3prof report --json` in a
    fresh process. On a shared machine the CPU time moves less with the load than the wall time."""
    cmd = [who.python, "-m", "c3prof", "report", str(trace), "--json", str(out), *OUTPUT, *who.extra, *extra]
    t0 = time.perf_counter()
    pin = (lambda: os.sched_setaffinity(0, CPUS)) if CPUS else None   # --cpus: the child on those CPUs only
    proc = subprocess.Popen(cmd, cwd=who.cwd, preexec_fn=pin, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{who.label}: report failed with status {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0  # Linux: ru_maxrss is in KiB


def side_by_side(whos: list[Candidate], trace: Path, tmp: Path, repeat: int, figures: bool,
                 jobs: int = 1) -> dict[str, float]:
    """Median wall time per candidate (with ``figures``: of the --figures run minus the plain one),
    runs alternating between candidates; CPU times are printed beside. ``jobs``: report -j."""
    walls: dict[str, list[tuple[float, float]]] = {w.label: [] for w in whos}
    rss: dict[str, float] = {}
    for _ in range(repeat):
        for w in whos:
            load = os.getloadavg()[0]
            wall, cpu, rss[w.label] = time_report(w, trace, tmp / "report.json", ["-j", str(jobs)] if jobs > 1 else [])
            RUNS_LOG.append({"candidate": w.label, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss[w.label],
                             "load_before": load, "load_after": os.getloadavg()[0], "figures": figures})
            if figures:
                fig_dir = tmp / "figures"
                fig_wall, fig_cpu, _ = time_report(w, trace, tmp / "report.json", ["--figures", str(fig_dir)])
                RUNS_LOG[-1].update(figures_total_wall_s=fig_wall, figures_total_cpu_s=fig_cpu)
                wall, cpu = fig_wall - wall, fig_cpu - cpu
                shutil.rmtree(fig_dir)
            walls[w.label].append((wall, cpu))
    what = "--figures adds" if figures else "report --json" + (f" -j {jobs}" if jobs > 1 else "")
    medians = {}
    for w in whos:
        medians[w.label] = statistics.median(x for x, _ in walls[w.label])
        cpu = statistics.median(c for _, c in walls[w.label])
        runs = " ".join(f"{x:.2f}" for x, _ in walls[w.label])
        print(f"  {w.label:24s} {what} {medians[w.label]:6.2f} s wall (runs {runs}), {cpu:6.2f} s CPU;  "
              f"peak RSS {rss[w.label]:5.0f} MiB")
    first = whos[0].label
    for w in whos[1:]:
        pairs = paired_differences([x for x, _ in walls[first]], [x for x, _ in walls[w.label]])
        PAIRS[f"{trace.name}: {w.label} - {first}"] = pairs
        print(f"  pairs: {w.label} - {first}, each run of {first} with the {w.label} run after it: median "
              f"{pairs['median_s']:+.2f} s (range {pairs['least_s']:+.2f} to {pairs['most_s']:+.2f}); "
              f"{first} faster in {pairs['first_faster']} of {pairs['n']}")
    return medians


def paired_differences(first: list[float], second: list[float]) -> dict:
    """Run k of the second candidate minus run k of the first (they alternate, so each pair ran
    seconds apart, on the same state of a shared machine): the median difference, its range, and
    in how many pairs the first was faster. Steadier than the difference of the two medians where
    the machine's speed drifts from run to run (device hosts: the same report 3.3-4.5 s)."""
    if len(first) != len(second) or not first:
        raise ValueError("paired_differences: one run of each candidate per round")
    diffs = [b - a for a, b in zip(first, second)]
    return {"n": len(diffs), "median_s": statistics.median(diffs), "least_s": min(diffs), "most_s": max(diffs),
            "first_faster": sum(d > 0 for d in diffs)}


def _use_bytecode_prefix(whos: list[Candidate], trace: Path, tmp: Path) -> None:
    """bytecode_prefix, then every timed report reads its bytecode from there."""
    prefix, n, lacking = bytecode_prefix(whos, trace, tmp)
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    BYTECODE.update(modules=n, had_none=lacking)
    print(f"bytecode of the {n} modules a report imports in a private cache (PYTHONPYCACHEPREFIX), as "
          f"installed; {lacking} of them had none of their own")


# What bytecode_prefix compiled (for --json): modules, and those without bytecode of their own.
BYTECODE: dict[str, int] = {}
# Every timed run (for --json).
RUNS_LOG: list[dict] = []
# Per trace timed, each other candidate against the first, pair by pair (paired_differences; for --json).
PAIRS: dict[str, dict] = {}
# The CPUs every timed report runs on (--cpus; empty: wherever the system puts it).
CPUS: set[int] = set()
# What the timed reports print: nothing (--quiet), or with --terminal the terminal report, to /dev/null.
OUTPUT: list[str] = ["--quiet"]


def _load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--scenarios", type=int, default=2500,
                    help="scenarios (x4 runs); more scenarios = more runs with fewer repetitions each")
    ap.add_argument("--rounds", action="store_true",
                    help="phases record their rounds, as current captures do (the report resamples by round)")
    ap.add_argument("--scaling", action="store_true", help="also run at a quarter of the size")
    ap.add_argument("--repeat", type=int, default=3, help="fresh-process runs per candidate (median reported)")
    ap.add_argument("--baseline", metavar="REV", help="also time the c3prof of this git revision")
    ap.add_argument("--baseline-tree", metavar="DIR", type=Path,
                    help="also time the c3prof package in DIR/c3prof (e.g. `git archive REV c3prof` unpacked there)")
    ap.add_argument("--baseline-python", metavar="PY", help="also time the c3prof installed for this interpreter")
    ap.add_argument("--cpus", metavar="LIST",
                    help="run every timed report on these CPUs only (e.g. 0,1: two cores of a larger machine)")
    ap.add_argument("--figures", metavar="TRACE", type=Path,
                    help="instead of the synthetic trace: time what --figures adds to a report of TRACE")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="c3prof report -j N (every candidate; 1: no -j, each its default)")
    ap.add_argument("--also-jobs", metavar="N|auto",
                    help="also time this worktree with report -j N|auto (a further candidate, alternating)")
    ap.add_argument("--check", type=float, metavar="SECONDS", help="exit 1 if the worktree's full-size run is slower")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write every run (wall, CPU, RSS, load) as JSON")
    ap.add_argument("--no-compile", action="store_true",
                    help="do not byte-compile the candidates' packages first (time the source trees as they are)")
    ap.add_argument("--terminal", action="store_true",
                    help="time the report with its terminal tables (written to /dev/null), not --quiet: "
                         "the command as a person runs it")
    ap.add_argument("--write-trace", type=Path, metavar="PATH",
                    help="only write the SYNTHETIC trace (--samples, --scenarios, --rounds) to PATH, time nothing")
    args = ap.parse_args()
    if args.write_trace:
        try:   # the trace writer's own refusals (a file that exists, a folder it cannot write), in one line
            exact = build_trace(args.write_trace, args.samples, args.scenarios, args.rounds)
        except C3profError as exc:
            raise SystemExit(f"bench_report.py: error: {exc}") from None
        print(f"wrote {args.write_trace}: {exact:,d} samples (SYNTHETIC)")
        return 0
    if args.terminal:
        OUTPUT.clear()
    if args.cpus:
        CPUS.update(int(c) for c in args.cpus.split(","))
    print(f"c3prof report benchmark: {os.cpu_count()} CPUs" + (f" (reports pinned to {sorted(CPUS)})" if CPUS else "")
          + f", Python {sys.version.split()[0]}; {_load()}")
    wall = 0.0
    with tempfile.TemporaryDirectory(prefix="c3prof-bench-") as tmp_name:
        tmp = Path(tmp_name)
        whos = candidates(args, tmp)
        if not args.no_compile:
            compiled = [w.label for w in whos if compile_package(w)]
            print(f"byte-compiled (as installed): {', '.join(compiled) or 'none'}; "
                  f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
        if args.figures:
            # No bytecode cache here: the figure workers import matplotlib in processes of their own,
            # whose imports one report's listing does not see; with the cache set, they would
            # compile matplotlib from source even where it has bytecode beside it.
            print(f"trace {args.figures} (--figures cost: wall of report --json --figures minus report --json)")
            wall = side_by_side(whos, args.figures.resolve(), tmp, args.repeat, figures=True)["worktree"]
        else:
            for n in ([args.samples // 4] if args.scaling else []) + [args.samples]:
                trace = tmp / f"synthetic_bench_{n}.jsonl"
                t0 = time.perf_counter()
                exact = build_trace(trace, n, args.scenarios, args.rounds)
                mb = trace.stat().st_size / 2**20
                print(f"samples {exact:,d}  runs {args.scenarios * len(RUNS):,d}  trace {mb:.1f} MiB "
                      f"({'rounds recorded' if args.rounds else 'no rounds: unpaired'}) "
                      f"(SYNTHETIC, built in {time.perf_counter() - t0:.1f} s)")
                if not args.no_compile and "PYTHONPYCACHEPREFIX" not in os.environ:
                    _use_bytecode_prefix(whos, trace, tmp)
                wall = side_by_side(whos, trace, tmp, args.repeat, figures=False, jobs=args.jobs)["worktree"]
    print(f"(parent RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, not counted; {_load()})")
    if args.json:
        _write_json(args, wall)
    if args.check is not None and wall > args.check:
        print(f"FAIL: {wall:.2f} s > {args.check} s")
        return 1
    return 0


def _write_json(args: argparse.Namespace, wall: float) -> None:
    medians = {}
    for label in dict.fromkeys(r["candidate"] for r in RUNS_LOG):
        runs = [r for r in RUNS_LOG if r["candidate"] == label]
        medians[label] = {"wall_s": statistics.median(r["wall_s"] for r in runs),
                          "cpu_s": statistics.median(r["cpu_s"] for r in runs)}
    args.json.write_text(json.dumps({
        "what": "c3prof report --json on a SYNTHETIC trace" if not args.figures else f"--figures on {args.figures}",
        "samples": args.samples, "scenarios": args.scenarios, "rounds": args.rounds, "repeat": args.repeat,
        "jobs": args.jobs, "also_jobs": args.also_jobs, "cpus_pinned": sorted(CPUS), "terminal": args.terminal,
        "byte_compiled": not args.no_compile, "bytecode_prefix": BYTECODE or None,
        "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
        "baseline_tree": str(args.baseline_tree or ""),
        "cpus": os.cpu_count(), "python": sys.version.split()[0], "baseline": args.baseline,
        "medians": medians, "pairs": PAIRS, "runs": RUNS_LOG}, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    raise SystemExit(main())
