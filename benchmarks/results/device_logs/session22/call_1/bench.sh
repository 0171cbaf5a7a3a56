#!/bin/bash
# device call 1 (session 22): this tree against 8d9da49 (.whl/base) on 2 pinned cores, five layouts
# of the benchmark's SYNTHETIC traces; the reports' JSONs compared between the two trees.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1 || { tail -20 $R/build_base.log; exit 1; }
{ nproc; lscpu | egrep -v "^Flags|Vulnerab"; grep -o -w "avx512f" /proc/cpuinfo | head -1; uptime; python3 -VV; python3 -c "import numpy; print('numpy', numpy.__version__)"; } > $R/machine.txt 2>&1
echo "built in $(( $(date +%s) - T0 )) s"
python3 -m pytest -q -p no:cacheprovider tests/test_analysis_bootstrap_kernel.py tests/test_analysis_batched.py > $R/kernel_tests.txt 2>&1; tail -1 $R/kernel_tests.txt
# layout name | bench_report arguments | repeats
run() {
  local name=$1 reps=$2; shift 2
  python3 benchmarks/bench_report.py "$@" --write-trace /tmp/$name.jsonl > /dev/null 2>&1
  python3 benchmarks/bench_report.py "$@" --cpus 0,1 --baseline-tree .whl/base --repeat $reps --json $R/bench_$name.json > $R/bench_$name.txt 2>&1
  grep -E "report --json|samples" $R/bench_$name.txt
  for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/$name.jsonl --json /tmp/o_${name}_$(basename $t).json -q ) > /dev/null 2>&1; done
  cmp -s /tmp/o_${name}_base.json /tmp/o_${name}_..json && echo "$name: JSON identical to 8d9da49's" | tee -a $R/identical.txt || echo "$name: JSON DIFFERS" | tee -a $R/identical.txt
  echo "  at $(( $(date +%s) - T0 )) s"
}
run long_rounds 5 --scenarios 25 --rounds
run reps2_unpaired 3 --samples 80000 --scenarios 2500
run reps2_rounds 3 --samples 80000 --scenarios 2500 --rounds
run even24_unpaired 3 --samples 960000
tar -czf $OUT/res.tgz -C $OUT res
