# Shared by the device-session scripts (sourced, not run): environment, output folders, the
# logged `step` runner and the final packing. A script may redefine `summarize LOGFILE` (what a
# step prints of its log) and set STEP_TIMEOUT (seconds per step; 0 = none) before sourcing.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-out/device}
mkdir -p "$OUT/logs"
LOG=$OUT/logs
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

summarize() { tail -n 25 "$1"; }

# Steps are stopped with SIGINT at the timeout, which c3prof treats as an interruption (every
# completed measurement stays in the trace).
step() { local name=$1; shift; echo "=== $name: $*"; local t0=$(date +%s%N) rc
  if [ "${STEP_TIMEOUT:-240}" = 0 ]; then "$@" >"$LOG/$name.log" 2>&1; rc=$?
  else timeout --signal=INT --kill-after=20 "${STEP_TIMEOUT:-240}" "$@" >"$LOG/$name.log" 2>&1; rc=$?; fi
  echo "=== $name rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms"; summarize "$LOG/$name.log"; return $rc; }

# The device tool returns at most 8 files: pack everything under $OUT into one archive.
pack_results() { (cd "$OUT" && tar czf "../$1" . && find . -mindepth 1 -delete && mv "../$1" .); }
