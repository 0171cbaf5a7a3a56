#!/usr/bin/env bash
# The main job: set up, capture the taxonomy suite on the GPU (all single-GPU strategies), then
# analyze it (tables, JSON, figures). Output in out/. Without a usable GPU it says so and points
# to `c3prof report` on the bundled H200 trace.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  bash scripts/setup.sh >/dev/null || exit 1
  echo "scripts/run.sh: no usable NVIDIA GPU on this machine, so nothing can be captured here." >&2
  echo "  Analyze the bundled H200 capture instead:" >&2
  echo "    .venv/bin/c3prof report tests/data/h200_taxonomy.jsonl --figures out/figures --json out/report.json" >&2
  exit 2
fi
bash scripts/setup.sh capture || exit 1
mkdir -p out
trace=out/taxonomy-$(date +%Y%m%d-%H%M%S).jsonl
.venv/bin/c3prof capture --suite taxonomy --out "$trace" || { rc=$?; [ $rc -eq 1 ] || exit $rc; }
.venv/bin/c3prof report "$trace" --figures out/figures --json out/report.json
