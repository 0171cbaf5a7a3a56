"""When (seconds since this script started) each stage of one `c3prof report --json` began and
ended, in the parent process, with its page faults: session 27's stampsf.py with more stages and
quick_exit armed, as the command arms it. Session 28."""
import os
import sys
import time, resource
def flt():
    return int(open("/proc/self/stat").read().rsplit(")",1)[1].split()[7])

T0 = time.perf_counter()
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
import c3prof.cli as cli  # noqa: E402
from c3prof import forked, trace, trace_parts  # noqa: E402
from c3prof.analysis import dataset, speedup  # noqa: E402
from c3prof.report import build, json_out  # noqa: E402
import c3prof.report.cli as cli_report

if os.environ.get("SHARE"):   # the read split tried (trace_parts.FIRST_SHARE)
    trace_parts.FIRST_SHARE = float(os.environ["SHARE"])
print(f"imports              0.000 -> {time.perf_counter() - T0:.3f}")


def wrap(owner, name, label):
    inner = getattr(owner, name)

    def timed(*a, **k):
        t = time.perf_counter() - T0
        try:
            return inner(*a, **k)
        finally:
            print(f"{label:20s} {t:.3f} -> {time.perf_counter() - T0:.3f}  flt {flt()}", flush=True)
    setattr(owner, name, timed)


for o, n, lab in [(dataset, "read_trace", "read"), (dataset, "_add_source", "merge"), (build, "analyze_group", "analyze"),
                  (trace, "_read_records", "assemble"), (forked.Later, "result", "later.result"),
                  (forked, "in_processes", "in_processes"), (speedup, "base_runs", "base_runs"),
                  (build, "summary_rows", "summary_rows"), (build.tax, "comm_sweeps", "sweeps"),
                  (build.fals, "falsify", "falsify"), (build.interference, "dose_response", "dose"),
                  (build._StrategiesBeside, "result", "strat_result"), (json_out, "write_json", "json"),
                  (getattr(json_out, "ReportListsJSON", None) or json_out.ResultRowsJSON, "prepare", "prepare"), (build.fals, "carrier_alerts", "alerts"),
                  (build, "_machine", "machine"), (build, "method_rules", "rules"), (build, "joint_repeat_intervals", "joint"),
                  (cli_report, "_write_outputs", "write_outputs"), (cli_report, "_rows_json", "rows_json"), (dataset, "_several_devices_notes", "devnotes"),
                  (speedup, "KeptRows", "keptrows"), (build, "_add_run_records", "run_records"), (cli_report, "print_written", "printed"),
                  (cli_report, "_analysing", "analysing"), (dataset, "load", "load"), (speedup, "resolve_jobs", "resolve_jobs"),
                  (speedup, "scenario_batches", "batches"), (build, "build_report", "build_report"), (cli_report, "_load", "cli_load")]:
    wrap(o, n, lab)
import gc  # noqa: E402

from c3prof import quick_exit; quick_exit.arm()
cli.main(["report", sys.argv[1], "--json", sys.argv[2], "-q"])
print(f"end {time.perf_counter() - T0:.3f} flt {flt()} children {resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt} self {resource.getrusage(resource.RUSAGE_SELF).ru_minflt}")
os._exit(0)   # as the command exits (quick_exit.py): without freeing
