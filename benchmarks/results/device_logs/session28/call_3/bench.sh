#!/bin/bash
# device call 3 (session 28): the trace's second part read ahead (read_ahead.py) before numpy is
# imported. Stages (stamp.py) without it and with this process's share at 0.35, 0.45 and 0.55,
# 3 runs each in turn; then this tree (share 0.45) against 88217b7 (.whl/base), the goal's layout,
# 11 runs each pinned to CPUs 0,1 and alternating; the JSON compared.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session28/call_3
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
for i in 1 2 3; do
  for s in none 0.35 0.45 0.55; do
    if [ $s = none ]; then E="NO_AHEAD=1"; else E="AHEAD_SHARE=$s"; fi
    env $E PYTHONPATH=$(pwd) taskset -c 0,1 python3 $HERE/stamp.py /tmp/rounds.jsonl /tmp/o.json > $R/stamp_${s}_$i.txt 2>&1
    echo "$s run $i: $(grep -E '^imports|ahead.result|later.result|^read |^merge|^end' $R/stamp_${s}_$i.txt | head -6 | awk '{print $1, $2, $4}' | tr '\n' ';')"
  done
done | tee $R/stamps.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 11 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_rounds.txt
for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o_$(basename $t).json -q ) > /dev/null 2>&1; done
cmp -s /tmp/o_base.json /tmp/o_..json && echo "rounds: JSON identical to 88217b7's" | tee $R/identical.txt || echo "rounds: JSON DIFFERS" | tee $R/identical.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
echo "  at $(( $(date +%s) - T0 )) s"
