#!/bin/bash
# device call 3 (session 25): the tree to be committed (call 2's changes) against 2a807c8 (.whl/base):
# the round medians alone in each tree (call_1/kernels.py, one thread); the goal's layout (10^6
# samples with rounds), 15 runs each, pinned to CPUs 0,1 and alternating; the unpaired layout, 5 runs
# each; the JSONs compared; where this tree's report spends its time (report_stages.py).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
ROOT=$(pwd); HERE=benchmarks/results/device_logs/session25/call_3
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
for t in . .whl/base . .whl/base; do echo "== $t"; ( cd $t && taskset -c 0,1 python3 $ROOT/benchmarks/results/device_logs/session25/call_1/kernels.py | grep paired ); done 2>&1 | tee $R/kernels.txt
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/bench_report.py --write-trace /tmp/unpaired.jsonl > /dev/null 2>&1
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 15 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_rounds.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --cpus 0,1 --baseline-tree .whl/base --repeat 5 --json $R/bench_unpaired.json > $R/bench_unpaired.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_unpaired.txt
for name in rounds unpaired; do
  for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/$name.jsonl --json /tmp/o_${name}_$(basename $t).json -q ) > /dev/null 2>&1; done
  cmp -s /tmp/o_${name}_base.json /tmp/o_${name}_..json && echo "$name: JSON identical to 2a807c8's" || echo "$name: JSON DIFFERS"
done | tee $R/identical.txt
taskset -c 0,1 python3 benchmarks/report_stages.py /tmp/rounds.jsonl > $R/stages_1.txt 2>&1; tail -15 $R/stages_1.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
tar -czf $OUT/res.tgz -C $OUT res
