#!/bin/bash
# device call 2 (session 28): the same tree as call 1 plus a test (no code change) against 88217b7
# (.whl/base), the goal's layout, 15 runs each pinned to CPUs 0,1 and alternating; the unpaired
# layout, 7 runs each; both JSONs compared; numpy's import alone, 5 fresh interpreters on CPU 0.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/bench_report.py --write-trace /tmp/plain.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 15 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_rounds.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --cpus 0,1 --baseline-tree .whl/base --repeat 7 --json $R/bench_plain.json > $R/bench_plain.txt 2>&1
grep -E "report --json|samples|pairs" $R/bench_plain.txt
for name in rounds plain; do
  for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/$name.jsonl --json /tmp/o_${name}_$(basename $t).json -q ) > /dev/null 2>&1; done
  cmp -s /tmp/o_${name}_base.json /tmp/o_${name}_..json && echo "$name: JSON identical to 88217b7's" || echo "$name: JSON DIFFERS"
done | tee $R/identical.txt
for i in 1 2 3 4 5; do /usr/bin/time -f "%e s wall %U user %S sys" taskset -c 0 python3 -c "import numpy"; done 2> $R/numpy_import.txt; cat $R/numpy_import.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
echo "  at $(( $(date +%s) - T0 )) s"
