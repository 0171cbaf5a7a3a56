"""`c3prof ARGS` as the command runs it (cli.program: the quick exit included), with the start and
end of chosen stages on stderr (seconds since this script started; calls under 10 ms not shown).
Run from a tree root: python marks.py report TRACE --json OUT -q"""
import importlib
import sys
import time

T0 = time.perf_counter()
sys.path.insert(0, ".")
STAGES = [("c3prof.analysis.dataset", "read_trace"), ("c3prof.analysis.dataset", "_add_source"),
          ("c3prof.report.build", "analyze_group"), ("c3prof.forked", "in_processes"),
          ("c3prof.report.build", "summary_rows"), ("c3prof.forked", "in_background"),
          ("c3prof.analysis.taxonomy", "comm_sweeps"), ("c3prof.analysis.falsification", "falsify"),
          ("c3prof.analysis.interference", "dose_response"), ("c3prof.report.json_out", "write_json"),
          ("c3prof.report.build", "build_report")]


def _marked(module: str, name: str) -> None:
    owner = importlib.import_module(module)
    inner = getattr(owner, name)

    def marked(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            e = time.perf_counter()
            if e - t > 0.01:
                print(f"{t - T0:6.2f}-{e - T0:6.2f} {e - t:5.2f} {name}", file=sys.stderr)

    setattr(owner, name, marked)


for module, name in STAGES:
    _marked(module, name)
from c3prof.report import build  # noqa: E402

_result = build._StrategiesBeside.result


def _summary_result(self, first=None):
    t = time.perf_counter()
    try:
        return _result(self, first)
    finally:
        e = time.perf_counter()
        print(f"{t - T0:6.2f}-{e - T0:6.2f} {e - t:5.2f} summary.result (with the rows' JSON first)", file=sys.stderr)


build._StrategiesBeside.result = _summary_result
print(f"{time.perf_counter() - T0:6.2f} imported", file=sys.stderr)
from c3prof import cli  # noqa: E402

sys.argv = ["c3prof", *sys.argv[1:]]
cli.program()
