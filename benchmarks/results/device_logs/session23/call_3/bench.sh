#!/bin/bash
# device call 3 (session 23): after the review merged the odd-total counting copy into one templated
# pass (e683594), the kernel alone against 2f5fe93 (.whl/base), in-process, one thread, alternating.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
K=benchmarks/results/device_logs/session23/call_2/paired_kernel.py
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
(cd .whl/base && python3 -c "import c3prof.analysis._bootstrap") > /dev/null 2>&1 || python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
for shape in "25 64 15" "2500 3 3"; do
  for i in 1 2 3 4; do
    echo -n "2f5fe93:   " | tee -a $R/kernel.txt; (cd .whl/base && taskset -c 0 python3 ../../$K /tmp/reps_base.npy $shape) | tee -a $R/kernel.txt
    echo -n "e683594:   " | tee -a $R/kernel.txt; taskset -c 0 python3 $K /tmp/reps_new.npy $shape | tee -a $R/kernel.txt
  done
  python3 -c "import numpy as np; a, b = np.load('/tmp/reps_base.npy'), np.load('/tmp/reps_new.npy'); print('replicates identical:', np.array_equal(a, b, equal_nan=True))" | tee -a $R/kernel.txt
done
python3 -m pytest -q -p no:cacheprovider tests/test_analysis_bootstrap_kernel.py -k "paired or round" > $R/kernel_tests.txt 2>&1; tail -1 $R/kernel_tests.txt
