#!/usr/bin/env bash
# Regenerate every figure in figures/ from the real H200 captures committed in tests/data.
# No GPU needed: `bash figures/make_figures.sh` (after `bash scripts/setup.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
C3PROF=${C3PROF:-.venv/bin/c3prof}
# The default suite (every link, every single-GPU strategy, same bytes over the same link per
# scenario): realized vs ideal speedup, strategy means, fractions, slowdowns, falsification, timeline.
$C3PROF report tests/data/h200_default_proc2_t.jsonl --quiet --figure-formats png,pdf --figures figures/default --json figures/default/report.json
# The interference dose-response (base vs dma): GEMM slowdown against copy-engine bytes/s.
$C3PROF report tests/data/h200_interference.jsonl --quiet --figure-formats png,pdf --figures figures/interference \
    --json figures/interference/report.json
# Two interference arms with Nsight Compute counters: the mechanism (DRAM read/write mix, L2 sources).
$C3PROF report tests/data/h200_interference_counters.jsonl --quiet --figure-formats png,pdf --figures figures/interference_counters \
    --json figures/interference_counters/report.json --timeline-run mb64-h2d-1copy/dma/default
# `c3prof advise`: fitted on every committed capture of the default, train, heldout and heldout2 suites
# (83 scenarios), validated leave-one-scenario-out and blind on the third held-out capture (heldout3: 30
# shapes in no other suite, captured before the model was frozen): predicted vs measured T_cc.
$C3PROF advise --train tests/data/h200_default_1.jsonl tests/data/h200_default_2.jsonl \
    tests/data/h200_default_pair_{a,b,c,d}.jsonl tests/data/h200_default_v4_{e,f}.jsonl \
    tests/data/h200_train_hbm.jsonl tests/data/h200_heldout.jsonl tests/data/h200_heldout2.jsonl \
    --evaluate tests/data/h200_heldout3.jsonl --figure-formats png,pdf --figures figures/advise --json figures/advise/advise.json >/dev/null
# A real PyTorch profiler trace through ingest.
$C3PROF ingest tests/data/h200_kineto_c3overlap.json.gz --quiet --out figures/ingest --figures figures/ingest/figures
# The interference study's controls, rate arms and Nsight Compute grid (two captures reported together):
# dose-response against the rate during the GEMM, the controls, and the mechanism (DRAM reads/writes, L2 hits).
$C3PROF report tests/data/h200_interference_controls.jsonl tests/data/h200_interference_grid_counters.jsonl --quiet \
    --figure-formats png,pdf --figures figures/interference_controls --json figures/interference_controls/report.json
# Two H200s (nvidia-h200-x2): FSDP all-gather and expert-parallel all-to-all beside their GEMMs, NCCL SM vs
# copy engines; the two rank traces combine by the maximum over ranks per repetition.
$C3PROF report tests/data/h200x2_llama70b.rank0.jsonl tests/data/h200x2_llama70b.rank1.jsonl --quiet \
    --figure-formats png,pdf --figures figures/h200x2_llama70b --json figures/h200x2_llama70b/report.json
