#!/bin/bash
# device call 2 (session 26): call 1's scripts with the package on the path (call 1 ran them without);
# whether the interpreter finds compiled bytecode for numpy (call 1: numpy's import took 0.18 s);
# the parent's stage timeline (call_1/stamps.py) with the read split at 0.5, 0.6 (as committed), 0.7;
# the same with every module's bytecode compiled under PYTHONPYCACHEPREFIX (numpy's included).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=$(pwd)
R=$OUT/res; mkdir -p $R
C1=benchmarks/results/device_logs/session26/call_1
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -m compileall -q c3prof benchmarks > /dev/null
echo "built at $(( $(date +%s) - T0 )) s"
{ env | grep -E '^PYTHON' ; python3 -c "import numpy, os, sys; d=os.path.dirname(numpy.__file__); print(numpy.__version__, d, 'pycache:', os.path.isdir(os.path.join(d, '__pycache__')), 'writable:', os.access(d, os.W_OK)); print(sys.flags)"; } | tee $R/env.txt
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
for share in 0.6 0.5 0.7 0.6 0.5 0.7 0.6; do echo "== share $share"; SHARE=$share taskset -c 0,1 python3 $C1/stamps.py /tmp/rounds.jsonl /tmp/o.json 2>&1 | grep -v wrote; done > $R/stamps.txt
grep -E "share|later.result|^read|^merge|in_processes|^end" $R/stamps.txt
for i in 1 2; do taskset -c 0 python3 $C1/linecost.py; done > $R/linecost.txt 2>&1; cat $R/linecost.txt
echo "  at $(( $(date +%s) - T0 )) s"
# bytecode for everything under a prefix (nothing written into site-packages)
export PYTHONPYCACHEPREFIX=/tmp/pyc
python3 -m compileall -q $(python3 -c "import numpy, os; print(os.path.dirname(numpy.__file__))") c3prof benchmarks > /dev/null 2>&1
python3 -X importtime -c "import numpy" 2>&1 | tail -1 | tee $R/numpy_import_pyc.txt
for i in 1 2 3; do SHARE=0.6 taskset -c 0,1 python3 $C1/stamps.py /tmp/rounds.jsonl /tmp/o.json 2>&1 | grep -v wrote; done > $R/stamps_pyc.txt
grep -E "imports|^read|^end" $R/stamps_pyc.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --repeat 5 --no-compile > $R/bench_pyc.txt 2>&1; grep -E "report --json" $R/bench_pyc.txt
unset PYTHONPYCACHEPREFIX
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --repeat 5 > $R/bench.txt 2>&1; grep -E "report --json" $R/bench.txt
echo "  at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/res.tgz -C $OUT res
