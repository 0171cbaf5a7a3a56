#!/bin/bash
# device call 2 (session 21): this tree against 7572d65 on 2 pinned cores, with the report's imports
# given their bytecode (bench_report.bytecode_prefix); the host's CPU speed probed before and after.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
{ nproc; lscpu | egrep -v "^Flags|Vulnerab"; uptime; python3 -VV; } > $R/machine.txt 2>&1
git status --short | grep -v "^ D\|^D " > $R/worktree_status.txt 2>&1
cp c3prof/*.so .whl/base/c3prof/; cp c3prof/analysis/*.so .whl/base/c3prof/analysis/; cp c3prof/report/*.so .whl/base/c3prof/report/; cp c3prof/ingest/*.so .whl/base/c3prof/ingest/ 2>/dev/null
python3 -m compileall -q c3prof .whl/base/c3prof > /dev/null 2>&1
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/r.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; cat $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 9 --json $R/bench_rounds.json > $R/bench_rounds.txt 2>&1
tail -5 $R/bench_rounds.txt
python3 benchmarks/bench_report.py --cpus 0,1 --baseline-tree .whl/base --repeat 5 --json $R/bench_unpaired.json > $R/bench_unpaired.txt 2>&1
tail -4 $R/bench_unpaired.txt
python3 benchmarks/probe_startup.py /tmp/r.jsonl --cpus 0,1 --repeat 3 --json $R/startup_plain.json > $R/startup.txt 2>&1
python3 benchmarks/probe_startup.py /tmp/r.jsonl --cpus 0,1 --repeat 3 --bytecode --json $R/startup_bytecode.json >> $R/startup.txt 2>&1
cat $R/startup.txt
mkdir -p .whl/base/benchmarks; cp benchmarks/report_stages.py .whl/base/benchmarks/
for i in 1 2; do for t in .whl/base .; do echo "== $t" >> $R/stages_ab.txt; taskset -c 0,1 python3 $t/benchmarks/report_stages.py /tmp/r.jsonl 2>&1 | grep -v wrote >> $R/stages_ab.txt; done; done
grep -E "==|wall|merge" $R/stages_ab.txt
for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/r.jsonl --json /tmp/o_$(basename $t).json -q ) > /dev/null 2>&1; done
cmp /tmp/o_base.json /tmp/o_..json && echo "rounds: JSON identical to 7572d65's" | tee -a $R/stages_ab.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; cat $R/cpu_after.txt
tar -czf $OUT/res.tgz -C $OUT res
