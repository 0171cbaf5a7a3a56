#!/bin/bash
# device call 5 (session 26): the committed tree's 10^6-sample report (the goal's layout), pinned to
# CPUs 0,1, alternating run by run between the device image as it is (numpy without bytecode,
# PYTHONDONTWRITEBYTECODE=1: numpy's sources compiled at every import) and the same with every
# module's bytecode compiled beforehand under PYTHONPYCACHEPREFIX (as a pip-installed numpy has it).
# Wall and CPU seconds of each run from /usr/bin/time.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -m compileall -q c3prof > /dev/null
PYTHONPYCACHEPREFIX=/tmp/pyc python3 -m compileall -q $(python3 -c "import numpy, os; print(os.path.dirname(numpy.__file__))") c3prof > /dev/null 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
for i in $(seq 1 12); do
  /usr/bin/time -f "as-is %e s wall %U+%S CPU-s" taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/a.json -q 2>&1 | grep as-is
  PYTHONPYCACHEPREFIX=/tmp/pyc /usr/bin/time -f "bytecode %e s wall %U+%S CPU-s" taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/b.json -q 2>&1 | grep bytecode
done | tee $R/pyc_pairs.txt
cmp -s /tmp/a.json /tmp/b.json && echo "JSON identical" | tee $R/identical.txt
python3 - $R/pyc_pairs.txt <<'PY' | tee $R/summary.txt
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
asis = [float(r[1]) for r in rows if r[0] == "as-is"]
pyc = [float(r[1]) for r in rows if r[0] == "bytecode"]
d = [a - b for a, b in zip(asis, pyc)]
print(f"as-is median {statistics.median(asis):.2f} s ({min(asis):.2f}-{max(asis):.2f}); with bytecode {statistics.median(pyc):.2f} s ({min(pyc):.2f}-{max(pyc):.2f}); as-is minus bytecode per pair: median {statistics.median(d):+.2f} s ({min(d):+.2f}..{max(d):+.2f}); under 3 s: {sum(x < 3 for x in asis)} and {sum(x < 3 for x in pyc)} of {len(asis)}")
PY
echo "  at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/res.tgz -C $OUT res
