#!/usr/bin/env python3
"""Benchmark ``c3prof ingest`` against Holistic Trace Analysis (HTA) on the same Kineto trace, side by side.

    python benchmarks/bench_ingest.py [TRACE] [--repeat 3] [--json benchmarks/results/bench_ingest.json]
    python benchmarks/bench_ingest.py --baseline main --tools c3prof-ingest,c3prof-ingest-figures,hta-overlap

TRACE defaults to the largest committed trace (tests/data/foreign/hta/trace_diff/control/control.json.gz,
a real 35 MB trace from HTA's test data). For a >= 1 GB trace:

    python benchmarks/make_large_kineto_trace.py tests/data/synthetic_kineto_rank0.json /tmp/kineto_1g.json
    python benchmarks/bench_ingest.py /tmp/kineto_1g.json --tools c3prof-ingest,c3prof-read,hta-json

Each tool runs in its own fresh Python process, one after the other, on the same file, ``--repeat``
times (the median is reported). A repetition runs every tool once before the next repetition starts,
so the runs of one repetition see about the same load from other jobs on a shared machine; the
speed-up over HTA is also printed per repetition (HTA's run divided by the c3prof run beside it),
with the load average at the start of each repetition. Every tool first runs once unmeasured (a warm-up:
the trace and the libraries in the page cache), and every run has a bytecode cache (compiled modules
kept in a temporary ``PYTHONPYCACHEPREFIX``, even where ``PYTHONDONTWRITEBYTECODE`` is set), as an
installed package has: without it, an editable c3prof checkout on a machine that sets
``PYTHONDONTWRITEBYTECODE`` compiles its modules in every run while HTA's come compiled from pip.
``--as-is`` runs without the warm-up and with the environment unchanged:

* ``c3prof-ingest``: the whole ``c3prof ingest FILE --out DIR --quiet`` (read, classify, regions,
  statistics, HTA-compatible overlap, breakdown, scenario file, JSON): the user-visible cost;
* ``c3prof-ingest-figures``: the same with ``--figures DIR`` (matplotlib import and drawing included);
* ``c3prof-read``: the streaming reader alone (c3prof.ingest.reader.read_kineto);
* ``hta-overlap``: HTA's load (``TraceAnalysis``, default json backend) plus
  ``get_comm_comp_overlap(visualize=False)``: what c3prof's HTA-compatible number replaces;
* ``hta-json``: ``hta.trace_analysis.TraceAnalysis(trace_dir=...)``, HTA's documented entry point,
  with its default parser backend (json);
* ``hta-ijson``: the same with HTA's iterative backend (ijson, batched and compressed on the fly:
  its low-memory mode; needs ``pip install ijson``).

Side by side: ``--baseline REV`` also runs the c3prof tools of git revision REV (its ``c3prof/``
package, extracted with ``git archive``, with this worktree's compiled Kineto scanner, which is refused
if REV's ``_kineto.pyx`` differs), alternating run by run with this worktree's, so a busy shared
machine slows both alike.

Measured per tool: wall time of the work (after the tool's library imports: HTA's pandas/numpy/plotly,
c3prof's numpy/rich and its own modules (ingest needs no scipy); not matplotlib, which the figure variant pays for),
wall time of the whole process (interpreter start, every import, the work), and peak
resident memory: the maximum of the process's and its reaped children's ``ru_maxrss`` (HTA parses
in a worker process of a multiprocessing pool, which this includes). A tool that fails is reported
with the reason (e.g. out of memory), not dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = ("c3prof-ingest", "c3prof-ingest-figures", "c3prof-read", "hta-overlap", "hta-json", "hta-ijson")
REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = REPO / "tests" / "data" / "foreign" / "hta" / "trace_diff" / "control" / "control.json.gz"


def _peak_mb() -> float:
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(self_kb, children_kb) / 1024.0


def _child(tool: str, trace: Path, root: Path) -> dict:
    """Run one tool in this process, with the c3prof of ``root``; return its timings (printed as
    JSON by the caller)."""
    sys.path.insert(0, str(root))
    info = _child_c3prof(tool, trace) if tool.startswith("c3prof") else _child_hta(tool, trace)
    info["peak_mb"] = _peak_mb()
    return info


def _child_c3prof(tool: str, trace: Path) -> dict:
    # The libraries the command imports, as HTA's are imported before its clock starts (pandas,
    # numpy, plotly): work time is the tool's own work. matplotlib is not imported here: the
    # figure variant pays for it (its worker imports it while the trace is read).
    import rich.console  # noqa: F401

    import c3prof.ingest.analyze  # noqa: F401
    import c3prof.ingest.render  # noqa: F401
    import c3prof.report.json_out  # noqa: F401
    from c3prof.cli import main as c3prof_main
    from c3prof.ingest.reader import read_kineto

    where = str(Path(c3prof_main.__code__.co_filename).parent)  # which c3prof ran (worktree or --baseline)
    info: dict = {"tool": tool, "import_peak_mb": _peak_mb(), "c3prof": where}
    t0 = time.perf_counter()
    if tool.startswith("c3prof-ingest"):
        with tempfile.TemporaryDirectory() as out:
            figures = ["--figures", str(Path(out) / "fig")] if tool.endswith("figures") else []
            rc = c3prof_main(["ingest", str(trace), "--out", out, "--quiet", *figures])
            doc = json.loads((Path(out) / "ingest.json").read_text())
        info.update(ok=rc == 0, n_regions=doc["n_regions"], n_results=len(doc["results"]),
                    events_seen=doc["inputs"][0]["events_seen"],
                    hta_overlap_pct={str(h["rank"]): h["comm_comp_overlap_pct"] for h in doc["hta_comm_comp_overlap"]})
    else:
        t = read_kineto(trace)
        info.update(ok=True, events_seen=t.events_seen,
                    kept={"gpu": t.n_gpu, "launch": len(t.launch["correlation"]), "cpu": len(t.cpu["name"])})
    info["work_s"] = time.perf_counter() - t0
    return info


def _child_hta(tool: str, trace: Path) -> dict:
    import logging

    logging.disable(logging.WARNING)
    from hta.common import trace_parser
    from hta.configs.parser_config import ParserBackend
    from hta.trace_analysis import TraceAnalysis

    backend = ParserBackend.IJSON_BATCH_AND_COMPRESS if tool == "hta-ijson" else ParserBackend.JSON
    trace_parser.set_default_trace_parsing_backend(backend)
    info: dict = {"tool": tool, "import_peak_mb": _peak_mb(), "backend": str(backend.value)}
    with tempfile.TemporaryDirectory() as d:
        # HTA loads every trace file of a directory; give it one holding only this trace.
        os.symlink(trace.resolve(), Path(d) / trace.name)
        t0 = time.perf_counter()
        analyzer = TraceAnalysis(trace_dir=d)
        if tool == "hta-overlap":
            df = analyzer.get_comm_comp_overlap(visualize=False)
            info["hta_overlap_pct"] = {str(r): float(v) for r, v in zip(df["rank"], df["comp_comm_overlap_pctg"])}
        info["work_s"] = time.perf_counter() - t0
        info.update(ok=True, rows=int(len(next(iter(analyzer.t.traces.values())))))
    return info


def _measure_all(tools: list[str], trace: Path, timeout: float, repeat: int, roots: dict[str, Path],
                 env: dict[str, str] | None, warm_up: bool) -> tuple[dict[str, list[dict]], list[float]]:
    """``repeat`` repetitions, each running every tool once in a fresh process (a c3prof tool once
    per c3prof root, alternating; an HTA tool once, with this worktree), after one unmeasured run of
    each if ``warm_up``: every run, by tool name (c3prof tools suffixed with their root's label), and
    the 1-minute load average at the start of each repetition."""
    runs_of = [(tool, label, root) for tool in tools
               for label, root in (roots if tool.startswith("c3prof") else {"": REPO}).items()]
    for tool, _, root in runs_of if warm_up else []:
        _measure(tool, trace, timeout, root, env)
    runs: dict[str, list[dict]] = {}
    loads = []
    for _ in range(repeat):
        loads.append(os.getloadavg()[0])
        for tool, label, root in runs_of:
            runs.setdefault(tool + label, []).append(_measure(tool, trace, timeout, root, env))
    return runs, loads


def _bytecode_env(cache: Path) -> dict[str, str]:
    """The environment with a bytecode cache in ``cache`` for every module of every tool."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def _median_run(tool: str, runs: list[dict]) -> dict:
    """The run with the median work time, with every run's work time and the highest peak memory;
    a failed run instead, if any failed."""
    ok = [r for r in runs if r.get("ok")]
    if len(ok) < len(runs):
        return dict(next(r for r in runs if not r.get("ok")), tool=tool)
    ok.sort(key=lambda r: r["work_s"])
    best = dict(ok[len(ok) // 2])
    best["tool"] = tool
    best["work_s_runs"] = [r["work_s"] for r in runs]
    best["peak_mb"] = max(r["peak_mb"] for r in runs)
    return best


def per_run_speedups(hta_runs: list[float], our_runs: list[float]) -> list[float]:
    """HTA's work time over c3prof's, repetition by repetition (the two ran one after the other)."""
    return [h / o for h, o in zip(hta_runs, our_runs)]


def _measure(tool: str, trace: Path, timeout: float, root: Path, env: dict[str, str] | None) -> dict:
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, __file__, "--child", tool, str(trace), "--root", str(root)],
                           capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "ok": False, "error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        why = "killed (out of memory?)" if p.returncode in (-9, 137) else tail
        return {"tool": tool, "ok": False, "error": f"exit {p.returncode}: {why}", "process_s": wall}
    info = json.loads(lines[-1])
    info["process_s"] = wall
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path, nargs="?", default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=3, help="fresh-process runs per tool (median reported)")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {', '.join(TOOLS)}")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per tool, seconds")
    ap.add_argument("--json", type=Path, help="write the measurements here")
    ap.add_argument("--baseline", metavar="REV", help="also run the c3prof tools of this git revision, alternating")
    ap.add_argument("--as-is", action="store_true",
                    help="no warm-up run, no bytecode cache: the environment as it is (PYTHONDONTWRITEBYTECODE too)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.trace, args.root)))
        return 0
    size = args.trace.stat().st_size
    print(f"trace: {args.trace} ({size / 1e6:.1f} MB); machine: {os.cpu_count()} cores; {_load()}")
    with tempfile.TemporaryDirectory(prefix="c3prof-bench-ingest-") as tmp:
        roots = {"": REPO}
        if args.baseline:
            roots[f"@{args.baseline}"] = _baseline_tree(args.baseline, Path(tmp))
        env = None if args.as_is else _bytecode_env(Path(tmp) / "pycache")
        runs, loads = _measure_all(args.tools.split(","), args.trace, args.timeout, max(1, args.repeat), roots,
                                   env, warm_up=not args.as_is)
    results = [_median_run(tool, rs) for tool, rs in runs.items()]
    for r in results:
        _print(r, size)
    print(f"  ({_load()}; at the start of each repetition: {' '.join(f'{x:.2f}' for x in loads)})")
    by = {r["tool"]: r for r in results if r.get("ok")}
    summary = _summary(by, [""] + [f"@{args.baseline}"] * bool(args.baseline))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"trace": str(args.trace), "bytes": size, "cores": os.cpu_count(),
                                         "repeat": args.repeat, "as_is": args.as_is, "load_avg_1min": loads,
                                         "results": results,
                                         "summary": summary}, indent=1))
    return 0


def _print(r: dict, size: int) -> None:
    if r.get("ok"):
        runs = " ".join(f"{x:.2f}" for x in r["work_s_runs"])
        print(f"  {r['tool']:26s} work {r['work_s']:6.2f} s (runs {runs})   process {r['process_s']:6.2f} s   "
              f"peak RSS {r['peak_mb']:5.0f} MB   ({size / 1e6 / r['work_s']:.0f} MB/s)")
    else:
        print(f"  {r['tool']:26s} FAILED: {r.get('error')}")


def _load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _baseline_tree(rev: str, tmp: Path) -> Path:
    """REV's c3prof package in ``tmp``, with this worktree's compiled scanner (REV's must be the same source)."""
    def git(*a: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True)

    pyx = "c3prof/ingest/_kineto.pyx"
    theirs = git("show", f"{rev}:{pyx}")
    if theirs.returncode != 0:
        raise SystemExit(f"--baseline {rev}: {theirs.stderr.decode().strip()}")
    if theirs.stdout != (REPO / pyx).read_bytes():
        raise SystemExit(f"--baseline {rev}: its {pyx} differs from this worktree's; build that revision and run "
                         f"its own benchmark instead")
    archive = git("archive", rev, "c3prof")
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    for so in (REPO / "c3prof" / "ingest").glob("_kineto*.so"):
        shutil.copy2(so, tmp / "c3prof" / "ingest" / so.name)
    return tmp


def _summary(by: dict, labels: list[str]) -> dict:
    """Speed (work time) and memory ratios of each HTA tool to each c3prof ingest variant."""
    summary = {}
    for ours in [f"{tool}{label}" for label in labels for tool in ("c3prof-ingest", "c3prof-ingest-figures")]:
        for hta in ("hta-overlap", "hta-json", "hta-ijson"):
            if ours in by and hta in by:
                speed = by[hta]["work_s"] / by[ours]["work_s"]
                mem = by[hta]["peak_mb"] / by[ours]["peak_mb"]
                per_run = per_run_speedups(by[hta]["work_s_runs"], by[ours]["work_s_runs"])
                summary[f"{ours} vs {hta}"] = {"speedup": speed, "memory_ratio": mem, "speedup_runs": per_run}
                print(f"  {ours} vs {hta}: {speed:.1f}x faster (medians), {mem:.1f}x less peak memory; per "
                      f"repetition {' '.join(f'{x:.1f}' for x in per_run)} (lowest {min(per_run):.1f}x)")
    for label in labels:
        plain, figures = by.get(f"c3prof-ingest{label}"), by.get(f"c3prof-ingest-figures{label}")
        if plain and figures:
            ratio = figures["work_s"] / plain["work_s"]
            summary[f"figures_over_no_figures{label}"] = ratio
            print(f"  figures cost{label}: {ratio:.2f}x the no-figure time")
    if "c3prof-ingest" in by and "hta-overlap" in by:
        summary["overlap_pct"] = {"c3prof": by["c3prof-ingest"].get("hta_overlap_pct"),
                                  "hta": by["hta-overlap"].get("hta_overlap_pct")}
    return summary


if __name__ == "__main__":
    sys.exit(main())
