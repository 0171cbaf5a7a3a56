#!/bin/bash
# device call 1 (session 23): round_median_rows with counts read once and one middle rank counted
# once; this tree against 9e4a0c8 (.whl/base): the kernel alone (in-process, one thread, alternating),
# the kernel tests, and the goal's layout (10^6 samples with rounds) and 2500 rounds x 25 scenarios
# on 2 pinned cores, with the two trees' JSON compared.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session23/call_1
T0=$(date +%s)
python3 -c "import orjson" 2>/dev/null || python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
(cd .whl/base && python3 -c "import c3prof.analysis._bootstrap") > /dev/null 2>&1 || python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
lscpu > $R/machine.txt 2>&1; python3 -c "import numpy, sys; print(sys.version); print('numpy', numpy.__version__)" >> $R/machine.txt
echo "built at $(( $(date +%s) - T0 )) s"
for i in 1 2 3; do
  echo -n "9e4a0c8:   " | tee -a $R/kernel.txt; (cd .whl/base && taskset -c 0 python3 ../../$HERE/paired_kernel.py /tmp/reps_base.npy) | tee -a $R/kernel.txt
  echo -n "this tree: " | tee -a $R/kernel.txt; taskset -c 0 python3 $HERE/paired_kernel.py /tmp/reps_new.npy | tee -a $R/kernel.txt
done
python3 -c "import numpy as np; a, b = np.load('/tmp/reps_base.npy'), np.load('/tmp/reps_new.npy'); print('replicates identical:', np.array_equal(a, b, equal_nan=True))" | tee -a $R/kernel.txt
python3 -m pytest -q -p no:cacheprovider tests/test_analysis_bootstrap_kernel.py > $R/kernel_tests.txt 2>&1; tail -1 $R/kernel_tests.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
run() {
  local name=$1 reps=$2; shift 2
  python3 benchmarks/bench_report.py "$@" --write-trace /tmp/$name.jsonl > /dev/null 2>&1
  python3 benchmarks/bench_report.py "$@" --cpus 0,1 --baseline-tree .whl/base --repeat $reps --json $R/bench_$name.json > $R/bench_$name.txt 2>&1
  grep -E "report --json|samples" $R/bench_$name.txt
  for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/$name.jsonl --json /tmp/o_${name}_$(basename $t).json -q ) > /dev/null 2>&1; done
  cmp -s /tmp/o_${name}_base.json /tmp/o_${name}_..json && echo "$name: JSON identical to 9e4a0c8's" | tee -a $R/identical.txt || echo "$name: JSON DIFFERS" | tee -a $R/identical.txt
  echo "  at $(( $(date +%s) - T0 )) s"
}
run rounds 9 --rounds
run long_rounds 3 --scenarios 25 --rounds
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
tar -czf $OUT/res.tgz -C $OUT res
