#!/usr/bin/env bash
# The whole multi-GPU sweep in one call, for one machine kind:
#
#   bash benchmarks/multigpu_session.sh --nproc 8                       # one rank per GPU (a multi-GPU node)
#   bash benchmarks/multigpu_session.sh --nproc 1 --small               # world size 1 on one GPU
#   bash benchmarks/multigpu_session.sh --nproc 2 --share-one-gpu --small   # two processes on GPU 0
#
# Options: --out DIR (default $OUT, else out/multigpu), --small (sizes 64 KiB-16 MiB, two scenarios
# per suite, few repetitions: the one-GPU check, a few minutes), --tests (also the GPU tests of the
# DMA paths and the three forms of test_multigpu_collectives.py), --no-build, --no-pack.
#
# Steps, each logged under DIR/logs (benchmarks/device_common.sh):
#   collectives   bench_collectives.py: nccl-tests table of every implementation (NCCL SM, NCCL CE, c3prof
#                 dma_push/dma_pull/dma_auto; all_to_all local block on its own stream vs inline; one stream
#                 vs the automatic per-peer schedule), 64 KiB-1 GiB, byte-exact with a corruption check,
#                 GPM engine evidence and the latency breakdown -> collectives.json, collectives_table.txt
#   flags         c3prof's DMA collectives with every flag operation of an exchange in one cuStreamBatchMemOp
#   isolated      the same DMA collectives with every rank seeing only its own GPU (--isolate-devices)
#   llama70b, llama405b   c3prof capture of the suite (every strategy; GPM counters on every rank, engine
#                 evidence in the capture), then c3prof report with figures
#   figures       benchmarks/plot_collectives.py: busbw vs size and the latency breakdown (PNG)
# With --share-one-gpu NCCL is impossible (two ranks on one GPU): only c3prof's DMA collectives run.
# NVLink multicast stays off in every process (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
# NVSHMEM_DISABLE_NVLS=1; device_common.sh exports them).
NPROC=1 SHARE=0 SMALL=0 TESTS=0 BUILD=1 PACK=1
while [ $# -gt 0 ]; do
  case $1 in
    --nproc) NPROC=$2; shift ;;
    --share-one-gpu) SHARE=1 ;;
    --small) SMALL=1 ;;
    --tests) TESTS=1 ;;
    --no-build) BUILD=0 ;;
    --no-pack) PACK=0 ;;
    --out) export OUT=$2; shift ;;
    *) echo "multigpu_session.sh: unknown option $1 (see the header of this script)" >&2; exit 2 ;;
  esac
  shift
done
case $NPROC in ''|*[!0-9]*|0) echo "multigpu_session.sh: --nproc needs a positive integer" >&2; exit 2 ;; esac
OUT=${OUT:-out/multigpu}
: "${STEP_TIMEOUT:=0}"
source "$(dirname "$0")/device_common.sh"
summarize() { grep -E "^# |passed|failed|[Ee]rror|CORRUPTION|c3prof capture|rank " "$1" | grep -vE "^# +(size|\(B\))" | tail -n 30; }
TR="python3 -m torch.distributed.run --standalone --nproc-per-node=$NPROC"

if [ "$SHARE" = 1 ]; then
  IMPLS=dma_push,dma_pull,dma_auto SHARED=(--share-gpu)
  STRATS=(--strategies dma,dma+rp --dma-collectives dma_push,dma_pull)
else
  IMPLS=nccl,nccl_ce,dma_push,dma_pull,dma_auto SHARED=()
  STRATS=(--strategies base,sp,rp,dma,dma+rp)
fi
if [ "$SMALL" = 1 ]; then
  SIZES=(-b 64K -e 16M -f 16 -n 5 -w 2 --runs 2 --evidence-bytes 16M) ISO_SIZES=1M REPS=(--reps 3 --max-reps 5 --warmup 1) RP=(--rp-gemm-sms 64 --rp-comm-ctas 8)
  ONLY70=(--only llama70b-tp-ag-decode,llama70b-ep-a2a) ONLY405=(--only llama405b-tp-ag-decode,llama405b-ep-a2a)
  [ "$SHARE" = 1 ] || STRATS=(--strategies base,dma)
else
  SIZES=(-b 64K -e 1G -f 2) ISO_SIZES=16M,256M REPS=() RP=() ONLY70=() ONLY405=()
fi
echo "=== multigpu session: $NPROC rank(s), share-one-gpu=$SHARE small=$SMALL -> $OUT"
FAILED=()
run() { step "$@" || FAILED+=("$1"); }

[ "$BUILD" = 1 ] && { step build python3 setup.py build_ext --inplace || exit 1; }
if [ "$TESTS" = 1 ]; then
  run tests python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu_dma_paths.py tests/test_multigpu_collectives.py
fi
run collectives $TR benchmarks/bench_collectives.py "${SHARED[@]}" --impls $IMPLS "${SIZES[@]}" \
  --dma-local stream,inline --dma-streams 1,auto --breakdown --corrupt-check --evidence --json "$OUT/collectives.json"
grep -vE "^=== " "$LOG/collectives.log" | sed -n '/^# .*rank(s), iters/,$p' > "$OUT/collectives_table.txt"
run flags $TR benchmarks/bench_collectives.py "${SHARED[@]}" --impls dma_push,dma_pull --flag-write batch \
  --sizes 64K,1M,16M --breakdown --json "$OUT/collectives_flag_batch.json"
ISO=(--isolate-devices); [ "$SHARE" = 1 ] && ISO+=(--share-gpu)
run isolated $TR benchmarks/bench_collectives.py "${ISO[@]}" --impls dma_push,dma_pull --dma-api memcpy,peer \
  --sizes $ISO_SIZES --breakdown --json "$OUT/collectives_isolated.json"
for suite in llama70b llama405b; do
  if [ $suite = llama70b ]; then ONLY=("${ONLY70[@]}"); else ONLY=("${ONLY405[@]}"); fi
  run "capture_$suite" $TR -m c3prof capture --suite $suite "${ONLY[@]}" "${STRATS[@]}" "${SHARED[@]}" "${RP[@]}" \
    "${REPS[@]}" --counters gpm --out "$OUT/$suite.jsonl" --quiet
  run "report_$suite" python3 -m c3prof report "$OUT"/$suite.rank*.jsonl --quiet --figures "$OUT/figures_$suite" \
    --json "$OUT/report_$suite.json"
done
run figures python3 benchmarks/plot_collectives.py "$OUT/collectives.json" --out "$OUT/figures_collectives"
echo "=== multigpu session done: ${#FAILED[@]} step(s) failed${FAILED:+: ${FAILED[*]}}"
[ "$PACK" = 1 ] && pack_results multigpu_results.tgz
[ ${#FAILED[@]} = 0 ]
