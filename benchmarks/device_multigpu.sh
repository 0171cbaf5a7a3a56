#!/usr/bin/env bash
# Multi-GPU (issue 5) steps on a device machine: build, then the steps named on the command line,
# each logged under $OUT/logs with a compact summary printed at the end of its log.
#
#   bash benchmarks/device_multigpu.sh build ipc1gpu collectives1gpu          # one GPU (today)
#   bash benchmarks/device_multigpu.sh build multigpu                         # >= 2 GPUs (later)
#
# ipc1gpu          two processes share GPU 0: IPC plumbing, flag ordering, validation of c3prof's DMA
#                  collectives (pytest tests/test_gpu_ipc_dma.py + a bench_collectives sweep)
# collectives1gpu  world size 1: NCCL SM / CTA-limited / CE paths and a capture through the runner
# multigpu         all GPUs: bandwidth table of every implementation (64 KiB - 1 GiB), DMA variants
#                  (push/pull, memcpy/batch/peer, chunks, streams), GPM evidence, NCCL CE log check,
#                  the isolated-devices control (the suspected cause of the naive 32 GB/s), a LLaMA capture
: "${STEP_TIMEOUT:=0}"   # no per-step limit unless asked: a full multi-GPU table can take minutes
source "$(dirname "$0")/device_common.sh"
NGPU=$(python3 -c "import torch;print(torch.cuda.device_count())" 2>/dev/null || echo 0)
TR="python3 -m torch.distributed.run --standalone"

summarize() { grep -E "^# |passed|failed|[Ee]rror|CORRUPTION|c3prof capture" "$1" | grep -vE "^# +(size|\(B\))" | tail -n 40; }

for s in "$@"; do
  case $s in
    build) step build python3 setup.py build_ext --inplace || exit 1 ;;
    ipc1gpu)
      step ipc_tests python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu_ipc_dma.py
      step ipc_bench $TR --nproc-per-node=2 benchmarks/bench_collectives.py --share-gpu --impls dma_push,dma_pull \
        --dma-api memcpy,batch,peer --dma-chunks 1,4 --dma-streams 1,2 -b 64K -e 256M \
        --corrupt-check --json "$OUT/ipc1gpu.json" ;;
    collectives1gpu)
      step w1_bench $TR --nproc-per-node=1 benchmarks/bench_collectives.py --ops all_gather,all_to_all,all_reduce \
        --nccl-max-ctas 8,32 -b 64K -e 1G --corrupt-check --evidence --json "$OUT/collectives_w1.json"
      step w1_capture $TR --nproc-per-node=1 -m c3prof capture --suite llama70b --strategies base,sp,rp,dma \
        --rp-gemm-sms 96 --rp-comm-ctas 8 --out "$OUT/llama70b_w1.jsonl" --quiet ;;
    multigpu)
      if [ "$NGPU" -lt 2 ]; then echo "=== multigpu: skipped, $NGPU GPU(s) visible"; continue; fi
      step mg_tests python3 -m pytest -q -p no:cacheprovider -rs tests/test_multigpu_collectives.py
      step mg_bench $TR --nproc-per-node=$NGPU benchmarks/bench_collectives.py --nccl-max-ctas 8,32 \
        --dma-api memcpy,batch,peer --dma-chunks 1,4 --dma-streams 1,3 --corrupt-check --evidence \
        --json "$OUT/collectives_n$NGPU.json"
      step mg_bench2 $TR --nproc-per-node=2 benchmarks/bench_collectives.py --impls nccl,nccl_ce,dma_push,dma_pull \
        --json "$OUT/collectives_n2.json"
      step mg_isolated $TR --nproc-per-node=2 benchmarks/bench_collectives.py --isolate-devices --impls dma_push,dma_pull \
        --dma-api memcpy,peer --sizes 16M,256M --json "$OUT/collectives_isolated.json"
      step mg_memop $TR --nproc-per-node=$NGPU benchmarks/bench_collectives.py --impls dma_push,dma_pull --flag-write memop \
        --sizes 64K,1M,16M,256M --json "$OUT/collectives_memop.json"
      step mg_nccl_ce_log $TR --nproc-per-node=$NGPU benchmarks/bench_collectives.py --impls nccl_ce --sizes 64M \
        --iters 3 --runs 1 --warmup 1 --nccl-debug "$OUT/nccl_logs" --json "$OUT/nccl_ce_log.json"
      step mg_capture $TR --nproc-per-node=$NGPU -m c3prof capture --suite llama70b --strategies base,sp,rp,dma \
        --out "$OUT/llama70b_n$NGPU.jsonl" --quiet ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
done
pack_results device_multigpu_results.tgz
