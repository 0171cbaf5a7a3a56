"""The figure workers' matplotlib import leaves out the docstrings matplotlib generates
(c3prof.figures.worker.skip_generated_docstrings) and draws the same pixels; the caller's matplotlib
is never changed.

Each side runs in a fresh interpreter (the skip only works before matplotlib's figure modules are
imported, which this test process has done long before): ``skip`` runs ``c3prof ingest --figures``
and ``c3prof report --figures`` as the command does, ``plain`` imports matplotlib.figure in the
caller first, so its forked workers inherit the complete import and skip nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from report_helpers import ROOT, SYNTHETIC

import matplotlib.artist
import matplotlib.figure  # noqa: F401  (what makes skip_generated_docstrings a no-op in this process)
from matplotlib.artist import Artist

from c3prof.figures.worker import skip_generated_docstrings

RANK0 = ROOT / "tests" / "data" / "synthetic_kineto_rank0.json"  # synthetic fixture (tests/data/README_ingest.md)

SCRIPT = """
import sys
mode, out = sys.argv[1], sys.argv[2]
if mode == "plain":
    import matplotlib.figure
from c3prof.cli import main
from c3prof.figures.worker import FigurePool
assert main(["ingest", sys.argv[3], "-o", out + "/ingest", "-q", "--figures", out + "/fig"]) == 0
assert main(["report", sys.argv[4], "-q", "--figures", out + "/fig/report"]) == 0
with FigurePool(1) as pool:
    print("worker:", pool.draw([("test_figure_worker_import", "set_docstring_state", ())])[0])
print("caller imported matplotlib.figure:", "matplotlib.figure" in sys.modules)
"""


def set_docstring_state() -> list[Path]:
    """A figure job: whether this worker's matplotlib has its generated docstrings: Line2D.set()'s
    and the Line2D property table in Axes.plot's."""
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

    generated = ["Supported properties" in (Line2D.set.__doc__ or ""), "antialiased" in (Axes.plot.__doc__ or "")]
    return [Path("generated" if all(generated) else "skipped" if not any(generated) else f"mixed {generated}")]


def _start(mode: str, out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    # Run outside the source tree: `python -c` puts the working directory first on sys.path, and in CI
    # the source tree is an unpacked sdist without the compiled extensions the installed wheel has.
    out.mkdir(parents=True)
    return subprocess.Popen([sys.executable, "-c", SCRIPT, mode, str(out), str(RANK0), str(SYNTHETIC)],
                            cwd=out, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_workers_skip_generated_docstrings_and_draw_the_same_pixels(tmp_path):
    runs = {mode: _start(mode, tmp_path / mode) for mode in ("skip", "plain")}  # both at once
    said = {}
    for mode, proc in runs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        said[mode] = stdout.splitlines()[-2:]
    assert said["skip"] == ["worker: skipped", "caller imported matplotlib.figure: False"]
    assert said["plain"] == ["worker: generated", "caller imported matplotlib.figure: True"]
    pngs = sorted(p.relative_to(tmp_path / "skip") for p in (tmp_path / "skip" / "fig").rglob("*.png"))
    assert Path("fig/ingest_summary.png") in pngs and len(pngs) >= 5  # the ingest figure and the report's
    assert pngs == sorted(p.relative_to(tmp_path / "plain") for p in (tmp_path / "plain" / "fig").rglob("*.png"))
    for png in pngs:
        skipped, plain = (np.asarray(Image.open(tmp_path / mode / png)) for mode in ("skip", "plain"))
        np.testing.assert_array_equal(skipped, plain, err_msg=str(png))


def test_no_skip_where_the_figure_modules_are_already_imported():
    before = Artist.__dict__["_update_set_signature_and_docstring"], matplotlib.artist.kwdoc
    assert skip_generated_docstrings() is False
    assert (Artist.__dict__["_update_set_signature_and_docstring"], matplotlib.artist.kwdoc) == before
