"""benchmarks/bench_collectives.py without a GPU: nccl-tests' flags and nccl-tests' table.

The table tests print SYNTHETIC numbers (made-up times, not measurements): they check layout and
arithmetic only. Measured tables come from the GPU runs (benchmarks/results/).
"""

import sys
from pathlib import Path

import pytest

# c3prof is imported first, so that it stays the installed package (its submodules are found
# through c3prof.__path__) once the repository root is put first on sys.path for `benchmarks`.
import c3prof  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_collectives  # noqa: E402
from benchmarks.nccl_tests_format import (  # noqa: E402
    IN_PLACE,
    OUT_OF_PLACE,
    avg_bus_bandwidth,
    format_block,
    format_time,
    sweep_sizes,
)
from c3prof.analysis.busbw import make_row  # noqa: E402


def test_nccl_tests_flags():
    args = bench_collectives.parse_args(["-b", "8M", "-e", "128M", "-f", "4", "-n", "50", "-w", "3", "-c", "0",
                                         "-d", "float", "-o", "sum", "-g", "1"])
    assert (args.min_bytes, args.max_bytes, args.factor) == (8 * 2**20, 128 * 2**20, 4)
    assert (args.iters, args.warmup, args.check, args.datatype, args.redop) == (50, 3, 0, "float", "sum")
    assert sweep_sizes(args) == [8 * 2**20, 32 * 2**20, 128 * 2**20]


def test_long_forms_and_step_bytes():
    args = bench_collectives.parse_args(["--minbytes", "1M", "--maxbytes", "4M", "--stepbytes", "1M",
                                         "--iters", "5", "--warmup_iters", "1"])
    assert sweep_sizes(args) == [2**20, 2 * 2**20, 3 * 2**20, 4 * 2**20]
    assert (args.iters, args.warmup) == (5, 1)


def test_defaults_sweep_64k_to_1g_by_2():
    sizes = sweep_sizes(bench_collectives.parse_args([]))
    assert sizes[0] == 64 * 1024 and sizes[-1] == 2**30 and all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


@pytest.mark.parametrize("argv, message", [
    (["-b", "1G", "-e", "1M"], "smaller than"),
    (["-f", "1"], "at least 2"),
    (["-f", "2", "-i", "1M"], "not allowed with"),
    (["-g", "2"], "invalid choice"),
    (["-o", "max"], "invalid choice"),
    (["-c", "0", "--corrupt-check"], "needs validation"),
    (["-d", "float", "--ops", "all_reduce"], "sums uint8"),
    (["-b", "lots"], "cannot read"),
])
def test_bad_flags_are_one_line_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        bench_collectives.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_time_format_follows_nccl_tests():
    assert format_time(25.9) == "  25.90"
    assert format_time(523.34) == "  523.3"
    assert format_time(12345.6) == "  12346"


def _synthetic_rows(check=True):
    # SYNTHETIC: made-up times on 2 ranks, not a measurement.
    rows = []
    for size, t_out, t_in in [(1 << 20, 40.0, 30.0), (1 << 30, 2000.0, 1600.0)]:
        for placement, t in ((OUT_OF_PLACE, t_out), (IN_PLACE, t_in)):
            rows.append(make_row("dma_pull", "all_gather", size, t, 2, 0 if check else -1, dtype="float",
                                 params={"placement": placement}))
    return rows


def test_table_has_both_placements_and_the_average_line():
    rows = _synthetic_rows()
    text = format_block("all_gather", "dma_pull", rows, check=True)
    lines = text.splitlines()
    assert "out-of-place" in lines[1] and "in-place" in lines[1]
    assert lines[2].split()[1:] == ["size", "count", "type", "redop", "root"] + ["time", "algbw", "busbw", "#wrong"] * 2
    data = [ln for ln in lines if not ln.startswith("#")]
    assert len(data) == 2
    first = data[0].split()
    # size, count (float: 4 bytes), type, redop, root; out-of-place 40 us; in-place 30 us.
    assert first[:5] == [str(1 << 20), str((1 << 20) // 4), "float", "none", "-1"]
    assert first[5] == "40.00" and first[9] == "30.00"
    algbw = (1 << 20) / 40e-6 / 1e9
    assert float(first[6]) == pytest.approx(algbw, abs=0.005) and float(first[7]) == pytest.approx(algbw / 2, abs=0.005)
    assert first[8] == first[12] == "0"
    assert "# Out of bounds values : 0 OK" in lines
    avg_line = next(ln for ln in lines if ln.startswith("# Avg bus bandwidth"))
    assert float(avg_line.split(":")[1]) == pytest.approx(avg_bus_bandwidth(rows), rel=1e-5)
    assert avg_bus_bandwidth(rows) == pytest.approx(sum(r.busbw for r in rows) / 4)


def test_data_columns_line_up_with_the_header():
    lines = format_block("all_gather", "dma_pull", _synthetic_rows(), check=True).splitlines()
    header, row = lines[2], next(ln for ln in lines if not ln.startswith("#"))
    for name in ("size", "count", "type", "redop", "root", "algbw", "busbw"):
        end = header.index(name) + len(name)
        assert row[end - 1] != " " and (end == len(row) or row[end] == " "), name


def test_unmeasured_placement_and_no_check_print_na():
    rows = [r for r in _synthetic_rows(check=False) if r.params["placement"] == OUT_OF_PLACE]
    text = format_block("all_to_all", "nccl", rows, check=False)
    data = [ln.split() for ln in text.splitlines() if not ln.startswith("#")]
    assert all(d[8] == "N/A" and d[9:] == ["N/A"] * 4 for d in data)
    assert "Out of bounds" not in text and "# Avg bus bandwidth" in text


def test_summary_compares_the_primary_placement_only():
    rows = _synthetic_rows()
    assert {r.params["placement"] for r in bench_collectives.primary_rows(rows)} == {IN_PLACE}


def test_sizes_read_as_nccl_tests_reads_them():
    from benchmarks.nccl_tests_format import parse_size

    assert [parse_size(t) for t in ("64K", "1M", "1G", "4096", "1MB", "256MiB")] == [
        65536, 2**20, 2**30, 4096, 10**6, 256 * 2**20]
    assert bench_collectives.parse_args(["--sizes", "64K,4M"]).sizes == [65536, 4 * 2**20]
