#!/bin/bash
# device call 1 (session 27): where the committed tree's (a3a18b8) 10^6-sample report (the goal's
# layout, pinned to CPUs 0,1) spends system time and page faults; the stages with the parent's
# faults (stampsf.py); the read split's crossing by pipe and by file (readsplit2.py); the round
# kernels' fixed costs (kern.py); the analysis on one core, kernels against the rest (time_an.py).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session27/call_1
export PYTHONPATH=$(pwd)
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -m compileall -q c3prof benchmarks > /dev/null
echo "built at $(( $(date +%s) - T0 )) s"
lscpu > $R/lscpu.txt; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag > $R/thp.txt
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
for i in 1 2 3 4 5; do /usr/bin/time -v taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o.json -q 2>&1 | egrep "Elapsed|Maximum resident|page faults|User time|System time|context" | tr -s ' \t' ' ' | tr '\n' ';'; echo; done > $R/time_v.txt; cat $R/time_v.txt
for i in 1 2; do taskset -c 0,1 python3 $HERE/stampsf.py /tmp/rounds.jsonl /tmp/o.json > $R/stampsf_$i.txt 2>&1; done; cat $R/stampsf_2.txt
echo "  at $(( $(date +%s) - T0 )) s"
for r in 1 2 3; do for cfg in "pipe 0 0.6" "file 1 0.6" "file 1 0.5" "pipe 0 0.5"; do set -- $cfg; echo "== mode $1 intern $2 share $3: $(MODE=$1 INTERN=$2 SHARE=$3 taskset -c 0,1 python3 $HERE/readsplit2.py /tmp/rounds.jsonl | tr '\n' ' ')"; rm -f /dev/shm/tmp*; done; done > $R/readsplit.txt 2>&1; cat $R/readsplit.txt
for i in 1 2; do taskset -c 0 python3 $HERE/kern.py; done > $R/kern.txt 2>&1; cat $R/kern.txt
for i in 1 2; do taskset -c 0 python3 $HERE/time_an.py /tmp/rounds.jsonl; done > $R/time_an.txt 2>&1; cat $R/time_an.txt
echo "  at $(( $(date +%s) - T0 )) s"
