#!/bin/bash
# device call 4 (session 25): which of the round medians' changes help on this CPU. Three builds of
# c3prof/analysis/_bootstrap.pyx loaded side by side in one process (kernels_ab.py): 2a807c8's
# (.whl/base), this tree's (int8 counts, one gather for one middle rank, the insertion sort), and
# this tree's without the int8 tier (.whl/noint8: the counts transposed in int16 first, as before).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
HERE=benchmarks/results/device_logs/session25/call_4
B1='import sys; from setuptools import Extension, setup; from Cython.Build import cythonize
sys.argv = ["setup.py", "build_ext", "--inplace", "-q"]
setup(ext_modules=cythonize([Extension("c3prof.analysis._bootstrap", ["c3prof/analysis/_bootstrap.pyx"], language="c++", extra_compile_args=["-O3", "-ffp-contract=off", "-pthread"], extra_link_args=["-pthread"])], quiet=True))'
T0=$(date +%s)
for t in . .whl/base .whl/noint8; do ( cd $t && python3 -c "$B1" ) > $R/build_$(basename $t).log 2>&1 || { tail -5 $R/build_$(basename $t).log; exit 1; } & done; wait
echo "built at $(( $(date +%s) - T0 )) s"
lscpu | grep -i "model name" > $R/machine.txt
so() { ls $1/c3prof/analysis/_bootstrap*.so; }
for i in 1 2; do taskset -c 0 python3 $HERE/kernels_ab.py base=$(so .whl/base) tree=$(so .) noint8=$(so .whl/noint8); done 2>&1 | tee $R/kernels_ab.txt
echo "  at $(( $(date +%s) - T0 )) s"
tar -czf $OUT/res.tgz -C $OUT res
