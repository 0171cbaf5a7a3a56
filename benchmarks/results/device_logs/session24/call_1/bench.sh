#!/bin/bash
# device call 1 (session 24): c3prof report --json on the goal's layout (10^6 samples with rounds)
# and the unpaired 10^6 layout, this tree against 93ae2d2 (.whl/base), reports pinned to CPUs 0,1 and
# alternating, and the two trees' JSON compared. This tree: the report's process ends without
# freeing what it built (c3prof/quick_exit.py), the result rows' JSON encoded while the strategy
# summary's child computes (json_out.ResultRowsJSON), the merge without a PhaseData per phase, the
# comm sweeps after the summary's fork, one pass for the summary's rows and for new round ids.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 -c "import orjson; print('orjson', orjson.__version__, hasattr(orjson, 'Fragment'))" | tee $R/orjson.txt
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
lscpu > $R/machine.txt 2>&1; python3 -c "import numpy, sys; print(sys.version); print('numpy', numpy.__version__)" >> $R/machine.txt
echo "built at $(( $(date +%s) - T0 )) s"
python3 -m pytest -q -p no:cacheprovider tests/test_report_json_out.py tests/test_analysis_dataset.py tests/test_quick_exit.py tests/test_forked.py tests/test_report_cli.py > $R/tests.txt 2>&1; tail -1 $R/tests.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
run() {
  local name=$1 reps=$2; shift 2
  python3 benchmarks/bench_report.py "$@" --write-trace /tmp/$name.jsonl > /dev/null 2>&1
  python3 benchmarks/bench_report.py "$@" --cpus 0,1 --baseline-tree .whl/base --repeat $reps --json $R/bench_$name.json > $R/bench_$name.txt 2>&1
  grep -E "report --json|samples" $R/bench_$name.txt
  for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/$name.jsonl --json /tmp/o_${name}_$(basename $t).json -q ) > /dev/null 2>&1; done
  cmp -s /tmp/o_${name}_base.json /tmp/o_${name}_..json && echo "$name: JSON identical to 93ae2d2's" | tee -a $R/identical.txt || echo "$name: JSON DIFFERS" | tee -a $R/identical.txt
  echo "  at $(( $(date +%s) - T0 )) s"
}
run rounds 11 --rounds
run unpaired 5
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
tar -czf $OUT/res.tgz -C $OUT res
