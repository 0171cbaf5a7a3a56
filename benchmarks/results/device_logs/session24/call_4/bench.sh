#!/bin/bash
# device call 4 (session 24): where the report's wall time goes on 2 pinned cores, whole process:
# the CPU use of the report (parent) and of its forked children every 20 ms (timeline.py), with the
# stages' start and end (marks.py runs the command as cli.program does), 3 runs of ea80c12 on the
# goal's layout (10^6 samples with rounds, SYNTHETIC); and the plain command's time beside them.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session24/call_4
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
# Bytecode for every module a report imports, in a private cache, as an installed package has it
# (this host sets PYTHONDONTWRITEBYTECODE=1 and its numpy ships none; bench_report.py does the same):
# one untimed report writes it.
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache
taskset -c 0,1 python3 $HERE/marks.py report /tmp/rounds.jsonl --json /tmp/o.json -q > /dev/null 2>&1
for i in 1 2 3; do
  taskset -c 0,1 python3 $HERE/timeline.py python3 $HERE/marks.py report /tmp/rounds.jsonl --json /tmp/o.json -q > $R/timeline_$i.txt 2>&1
  /usr/bin/time -f "plain command: %e s wall, %U+%S s CPU" taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o2.json -q >> $R/plain.txt 2>&1
done
cat $R/plain.txt; head -16 $R/timeline_2.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
tar -czf $OUT/res.tgz -C $OUT res
