"""The process a vendor profiler runs: each chosen phase inside one profiler start/stop range.

    ncu --replay-mode app-range ... python -m c3prof.capture.counter_worker PLAN.json RESULTS.jsonl

PLAN.json: {"backend", "device", "seed", "reps", "items": [{"scenario": {...}, "variant":
{...params...}, "phases": [...]}]}. For every item and phase, in order: warm up outside any
range, then profiler_start, enqueue ``reps`` repetitions (no gate kernel: its sleep would be counted),
profiler_stop, and read the repetitions' event times; the same batch is also timed unprofiled
just before, for the perturbation figure. One line per range goes to RESULTS.jsonl
(run, phase, reps, timed samples), so ranges can be matched to ncu's rows by order. With
app-range replay the whole process runs once per counter pass, so RESULTS gets one line per
range per pass; the parent keeps the pass index.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    plan_path, results_path = argv
    from c3prof.backends import get_backend
    from c3prof.capture.phases import PhaseTimer
    from c3prof.plan.model import Variant
    from c3prof.scenarios import Scenario
    from c3prof.trace import run_id

    with open(plan_path) as f:
        plan = json.load(f)
    backend = get_backend(plan["backend"])
    backend.prepare_environment()
    bench = backend.open_bench(plan["device"], plan["seed"], PhaseTimer)
    reps = plan["reps"]
    with open(results_path, "a") as out:
        setups = {}
        for index, item in enumerate(plan["items"]):
            scenario = Scenario.from_dict(item["scenario"])
            if scenario.name not in setups:
                for s in setups.values():
                    s.close()
                setups = {scenario.name: bench.open_scenario(scenario)}
            variant = Variant(**item["variant"])
            v = bench.open_variant(setups[scenario.name], variant)
            try:
                for phase in item["phases"]:
                    if phase != "gemm":
                        v.transport.poison()
                    v.timer.run_batch(phase, 2)                      # warm-up, outside the range
                    # The same batch unprofiled, then profiled: their ratio is ncu's perturbation.
                    unprofiled = v.timer.finish_batch(phase, v.timer.enqueue_batch(phase, reps, gate=False), reps)
                    bench.synchronize()
                    bench.profiler_start()
                    pool = v.timer.enqueue_batch(phase, reps, gate=False)
                    bench.profiler_stop()
                    samples = v.timer.finish_batch(phase, pool, reps)
                    out.write(json.dumps({"item": index, "run": run_id(scenario.name, variant.strategy, variant.name),
                                          "phase": phase, "reps": reps, "profiled_ms": samples["total_ms"],
                                          "unprofiled_ms": unprofiled["total_ms"],
                                          "rep_start_ms": v.timer.rep_starts(phase, pool, reps)}) + "\n")
                    out.flush()
            finally:
                v.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
