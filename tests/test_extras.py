"""`c3prof capture` without the `capture` extra: one line naming the extra, exit status 2."""

import subprocess
import sys
import textwrap

from c3prof.extras import missing_extra_message

# Runs the CLI with imports of `cuda` (cuda-bindings) made to fail, as on a machine where only the
# base dependencies are installed (pip install c3prof, without [capture]).
_WITHOUT_CUDA_BINDINGS = textwrap.dedent("""
    import importlib.abc, sys

    class NoCudaBindings(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "cuda" or name.startswith("cuda."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoCudaBindings())
    from c3prof.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_capture_without_cuda_bindings_names_the_extra(tmp_path):
    out = tmp_path / "trace.jsonl"
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_CUDA_BINDINGS, "capture", "--suite", "smoke",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "c3prof[capture]" in lines[0] and "cuda-bindings" in lines[0]
    assert not out.exists() or out.stat().st_size == 0


def test_message_names_distribution_and_extra():
    msg = missing_extra_message(ModuleNotFoundError("No module named 'pynvml'", name="pynvml"))
    assert msg is not None and "nvidia-ml-py" in msg and "'capture'" in msg


def test_unrelated_missing_module_is_not_blamed_on_an_extra():
    assert missing_extra_message(ModuleNotFoundError("No module named 'numpyy'", name="numpyy")) is None
    assert missing_extra_message(ModuleNotFoundError("No module named x")) is None
