#!/bin/bash
# device call 2 (session 20): glibc malloc settings (c3prof/report/heap.py), side by side with faa2698 on 2 pinned cores
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1; python3 -c "import orjson; print('orjson', orjson.__version__)" >> $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
{ nproc; lscpu | egrep -v "^Flags|Vulnerab"; uptime; ldd --version | head -1; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; } > $R/machine.txt 2>&1
git log -1 --format=%H > $R/worktree_rev.txt 2>&1; git status --short >> $R/worktree_rev.txt 2>&1
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/r.jsonl > /dev/null 2>&1
python3 benchmarks/bench_report.py --write-trace /tmp/u.jsonl > /dev/null 2>&1
# the base tree (faa2698's c3prof/) with the worktree's compiled modules (no .pyx changed since)
cp c3prof/*.so .whl/base/c3prof/; cp c3prof/analysis/*.so .whl/base/c3prof/analysis/; cp c3prof/report/*.so .whl/base/c3prof/report/; cp c3prof/ingest/*.so .whl/base/c3prof/ingest/ 2>/dev/null
python3 -m compileall -q c3prof .whl/base/c3prof > /dev/null 2>&1
# CPU time, system time and page faults of the whole command, -j 1 and -j auto, alternating
for i in 1 2 3; do for t in .whl/base .; do for j in 1 auto; do
  ( cd $t && /usr/bin/time -f "$t j=$j wall %e user %U sys %S minflt %R maxrss_kb %M" taskset -c 0,1 python3 -m c3prof report /tmp/r.jsonl --json /tmp/o_$(basename $t)_$j.json -q -j $j ) >> $R/faults.txt 2>&1
done; done; done
for j in 1 auto; do cmp /tmp/o_base_$j.json /tmp/o_._$j.json && echo "rounds -j $j: JSON identical to faa2698's" >> $R/faults.txt; done
cmp /tmp/o_._1.json /tmp/o_._auto.json && echo "rounds: -j 1 and -j auto identical" >> $R/faults.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 9 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
tail -3 $R/bench_rounds.txt
python3 benchmarks/bench_report.py --cpus 0,1 --baseline-tree .whl/base --repeat 7 --json $R/bench_unpaired.json > $R/bench_unpaired.txt 2>&1
tail -3 $R/bench_unpaired.txt
for i in 1 2; do for t in .whl/base .; do echo "== $t" >> $R/stages_ab.txt; mkdir -p $t/benchmarks; cp benchmarks/report_stages.py $t/benchmarks/ 2>/dev/null; taskset -c 0,1 python3 $t/benchmarks/report_stages.py /tmp/r.jsonl 2>&1 | grep -v wrote >> $R/stages_ab.txt; done; done
cat $R/faults.txt
tar -czf $OUT/res.tgz -C $OUT res
