#!/bin/bash
# device call 1 (session 28): this tree (the analysis' metrics kept to the end, cheaper complete
# runs, the strategy rows' lists in one pass) against 88217b7 (.whl/base, session 27's final),
# the goal's layout, 11 runs each pinned to CPUs 0,1 and alternating; JSON compared; the stages of
# this tree (stamp.py, 2 runs); the interpreter's own start and imports (-X importtime).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session28/call_1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 11 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_rounds.txt
echo "  at $(( $(date +%s) - T0 )) s"
for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o_$(basename $t).json -q ) > /dev/null 2>&1; done
cmp -s /tmp/o_base.json /tmp/o_..json && echo "rounds: JSON identical to 88217b7's" | tee $R/identical.txt || echo "rounds: JSON DIFFERS" | tee $R/identical.txt
for i in 1 2; do PYTHONPATH=$(pwd) taskset -c 0,1 python3 $HERE/stamp.py /tmp/rounds.jsonl /tmp/o.json > $R/stamp_$i.txt 2>&1; done; cat $R/stamp_2.txt
python3 -X importtime -c "import c3prof.cli, c3prof.report.cli, c3prof.report.build, c3prof.report.json_out" 2> $R/importtime.txt
for i in 1 2 3; do /usr/bin/time -f "%e s wall %U user %S sys" taskset -c 0,1 python3 -c pass; done 2> $R/python_start.txt; cat $R/python_start.txt
sort -t'|' -k2 -n $R/importtime.txt | tail -8
echo "  at $(( $(date +%s) - T0 )) s"
