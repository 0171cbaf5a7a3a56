#!/usr/bin/env bash
# The main job: capture the default suite on the GPU (all single-GPU strategies), then analyze it
# (tables, JSON, figures). Output in out/. The GPU is checked first, before anything is installed:
# without a usable GPU it says so at once and points to `c3prof report` on the bundled H200 trace.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BUNDLED_TRACE=tests/data/h200_default_proc2_t.jsonl
say() { echo "scripts/run.sh: $*" >&2; }

say "looking for an NVIDIA GPU (nvidia-smi)..."
if ! command -v nvidia-smi >/dev/null 2>&1 || ! gpus=$(timeout 20 nvidia-smi -L 2>/dev/null) || [ -z "$gpus" ]; then
  say "no usable NVIDIA GPU on this machine, so nothing can be captured here."
  say "Analyze the bundled H200 capture instead (installs c3prof into .venv first, no GPU needed):"
  say "  bash scripts/setup.sh && .venv/bin/c3prof report $BUNDLED_TRACE --figures out/figures --json out/report.json"
  exit 2
fi
say "found: ${gpus%%$'\n'*}"
say "setting up .venv with the capture dependencies (torch, NVML, cuda-bindings)..."
bash scripts/setup.sh capture || exit 1
mkdir -p out
trace=out/default-$(date +%Y%m%d-%H%M%S).jsonl
# Four visits of the whole suite, each in a process of its own (--resume appends visit v to the
# trace): on an H200 part of the capture-to-capture spread is tied to the process, so visits inside
# one process understate it; visits in fresh processes carry it into the suite intervals.
visits=4
for v in $(seq 1 $visits); do
  resume=(); [ "$v" -gt 1 ] && resume=(--resume)
  say "capturing visit $v of $visits of the default suite into $trace, in a fresh process (Ctrl-C keeps what was measured)"
  .venv/bin/c3prof capture --suite default --visits "$v" --max-reps 30 "${resume[@]}" --out "$trace" ||
    { rc=$?; [ $rc -eq 1 ] || exit $rc; }
done
say "analyzing $trace: tables below, figures in out/figures, JSON in out/report.json"
.venv/bin/c3prof report "$trace" --figures out/figures --json out/report.json
