#!/usr/bin/env bash
# Probe (device machine): can Nsight Compute's PmSampling section give time series for a phase
# range, and in what form? Runs the counter worker on one scenario (base and dma, concurrent
# phase) under ncu with --section PmSampling and keeps ncu's raw output for the parser.
set -u
OUT=${OUT:-out/device}
mkdir -p "$OUT"
python3 - "$OUT/pm_plan.json" <<'PY'
import json, sys
from c3prof.plan.model import PlanOptions
from c3prof.plan.strategies import plan_runs
from c3prof.scenarios import load_suite
plans = plan_runs([s for s in load_suite("taxonomy") if s.name == "mb64-x-256M"], ("base", "dma"),
                  PlanOptions(sm_count=132))
json.dump({"backend": "cuda", "device": 0, "seed": 0, "reps": 3, "items": [
    {"scenario": p.scenario.to_dict(), "variant": p.variant.params(), "phases": ["concurrent"]} for p in plans]},
    open(sys.argv[1], "w"))
PY
ncu --replay-mode app-range --clock-control none --section PmSampling --print-metric-instances values \
    --csv --page raw --log-file "$OUT/pm_raw.csv" --target-processes all \
    python3 -m c3prof.capture.counter_worker "$OUT/pm_plan.json" "$OUT/pm_results.jsonl"
echo "ncu rc=$?"
head -c 3000 "$OUT/pm_raw.csv"
