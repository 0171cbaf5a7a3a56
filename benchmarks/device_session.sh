#!/usr/bin/env bash
# One device-machine session: build c3prof in place against the image's packages, then run the
# steps named on the command line, logging everything under $OUT (or ./out/device when unset).
#
#   bash benchmarks/device_session.sh build gputests bench capture-smoke capture-default report-default
#
# The device image has torch, triton, cuda-bindings, Cython and pytest but reaches no package
# registry, so the extension is built with the image's setuptools (no build isolation).
# Each step gets STEP_TIMEOUT seconds (default 240).
source "$(dirname "$0")/device_common.sh"

# The interference study's controls and rate arms (beside the 64-row GEMM), and the arms whose counters
# explain it (every direction, the copy sizes, a throttled copy engine, a rate-matched SM HBM copy, sleep).
CONTROLS=mb64-sleep,mb64-h2d-256M,mb64-h2d-256M-1M,mb64-d2h-256M,mb64-h2d-1M-gap20us,mb64-h2d-1M-gap60us,mb64-h2d-1M-gap200us,mb64-h2d-1M-gap600us,mb64-hbm-allsm,mb64-hbm-1cta,mb64-hbm-2cta,mb64-hbm-4cta,mb64-hbm-8cta
GRID=mb64-h2d-1copy,mb64-d2h-1copy,mb64-bidir-1copy,mb64-h2d-64K,mb64-h2d-1M-gap200us,mb64-hbm-2cta,mb64-sleep

for s in "$@"; do
  case $s in
    build) step build python3 setup.py build_ext --inplace || exit 1 ;;
    info) step info bash -c 'nvidia-smi; python3 -c "import torch,triton;print(torch.__version__,torch.version.cuda,torch.cuda.nccl.version(),triton.__version__)"; pip list 2>/dev/null | grep -iE "cuda|cupti|nvidia|torch|triton|cython|rich|hypothesis|pytest"; which ncu; ncu --version; ls /usr/local/cuda/extras/CUPTI/lib64 2>/dev/null | head; python3 -c "import nvidia.cuda_cupti,os;print(os.listdir(os.path.dirname(nvidia.cuda_cupti.__path__[0])))" ' ;;
    gpucounters) step gpucounters python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu_counters.py ;;
    gputests) step gputests python3 -m pytest -q -p no:cacheprovider tests/test_gpu_dma.py tests/test_gpu_transports.py tests/test_gpu_capture.py tests/test_gpu_counters.py ;;
    runsh) step runsh bash -c 'rm -rf out/default-*.jsonl out/figures out/report.json; /usr/bin/time -f "run.sh wall %e s" bash scripts/run.sh && cp out/default-*.jsonl "$0/h200_runsh.jsonl" && cp -r out/figures "$0/figures_runsh" && cp out/report.json "$0/report_runsh.json"' "$OUT" ;;
    gpurest) step gpurest python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu_ipc_dma.py tests/test_multigpu_collectives.py ;;
    gputransports) step gputransports python3 -m pytest -q -p no:cacheprovider tests/test_gpu_transports.py ;;
    capture-default|capture-default2) step "$s" /usr/bin/time -v python3 -m c3prof capture --suite default --visits 2 --quiet --out "$OUT/h200_${s#capture-}.jsonl" ;;
    report-default|report-default2) step "$s" python3 -m c3prof report "$OUT/h200_${s#report-}.jsonl" --figures "$OUT/figures_${s#report-}" --json "$OUT/report_${s#report-}.json" ;;
    bench) step bench_enqueue python3 benchmarks/bench_enqueue.py --json "$OUT/bench_enqueue.json";
           step bench_gemm_timing python3 benchmarks/bench_gemm_timing.py --json "$OUT/bench_gemm_timing.json" ;;
    capture-smoke) step capture_smoke python3 -m c3prof capture --suite smoke --strategies base,sp,rp,dma --out "$OUT/h200_smoke.jsonl" ;;
    capture-interference) step capture_interference python3 -m c3prof capture --suite interference --strategies base,dma --quiet --out "$OUT/h200_interference.jsonl" &&
           step report_interference python3 -m c3prof report "$OUT/h200_interference.jsonl" --quiet --figures "$OUT/figures_interference" --json "$OUT/report_interference.json" ;;
    counters-interference) step counters_interference env C3PROF_KEEP_NCU_CSV="$OUT/h200_interference_ncu_raw.csv" python3 -m c3prof capture --suite interference --only mb64-h2d-1copy,mb64-d2h-1copy --strategies base,dma --counters ncu,pmsampling --quiet --out "$OUT/h200_interference_counters.jsonl" ;;
    capture-controls) step capture_controls python3 -m c3prof capture --suite interference --only "$CONTROLS" --strategies base,dma --quiet --out "$OUT/h200_interference_controls.jsonl" &&
           step report_controls python3 -m c3prof report "$OUT/h200_interference_controls.jsonl" --quiet --json "$OUT/report_controls.json" ;;
    counters-grid) step counters_grid env C3PROF_KEEP_NCU_CSV="$OUT/h200_interference_grid_ncu_raw.csv" python3 -m c3prof capture --suite interference --only "$GRID" --strategies base,dma --counters ncu --quiet --out "$OUT/h200_interference_grid_counters.jsonl" ;;
    hbm-order) step hbm_order python3 -m c3prof capture --suite interference --only mb64-hbm-allsm --strategies base,sp,dma --no-evidence --quiet --out "$OUT/h200_interference_hbm_order.jsonl" ;;
    capture-heldout|capture-heldout2|capture-heldout3) step "$s" python3 -m c3prof capture --suite "${s#capture-}" --quiet --out "$OUT/h200_${s#capture-}.jsonl" ;;
    capture-ncu) step capture_ncu env C3PROF_KEEP_NCU_CSV="$OUT/h200_ncu_raw.csv" python3 -m c3prof capture --suite default --only cb8k-h2d-64M,mb64-h2d-8M --strategies base,dma --counters ncu,pmsampling --out "$OUT/h200_counters.jsonl" ;;
    # The default suite as scripts/run.sh captures it (4 visits, each in a fresh process), into
    # $OUT/h200_default_proc2_<letter>.jsonl: run twice in a row for a back-to-back pair.
    capture-proc-?) for v in 1 2 3 4; do resume=(); [ "$v" -gt 1 ] && resume=(--resume)
           step "${s}_visit$v" python3 -m c3prof capture --suite default --visits "$v" --max-reps 30 --quiet "${resume[@]}" --out "$OUT/h200_default_proc2_${s#capture-proc-}.jsonl"; done ;;
    standalone-interference) step standalone_interference python3 benchmarks/standalone_interference.py --reps 45 --json "$OUT/standalone_interference.json" ;;
    pmsampling) step pmsampling bash benchmarks/probe_pmsampling.sh ;;
    # `report` speed on two pinned cores of the (otherwise idle) device host, side by side with the
    # c3prof package in $BASELINE_TREE (a `git archive REV c3prof` unpacked there), on the SYNTHETIC
    # 10^6-sample trace without and with rounds, and --figures on $FIGURES_TRACE. orjson (the `fast`
    # extra) from a wheel in $WHEELS when given: the device reaches no package registry.
    # ALSO_JOBS=auto: this worktree with report -j auto as a further candidate, and an unpinned run.
    bench-report)
      [ -n "$WHEELS" ] && step install_fast python3 -m pip install --no-index --no-deps -q "$WHEELS"/orjson-*.whl
      for layout in unpaired rounds; do
        flag=(); [ "$layout" = rounds ] && flag=(--rounds)
        step "trace_$layout" python3 benchmarks/bench_report.py "${flag[@]}" --write-trace "/tmp/bench_$layout.jsonl"
        step "report_stages_$layout" taskset -c 0,1 python3 benchmarks/report_stages.py "/tmp/bench_$layout.jsonl" --json "$OUT/report_stages_$layout.json"
        step "bench_report_$layout" python3 benchmarks/bench_report.py "${flag[@]}" --cpus 0,1 --baseline-tree "$BASELINE_TREE" ${ALSO_JOBS:+--also-jobs "$ALSO_JOBS"} --repeat 5 --json "$OUT/bench_report_$layout.json"
      done
      # The same without pinning (report -j auto then uses up to 4 of the host's 16 CPUs).
      [ -n "${ALSO_JOBS:-}" ] && step bench_report_unpinned python3 benchmarks/bench_report.py --rounds --also-jobs "$ALSO_JOBS" --repeat 3 --json "$OUT/bench_report_rounds_unpinned.json"
      step bench_report_figures python3 benchmarks/bench_report.py --figures "$FIGURES_TRACE" --cpus 0,1 --baseline-tree "$BASELINE_TREE" --repeat 5 --json "$OUT/bench_report_figures.json" ;;
    # --figures on $FIGURES_TRACE, side by side with $BASELINE_TREE, on 2 and on 4 pinned cores; then
    # the figure worker's tests, and one report with Python's DeprecationWarnings shown (the worker
    # forks its helpers: Python 3.12+ warns on forking a process that has threads).
    bench-figures)
      step bench_report_figures python3 benchmarks/bench_report.py --figures "$FIGURES_TRACE" --cpus 0,1 --baseline-tree "$BASELINE_TREE" --repeat 7 --json "$OUT/bench_report_figures.json"
      step bench_report_figures_4cpus python3 benchmarks/bench_report.py --figures "$FIGURES_TRACE" --cpus 0,1,2,3 --baseline-tree "$BASELINE_TREE" --repeat 5 --json "$OUT/bench_report_figures_4cpus.json"
      step figure_worker_tests python3 -m pytest -q -p no:cacheprovider -rw tests/test_figure_worker.py
      step figures_warnings python3 -W default::DeprecationWarning -m c3prof report "$FIGURES_TRACE" -q --figures /tmp/figures_warnings ;;
    kineto) step kineto python3 tests/data/record_kineto_trace.py --out "$OUT" ;;
    *) echo "unknown step $s"; exit 2 ;;
  esac
done
pack_results device_results.tgz
