#!/bin/bash
# device call 4 (session 28): the read-ahead alone, measured side by side: this tree against the
# same tree whose read_ahead.start never starts a child (.whl/noahead), 13 runs each pinned to CPUs
# 0,1 and alternating, the goal's layout; then this tree against 88217b7 (.whl/base, session 27's
# final), 13 runs each; the JSONs compared.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/noahead --repeat 13 --json $R/bench_noahead.json > $R/bench_noahead.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_noahead.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 13 --json $R/bench_base.json > $R/bench_base.txt 2>&1
grep -E "report --json|pairs" $R/bench_base.txt
( cd .whl/base && python3 -c "import sys; sys.path.insert(0, '../../benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], check=True)" ) > $R/build_base.log 2>&1
for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o_$(basename $t).json -q ) > /dev/null 2>&1; done
cmp -s /tmp/o_base.json /tmp/o_..json && echo "rounds: JSON identical to 88217b7's" | tee $R/identical.txt || echo "rounds: JSON DIFFERS" | tee $R/identical.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
echo "  at $(( $(date +%s) - T0 )) s"
