"""What ingest's speed-ups must not change, and what they rely on (no GPU).

* ``MedianSample`` draws its bootstrap replicates only when asked, with the same values as drawing
  them at once; its median is np.median's.
* ``names.head`` is cached: the same answers for the same names.
* The reader's small chunks: a real gzip trace of many chunks reads as it does in one chunk, and a
  kernel name longer than a chunk is read whole.
* The summary figure's bars are one collection per series; error bars only where there is an
  interval; the bars' left end stays an x-axis edge; unhinted text is set for the figure only; rows
  are labelled by a text each (no ticks); a panel where no scenario has a value says why.
* The figure worker imports with the garbage collector off, then freezes and turns it back on.
"""

from __future__ import annotations

import gc
import gzip
import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest

import c3prof.ingest.figures as ingest_figures
from c3prof.analysis.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_medians, rng_for
from c3prof.figures.worker import FigurePool
from c3prof.ingest import names, reader
from c3prof.ingest.analyze import ingest
from c3prof.ingest.stats import MedianSample, ratio_ci

DATA = Path(__file__).parent / "data"
FOREIGN_GZ = DATA / "foreign" / "hta" / "nccl_parser_config" / "nccl_data.json.gz"  # real, 10 MB of JSON


@pytest.mark.parametrize("values", [[5.0], [3.0, 1.0], [4.0, 9.0, 1.0, 7.0, 7.0], list(range(40, 0, -3))])
def test_median_sample_is_lazy_and_draws_what_it_drew_before(values):
    key = ("scenario", "gemm_alone")
    s = MedianSample(values, key)
    assert s.median == float(np.median(values))
    assert "replicates" not in s.__dict__  # nothing drawn yet
    expected = bootstrap_medians(np.asarray(values, dtype=float), DEFAULT_RESAMPLES,
                                 rng_for(DEFAULT_SEED, "ingest", *key))
    np.testing.assert_array_equal(s.replicates, expected)
    assert s.replicates is s.replicates  # drawn once


def test_median_sample_order_of_draws_does_not_matter():
    a1, b1 = MedianSample([1.0, 2.0, 3.0, 4.0], ("a",)), MedianSample([2.0, 5.0, 6.0], ("b",))
    a2, b2 = MedianSample([1.0, 2.0, 3.0, 4.0], ("a",)), MedianSample([2.0, 5.0, 6.0], ("b",))
    first = ratio_ci(lambda x, y: x / y, a1, b1)
    _ = b2.replicates  # drawn in the other order
    second = ratio_ci(lambda x, y: x / y, a2, b2)
    assert first.as_list() == second.as_list()


def test_empty_median_sample():
    s = MedianSample([], ("none",))
    assert s.n == 0 and np.isnan(s.median)
    assert np.isnan(s.replicates).all() and s.replicates.size == DEFAULT_RESAMPLES


def test_head_is_cached_and_unchanged():
    name = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"
    first = names.head(name)
    assert first == "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
    hits = names.head.cache_info().hits
    assert names.head(name) == first
    assert names.head.cache_info().hits == hits + 1


def test_default_chunks_read_a_real_gzip_trace_as_one_chunk_does(monkeypatch):
    small = reader.read_kineto(FOREIGN_GZ)
    assert small.bytes_read > 20 * reader.CHUNK_BYTES  # many chunks
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64 << 20)  # the whole document at once
    whole = reader.read_kineto(FOREIGN_GZ)
    assert small.names == whole.names and small.args == whole.args and small.events_seen == whole.events_seen
    for table in ("gpu", "launch", "cpu"):
        for col, values in getattr(small, table).items():
            np.testing.assert_array_equal(values, getattr(whole, table)[col], err_msg=f"{table}.{col}")


def test_an_event_longer_than_a_chunk_is_read_whole(tmp_path):
    long_name = "k" * (3 * reader.CHUNK_BYTES + 17)  # synthetic: one kernel whose name spans 4 chunks
    doc = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": long_name, "pid": 0, "tid": 7, "ts": 1.0,
                            "dur": 2.0, "args": {"correlation": 1, "device": 0, "stream": 7}}]}
    path = tmp_path / "long.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    t = reader.read_kineto(path)
    assert t.n_gpu == 1 and t.names[int(t.gpu["name"][0])] == long_name


class _Row:
    """A synthetic stand-in for a ScenarioResult: only what the figure reads."""

    def __init__(self, share, gemm_slowdown, gemm_ci, fraction, fraction_ci):
        self.time_share, self.flags, self.gemm, self.gemm_kernels = share, [], None, ["nvjet_x"]
        self.comm = type("Comm", (), {"label": "all_gather 64MiB"})()
        self.gemm_slowdown, self.gemm_slowdown_ci = gemm_slowdown, gemm_ci
        self.comm_slowdown, self.comm_slowdown_ci = None, None
        self.fraction_of_ideal, self.fraction_ci = fraction, fraction_ci


def _figure_axes(traces, rows):
    """Build the summary figure without saving it; return its axes."""
    from c3prof.figures.common import new_figure

    built = []
    ingest_figures._draw(traces, rows, Path("."), ("png",), new_figure,
                         lambda fig, *a, **k: built.append(fig) or [])
    return built[0].axes


def test_figure_bars_are_collections_with_error_bars_only_where_there_is_an_interval():
    from matplotlib.collections import LineCollection, PolyCollection

    rows = [_Row(0.6, 1.2, [1.1, 1.3], 0.5, [0.4, 0.6]), _Row(0.4, None, None, None, None),
            _Row(0.1, 1.5, None, 0.2, None)]
    result = ingest([DATA / "synthetic_kineto_rank0.json"])  # synthetic fixture (documented in tests/data)
    breakdown, share, slow, frac = _figure_axes(result.traces, rows)
    polys = [c for c in share.collections if isinstance(c, PolyCollection)]
    assert len(polys) == 1 and len(polys[0].get_paths()) == 3
    # The first bar's right end is its share in percent; bars start at 0, which stays the edge.
    assert polys[0].get_paths()[0].vertices[:, 0].max() == pytest.approx(60.0)
    assert share.get_xlim()[0] == 0.0
    # Slowdowns: one interval (row 0) -> one error segment; fraction of ideal: likewise.
    for ax in (slow, frac):
        errs = [c for c in ax.collections if isinstance(c, LineCollection)]
        assert len(errs) == 1 and len(errs[0].get_segments()) == 1
    # The breakdown: one collection of (device x class) segments, a legend entry per class.
    seg = [c for c in breakdown.collections if isinstance(c, PolyCollection)]
    n_dev = sum(len(t.breakdown) for t in result.traces)
    assert len(seg) == 1 and len(seg[0].get_paths()) == n_dev * len(ingest_figures.CLASSES)
    assert [t.get_text() for t in breakdown.get_legend().get_texts()] == list(ingest_figures.CLASSES)


def test_figure_text_is_unhinted_for_this_figure_only(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(ingest_figures, "_draw",
                        lambda *a: seen.append(matplotlib.rcParams["text.hinting"]) or [])
    before = matplotlib.rcParams["text.hinting"]
    ingest_figures.draw([], [], tmp_path)
    assert seen == ["no_hinting"] and matplotlib.rcParams["text.hinting"] == before


def _gc_state() -> list[Path]:
    """A stand-in figure job: the worker's collector state, as paths."""
    return [Path(f"enabled={gc.isenabled()}"), Path(f"frozen={gc.get_freeze_count() > 0}")]


def test_worker_collector_is_on_and_frozen_after_its_imports():
    with FigurePool(1, preload=("c3prof.ingest.figures",)) as pool:
        assert pool.draw([(__name__, "_gc_state", ())]) == [Path("enabled=True"), Path("frozen=True")]


def test_figure_rows_are_labelled_by_texts_and_a_panel_without_values_says_why():
    rows = [_Row(0.6, None, None, None, None), _Row(0.4, None, None, None, None)]  # no reference anywhere
    result = ingest([DATA / "synthetic_kineto_rank0.json"])  # synthetic fixture (documented in tests/data)
    breakdown, share, slow, frac = _figure_axes(result.traces, rows)
    # One text per bar row, beside the axis (no tick objects): the scenario labels, the devices.
    assert [t.get_text() for t in share.texts] == ["nvjet_x | all_gather 64MiB"] * 2
    assert [t.get_position()[1] for t in share.texts] == [0, 1] and share.get_yticks().size == 0
    devices = [f"rank {b['rank']} dev {b['device']}" for t in result.traces for b in t.breakdown]
    assert [t.get_text().split(" (")[0] for t in breakdown.texts] == devices
    # Slowdowns and fraction of ideal: a note instead of an empty axis.
    for ax, what in ((slow, "No slowdown: "), (frac, "No fraction of ideal: ")):
        (note,) = ax.texts
        assert note.get_text().startswith(what) and "reference" in note.get_text()
        assert ax.get_xticks().size == 0 and not ax.collections and not ax.lines


def test_figure_panels_with_values_have_no_note():
    rows = [_Row(0.6, 1.2, [1.1, 1.3], 0.5, [0.4, 0.6])]
    _, _, slow, frac = _figure_axes(ingest([DATA / "synthetic_kineto_rank0.json"]).traces, rows)
    assert not slow.texts and not frac.texts and slow.get_xticks().size and frac.get_xticks().size
