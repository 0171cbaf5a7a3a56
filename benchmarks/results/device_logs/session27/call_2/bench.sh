#!/bin/bash
# device call 2 (session 27): why the analysis of the 10^6-sample trace takes 1.75 s on two pinned
# CPUs in two processes when one process on one CPU takes 2.1-2.3 s (call 1): the analysis alone
# (an_jobs.py) with jobs 1 on one CPU, jobs 1 on two (kernel threads), jobs 2 on two (forked); and
# the one-process analysis on CPU 0 alone against two copies at once on CPUs 0 and 1 (contention
# between the two CPUs, whatever c3prof does); and CPU pairs' loop probe.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session27/call_2
export PYTHONPATH=$(pwd)
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -m compileall -q c3prof benchmarks > /dev/null
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 0,2 0,8 --repeat 3 > $R/cpu_pairs.txt 2>&1; cat $R/cpu_pairs.txt
for r in 1 2 3; do
  echo "-- round $r"
  taskset -c 0 python3 $HERE/an_jobs.py /tmp/rounds.jsonl 1
  taskset -c 0,1 python3 $HERE/an_jobs.py /tmp/rounds.jsonl 1
  taskset -c 0,1 python3 $HERE/an_jobs.py /tmp/rounds.jsonl 2
  echo "two copies at once, jobs 1, on CPU 0 and CPU 1:"
  taskset -c 0 python3 $HERE/an_jobs.py /tmp/rounds.jsonl 1 & taskset -c 1 python3 $HERE/an_jobs.py /tmp/rounds.jsonl 1; wait
done > $R/an_jobs.txt 2>&1; cat $R/an_jobs.txt
echo "  at $(( $(date +%s) - T0 )) s"
