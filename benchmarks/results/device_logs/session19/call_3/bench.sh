#!/bin/bash
# device call 3 (session 19): build, then the 10^6-sample report side by side with 7a383aa on 2 pinned cores
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1; python3 -c "import orjson; print('orjson', orjson.__version__)" >> $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
{ nproc; lscpu | egrep -v "^Flags|Vulnerab"; uptime; } > $R/machine.txt 2>&1
git log -1 --format=%H > $R/worktree_rev.txt 2>&1; git status --short >> $R/worktree_rev.txt 2>&1
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/r.jsonl > /dev/null 2>&1
# base tree with the worktree's compiled modules (its .pyx are 7a383aa's but for _trace_read's two added methods)
cp c3prof/*.so .whl/base/c3prof/; cp c3prof/analysis/*.so .whl/base/c3prof/analysis/; cp c3prof/report/*.so .whl/base/c3prof/report/; cp c3prof/ingest/*.so .whl/base/c3prof/ingest/ 2>/dev/null
mkdir -p .whl/base/benchmarks; cp benchmarks/report_stages.py .whl/base/benchmarks/; sed -i 's/from c3prof import forked/from c3prof.analysis import forked/' .whl/base/benchmarks/report_stages.py
for i in 1 2 3 4 5; do for p in 1 2; do PYTHONPATH=. taskset -c 0,1 python3 .whl/rd.py /tmp/r.jsonl $p >> $R/read_one_vs_two.txt 2>&1; done; done
for i in 1 2 3; do for t in .whl/base .; do echo "== $t" >> $R/stages_ab.txt; taskset -c 0,1 python3 $t/benchmarks/report_stages.py /tmp/r.jsonl 2>&1 | grep -v wrote >> $R/stages_ab.txt; done; done
# startup and exit: the command's wall against the time in main (and the imports)
for i in 1 2 3; do s=$(date +%s.%N); PYTHONPATH=. taskset -c 0,1 python3 .whl/exit.py /tmp/r.jsonl >> $R/startup_exit.txt 2>&1; e=$(date +%s.%N); python3 -c "print('process total', round($e-$s,3), 'after main', round($e-float(open('/tmp/t1').read()),3))" >> $R/startup_exit.txt; done
for i in 1 2 3; do /usr/bin/time -f "report --help %e s" taskset -c 0,1 python3 -m c3prof report --help > /dev/null 2>> $R/startup_exit.txt; done
taskset -c 0,1 python3 -X importtime -m c3prof report --help 2> $R/importtime.txt > /dev/null
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 9 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
tail -3 $R/bench_rounds.txt
python3 benchmarks/bench_report.py --cpus 0,1 --baseline-tree .whl/base --repeat 7 --json $R/bench_unpaired.json > $R/bench_unpaired.txt 2>&1
tail -3 $R/bench_unpaired.txt
sort $R/read_one_vs_two.txt | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print "read processes="k": "a[k]}'
grep -E "==|wall|read_trace|merge|analyze|strategies_rest" $R/stages_ab.txt
cat $R/startup_exit.txt; sort -t'|' -k2 -n $R/importtime.txt | tail -6
tar -czf $OUT/res.tgz -C $OUT res
