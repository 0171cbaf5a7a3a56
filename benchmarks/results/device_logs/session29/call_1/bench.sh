#!/bin/bash
# device call 1 (session 29): report --max-rows (the terminal tables cut at 50 scenarios/entries).
# This tree against 7c05f6b (.whl/base) on the SYNTHETIC 10^6-sample trace, pinned to CPUs 0,1,
# alternating: first with the terminal report printed (bench_report.py --terminal, stdout to
# /dev/null), then with --quiet as the goal is stated; the JSON compared; the host's speed before
# and after (probe_cpu_pairs.py).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
T0=$(date +%s)
python3 -m pip install -q --no-deps --no-index .whl/orjson-*.whl > $R/pip.log 2>&1
python3 setup.py build_ext --inplace > $R/build.log 2>&1 || { tail -20 $R/build.log; exit 1; }
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import subprocess, bench_report as b; subprocess.run([sys.executable, '-c', b._BUILD_KERNEL], cwd='.whl/base', check=True)" > $R/build_base.log 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --write-trace /tmp/rounds.jsonl > /dev/null 2>&1
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_before.txt 2>&1; tail -1 $R/cpu_before.txt
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --terminal --repeat 4 --json $R/bench_terminal.json > $R/bench_terminal.txt 2>&1
grep -E "report --json|samples|pairs|worktree|baseline" $R/bench_terminal.txt | tail -6
echo "  at $(( $(date +%s) - T0 )) s"
python3 benchmarks/bench_report.py --rounds --cpus 0,1 --baseline-tree .whl/base --repeat 9 --json $R/bench_quiet.json > $R/bench_quiet.txt 2>&1
grep -E "report --json|samples|pairs|worktree|baseline" $R/bench_quiet.txt | tail -6
echo "  at $(( $(date +%s) - T0 )) s"
for t in .whl/base .; do ( cd $t && taskset -c 0,1 python3 -m c3prof report /tmp/rounds.jsonl --json /tmp/o_$(basename $t).json > /tmp/t_$(basename $t).txt ) 2>&1; done
cmp -s /tmp/o_base.json /tmp/o_..json && echo "JSON identical to 7c05f6b's" | tee $R/identical.txt || echo "JSON DIFFERS" | tee $R/identical.txt
wc -l /tmp/t_base.txt /tmp/t_..txt | tee $R/terminal_lines.txt
cp /tmp/t_..txt $R/terminal_this_tree.txt
python3 benchmarks/probe_cpu_pairs.py --pairs 0,1 --repeat 3 > $R/cpu_after.txt 2>&1; tail -1 $R/cpu_after.txt
echo "  at $(( $(date +%s) - T0 )) s"
