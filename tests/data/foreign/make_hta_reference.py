"""Compute HolisticTraceAnalysis's communication/computation overlap on the committed foreign traces.

The numbers go into tests/test_ingest_foreign.py (HTA_OVERLAP), so the tests do not need HTA.
Run with HolisticTraceAnalysis installed (pip install HolisticTraceAnalysis; 0.5.0 was used):

    python tests/data/foreign/make_hta_reference.py [--json OUT]

Each case is loaded with TraceAnalysis(trace_files={rank: path}) (HTA's defaults: the last
ProfilerStep dropped) and TraceAnalysis.get_comm_comp_overlap(visualize=False) is called.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# case name -> {rank: file relative to this directory}
CASES = {
    "nccl_parser_config": {0: "hta/nccl_parser_config/nccl_data.json.gz"},
    "trace_diff_control": {3: "hta/trace_diff/control/control.json.gz"},
    "trace_diff_test": {1: "hta/trace_diff/test/test.json.gz"},
    "trace_filter": {0: "hta/trace_filter/sampled_rank-0.json.gz", 1: "hta/trace_filter/sampled_rank-1.json.gz"},
    "negative_queue_length": {0: "hta/negative_queue_length_values_check/rank0.json.gz"},
}


def overlap(files: dict[int, str]) -> dict[int, float]:
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_files={r: str(HERE / f) for r, f in files.items()}, trace_dir=str(HERE))
    df = analyzer.get_comm_comp_overlap(visualize=False)
    return {int(r): float(p) for r, p in zip(df["rank"], df["comp_comm_overlap_pctg"])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    out = {"hta_version": importlib.metadata.version("HolisticTraceAnalysis"), "cases": {}}
    for name, files in CASES.items():
        if args.cases and name not in args.cases:
            continue
        t0 = time.perf_counter()
        out["cases"][name] = {"files": files, "comp_comm_overlap_pctg": overlap(files),
                              "seconds": round(time.perf_counter() - t0, 2)}
        print(name, out["cases"][name], flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
