#!/bin/bash
# device call 1 (session 26): where the 10^6-sample report (the goal's layout) spends its time on a
# device host, pinned to CPUs 0,1: this tree (37f1f8e) alone, 7 runs; the parent's stage timeline
# (stamps.py, 3 runs); imports (-X importtime); the cores busy over time (cpu_timeline.py); py-spy
# profiles of the parent and of every process; per-line costs of the reader (linecost.py).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session26/call_1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl .whl/py_spy-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -m compileall -q c3prof benchmarks > /dev/null
echo "built at $(( $(date +%s) - T0 )) s"
lscpu > $R/lscpu.txt; python3 --version > $R/python.txt
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --repeat 7 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
grep -E "report --json|samples" $R/bench_rounds.txt
for i in 1 2 3; do taskset -c 0,1 python3 $HERE/stamps.py /tmp/rounds.jsonl /tmp/o.json > $R/stamps_$i.txt 2>&1; done
cat $R/stamps_2.txt
for i in 1 2 3; do /usr/bin/time -f "python -c pass %e s" taskset -c 0 python3 -c pass; /usr/bin/time -f "python -S -c pass %e s" taskset -c 0 python3 -S -c pass; /usr/bin/time -f "import cli %e s" taskset -c 0 python3 -c "import c3prof.cli"; done > $R/start.txt 2>&1
taskset -c 0,1 python3 -X importtime -m c3prof report /tmp/rounds.jsonl --json /tmp/o.json -q 2> $R/importtime.txt
awk -F'|' '$3 ~ /^ [^ ]/ {s+=$2} END {print "imports (top level, us):", s}' $R/importtime.txt
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/cpu_timeline.py --cpus 0,1 --sampler-cpu 2 --bucket 0.1 -- python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o.json -q > $R/timeline.txt 2>&1; tail -3 $R/timeline.txt
taskset -c 2 py-spy record -r 250 -f raw -o $R/spy_parent.txt -- taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o.json -q > $R/spy_parent.log 2>&1
taskset -c 2 py-spy record -r 250 -f raw --subprocesses -o $R/spy_all.txt -- taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o.json -q > $R/spy_all.log 2>&1
python3 $HERE/agg.py $R/spy_parent.txt 40 25 > $R/spy_parent_agg.txt 2>&1; head -3 $R/spy_parent_agg.txt
for i in 1 2; do taskset -c 0 python3 $HERE/linecost.py; done > $R/linecost.txt 2>&1; cat $R/linecost.txt
echo "  at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/res.tgz -C $OUT res
