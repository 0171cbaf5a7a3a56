#!/usr/bin/env bash
# Regenerate every figure in figures/ from the real H200 captures committed in tests/data.
# No GPU needed: `bash figures/make_figures.sh` (after `bash scripts/setup.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
C3PROF=${C3PROF:-.venv/bin/c3prof}
# Taxonomy suite, all single-GPU strategies: fraction of ideal, slowdowns, falsification, a timeline.
$C3PROF report tests/data/h200_taxonomy.jsonl --quiet --figures figures/taxonomy --json figures/taxonomy/report.json \
    --timeline-run cb8k-x-1G/base/default
# Counters subset (base vs dma, ncu + PM sampling): falsification with L2 evidence, timeline with counter series.
$C3PROF report tests/data/h200_counters.jsonl --quiet --figures figures/counters --json figures/counters/report.json \
    --timeline-run mb64-x-1G/dma/default
# A real PyTorch profiler trace through ingest.
$C3PROF ingest tests/data/h200_kineto_c3overlap.json.gz --quiet --out figures/ingest --figures figures/ingest
# Two H200s (nvidia-h200-x2): FSDP all-gather and expert-parallel all-to-all beside their GEMMs, NCCL SM vs copy engines.
$C3PROF report tests/data/h200x2_llama70b.rank0.jsonl tests/data/h200x2_llama70b.rank1.jsonl --quiet \
    --figures figures/h200x2_llama70b --json figures/h200x2_llama70b/report.json
