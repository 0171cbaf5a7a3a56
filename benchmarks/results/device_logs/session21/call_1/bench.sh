#!/bin/bash
# device call 1 (session 21): where a fresh report process spends time outside the report's work
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl .whl/py_spy-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
{ nproc; lscpu | egrep -v "^Flags|Vulnerab"; uptime; ldd --version | head -1; python3 -VV; env | grep -E '^PYTHON|^OMP|^MKL|^OPENBLAS|^LD_|^MALLOC|^GLIBC'; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; } > $R/machine.txt 2>&1
python3 -m compileall -q c3prof > /dev/null 2>&1
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/r.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 0,2 0,4 0,8 0,15 2,3 --repeat 3 --json $R/cpu_pairs.json > $R/cpu_pairs.txt 2>&1; cat $R/cpu_pairs.txt
python3 benchmarks/probe_startup.py /tmp/r.jsonl --cpus 0,1 --repeat 5 --json $R/startup.json > $R/startup.txt 2>&1
cat $R/startup.txt
python3 -X importtime -c "import c3prof.cli, c3prof.report.cli, c3prof.report.build, c3prof.analysis.dataset, c3prof.analysis.speedup, c3prof.report.json_out" 2> $R/importtime.txt
sort -t'|' -k2 -n $R/importtime.txt | tail -12
python3 -c "import site; print(site.getsitepackages())" > $R/site.txt; for d in $(python3 -c "import site; print(' '.join(site.getsitepackages()))"); do ls $d/*.pth; done >> $R/site.txt 2>&1
for i in 1 2; do taskset -c 0,1 python3 benchmarks/report_stages.py /tmp/r.jsonl 2>&1 | grep -v wrote >> $R/stages.txt; done
grep wall $R/stages.txt
for i in 1 2 3 4; do for c in 0,1 0,8 4,12; do /usr/bin/time -f "cpus $c: %e s wall %U user %S sys" taskset -c $c python3 -m c3prof report /tmp/r.jsonl --json /tmp/o.json -q 2>&1 | grep cpus >> $R/pairs_report.txt; done; done
cat $R/pairs_report.txt
taskset -c 2 py-spy record -r 200 -s -n -f raw -o $R/prof.txt -- taskset -c 0,1 python3 -m c3prof report /tmp/r.jsonl --json /tmp/o.json -q > $R/pyspy.log 2>&1; tail -3 $R/pyspy.log
tar -czf $OUT/res.tgz -C $OUT res
