#!/bin/bash
# device call 3 (session 24): ce89c19 against 93ae2d2 (.whl/base) on the goal's layout (10^6 samples
# with rounds), 15 runs each, pinned to CPUs 0,1 and alternating, the JSON compared; where this
# tree's report spends its time (benchmarks/report_stages.py, pinned); and the share of the trace
# the parent reads (trace_parts.FIRST_SHARE 0.5, 0.55, 0.6; reading alone, 12 rounds, pinned).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session24/call_3
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
lscpu > $R/machine.txt 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 $HERE/share.py /tmp/rounds.jsonl 12 | tee $R/share.txt
for i in 1 2; do taskset -c 0,1 python3 benchmarks/report_stages.py /tmp/rounds.jsonl > $R/stages_$i.txt 2>&1; done; cat $R/stages_2.txt | tail -16
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 15 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
grep -E "report --json|samples" $R/bench_rounds.txt
for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o_$(basename $t).json -q ) > /dev/null 2>&1; done
cmp -s /tmp/o_base.json /tmp/o_..json && echo "rounds: JSON identical to 93ae2d2's" | tee $R/identical.txt || echo "rounds: JSON DIFFERS" | tee $R/identical.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
tar -czf $OUT/res.tgz -C $OUT res
