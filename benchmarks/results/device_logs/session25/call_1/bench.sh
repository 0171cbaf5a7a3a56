#!/bin/bash
# device call 1 (session 25): this tree (masked gathers in the summary's hierarchical sums; AVX-512
# copies of the round medians' passes) against 2a807c8 (.whl/base): the kernel tests on this CPU;
# the kernels timed in both trees (kernels.py); where this tree's report spends its time
# (report_stages.py, pinned); the goal's layout (10^6 samples with rounds), 11 runs each, pinned to
# CPUs 0,1 and alternating, the JSONs compared.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
ROOT=$(pwd); HERE=benchmarks/results/device_logs/session25/call_1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
lscpu > $R/machine.txt 2>&1; gcc --version | head -1 >> $R/machine.txt
echo "built at $(( $(date +%s) - T0 )) s"
python3 -m pytest -q -p no:cacheprovider tests/test_analysis_bootstrap_kernel.py > $R/tests.txt 2>&1; tail -1 $R/tests.txt
python3 -c "from c3prof.analysis import _bootstrap as k; print('avx512 in use:', k.use_avx512(True))" | tee $R/avx512.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
for t in . .whl/base .; do echo "== $t"; ( cd $t && taskset -c 0,1 python3 $ROOT/$HERE/kernels.py ); done 2>&1 | tee $R/kernels.txt
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
for i in 1 2; do taskset -c 0,1 python3 benchmarks/report_stages.py /tmp/rounds.jsonl > $R/stages_$i.txt 2>&1; done; tail -16 $R/stages_2.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 11 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_rounds.txt
for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o_$(basename $t).json -q ) > /dev/null 2>&1; done
cmp -s /tmp/o_base.json /tmp/o_..json && echo "rounds: JSON identical to 2a807c8's" | tee $R/identical.txt || echo "rounds: JSON DIFFERS" | tee $R/identical.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
tar -czf $OUT/res.tgz -C $OUT res
