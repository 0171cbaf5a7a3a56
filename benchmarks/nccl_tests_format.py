"""nccl-tests' command line and result table, for benchmarks/bench_collectives.py (no torch, no GPU).

The layout is that of NVIDIA/nccl-tests (src/common.cu): one line per size with the out-of-place
and the in-place measurement side by side, then ``# Out of bounds values`` and
``# Avg bus bandwidth`` (the mean bus bandwidth over every measurement printed, both placements).
Times print as nccl-tests prints them: 2 decimals below 100 us, 1 below 10 ms, none above.

A placement an implementation does not have here prints ``N/A`` in its four columns: c3prof's
all_to_all always reads a separate source buffer (out-of-place only) and its all_reduce runs in
place (in-place only).
"""

from __future__ import annotations

import argparse
import re
import statistics

from c3prof.analysis.busbw import TYPE_BYTES, BandwidthRow, size_sweep
from c3prof.errors import C3profError
from c3prof.units import parse_bytes

OUT_OF_PLACE, IN_PLACE = "out-of-place", "in-place"
PLACEMENTS = (OUT_OF_PLACE, IN_PLACE)
# The placements each operation has in c3prof's collectives (see the module docstring).
PLACEMENTS_BY_OP = {"all_gather": PLACEMENTS, "all_to_all": (OUT_OF_PLACE,), "all_reduce": (IN_PLACE,)}
# The placement compared across implementations in the SUMMARY (the one every implementation has).
PRIMARY_PLACEMENT = {"all_gather": IN_PLACE, "all_to_all": OUT_OF_PLACE, "all_reduce": IN_PLACE}


_NCCL_TESTS_SIZE = re.compile(r"^([0-9]+)([KMGkmg]?)$")


def parse_size(text: str) -> int:
    """A size as nccl-tests reads it: a number with an optional K, M or G suffix, binary (1K = 1024).
    Other spellings go through c3prof.units (KB/MB/GB decimal, KiB/MiB/GiB binary)."""
    m = _NCCL_TESTS_SIZE.match(text.strip())
    if m:
        value = int(m.group(1)) * 1024 ** " KMG".index(m.group(2).upper() or " ")
        if value > 0:
            return value
    return parse_bytes(text)


def byte_size(text: str) -> int:
    """parse_size for argparse: a bad size is a usage error."""
    try:
        return parse_size(text)
    except C3profError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def add_nccl_tests_arguments(ap: argparse.ArgumentParser) -> None:
    """nccl-tests' flags (short and long forms), with their meaning here."""
    g = ap.add_argument_group("nccl-tests options", "sizes as in nccl-tests: K, M, G are binary (64K = 65536)")
    g.add_argument("-b", "--minbytes", "--min-bytes", dest="min_bytes", type=byte_size, default=64 * 1024,
                   metavar="SIZE", help="smallest size (default 64K)")
    g.add_argument("-e", "--maxbytes", "--max-bytes", dest="max_bytes", type=byte_size, default=2**30,
                   metavar="SIZE", help="largest size (default 1G)")
    step = g.add_mutually_exclusive_group()
    step.add_argument("-f", "--stepfactor", "--factor", dest="factor", type=int, default=None, metavar="F",
                      help="multiply the size by F between steps (default 2)")
    step.add_argument("-i", "--stepbytes", dest="step_bytes", type=byte_size, default=None, metavar="SIZE",
                      help="add SIZE between steps instead")
    g.add_argument("-n", "--iters", type=_positive_int, default=20, help="launches timed per run (default 20)")
    g.add_argument("-w", "--warmup_iters", "--warmup", dest="warmup", type=int, default=5,
                   help="untimed launches before each size (default 5)")
    g.add_argument("-c", "--check", type=int, choices=(0, 1), default=1,
                   help="validate the result byte for byte after timing (1, default) or not (0: #wrong N/A)")
    g.add_argument("-d", "--datatype", default="uint8", choices=sorted(TYPE_BYTES),
                   help="element type of the count column; the buffers are bytes, so all_gather and all_to_all "
                        "move the same bytes whatever the type; all_reduce sums uint8 only (default uint8)")
    g.add_argument("-o", "--op", dest="redop", default="sum", choices=("sum",),
                   help="reduction of all_reduce: sum only (default sum)")
    g.add_argument("-g", "--ngpus", type=int, default=1, choices=(1,),
                   help="GPUs per process: 1 (one process per GPU; start N ranks with torchrun --nproc-per-node N)")


def check_nccl_tests_arguments(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Cross-option checks; errors end as argparse's one-line usage error (exit status 2)."""
    if args.max_bytes < args.min_bytes:
        ap.error(f"-e/--maxbytes ({args.max_bytes}) is smaller than -b/--minbytes ({args.min_bytes})")
    if args.factor is not None and args.factor < 2:
        ap.error(f"-f/--stepfactor must be at least 2, got {args.factor}")
    if args.warmup < 0:
        ap.error(f"-w/--warmup_iters must be >= 0, got {args.warmup}")
    if args.datatype != "uint8" and "all_reduce" in getattr(args, "ops", ()):
        ap.error(f"-d {args.datatype}: all_reduce sums uint8 here; use -d uint8 or leave all_reduce out of --ops")


def sweep_sizes(args: argparse.Namespace) -> list[int]:
    """-b .. -e by -f (multiplicative, default 2) or by -i (additive), as nccl-tests steps."""
    if args.step_bytes is not None:
        return list(range(args.min_bytes, args.max_bytes + 1, args.step_bytes))
    return size_sweep(args.min_bytes, args.max_bytes, args.factor or 2)


def format_time(us: float) -> str:
    if us >= 10000.0:
        return f"{us:7.0f}"
    if us >= 100.0:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


# nccl-tests' header, built with the widths of its printf formats so that it lines up with the rows.
_KEY = f"{'':>12s}  {'':>8s}  {'':>6s}  {'':>6s}"
HEADER = (
    f"# {'':>10s}  {_KEY}           out-of-place                       in-place          ",
    f"# {'size':>10s}  {'count':>12s}  {'type':>8s}  {'redop':>6s}  {'root':>6s}"
    + f"  {'time':>7s}  {'algbw':>6s}  {'busbw':>6s} {'#wrong':>6s}" * 2,
    f"# {'(B)':>10s}  {'(elements)':>12s}  {'':>8s}  {'':>6s}  {'':>6s}"
    + f"  {'(us)':>7s}  {'(GB/s)':>6s}  {'(GB/s)':>6s}  {'':>5s}" * 2,
)
_MISSING = f"  {'N/A':>7s}  {'N/A':>6s}  {'N/A':>6s}  {'N/A':>5s}"


def _placement_columns(row: BandwidthRow | None, check: bool) -> str:
    if row is None:
        return _MISSING
    wrong = f"{row.wrong:5d}" if check and row.wrong >= 0 else f"{'N/A':>5s}"
    return f"  {format_time(row.time_us)}  {row.algbw:6.2f}  {row.busbw:6.2f}  {wrong}"


def placement_of(row: BandwidthRow) -> str:
    return row.params.get("placement", IN_PLACE)


def format_rows(rows: list[BandwidthRow], check: bool) -> list[str]:
    """One line per size: size, count, type, redop, root, then out-of-place and in-place columns."""
    by_size: dict[int, dict[str, BandwidthRow]] = {}
    for r in rows:
        by_size.setdefault(r.size, {})[placement_of(r)] = r
    lines = []
    for size in sorted(by_size):
        pair = by_size[size]
        first = next(iter(pair.values()))
        lines.append(f"{first.size:12d}  {first.count:12d}  {first.type:>8s}  {first.redop:>6s}  {first.root:6d}"
                     + "".join(_placement_columns(pair.get(p), check) for p in PLACEMENTS))
    return lines


def avg_bus_bandwidth(rows: list[BandwidthRow]) -> float:
    """nccl-tests' "Avg bus bandwidth": the mean busbw over every measurement (sizes x placements)."""
    return statistics.fmean(r.busbw for r in rows) if rows else 0.0


def format_block(op: str, impl: str, rows: list[BandwidthRow], check: bool) -> str:
    """The table of one (operation, implementation), closed by nccl-tests' two summary lines."""
    world = rows[0].world_size if rows else 0
    wrong = sum(max(r.wrong, 0) for r in rows)
    lines = [f"# {op} with {impl}, {world} rank(s)", *HEADER, *format_rows(rows, check)]
    if check:
        lines.append(f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}")
    lines += [f"# Avg bus bandwidth    : {avg_bus_bandwidth(rows):g} ", "#"]
    return "\n".join(lines)


def format_tables(rows: list[BandwidthRow], check: bool) -> str:
    """Every (operation, implementation) block, operations and implementations in first-seen order."""
    keys = list(dict.fromkeys((r.op, r.impl) for r in rows))
    return "\n".join(format_block(op, impl, [r for r in rows if (r.op, r.impl) == (op, impl)], check)
                     for op, impl in keys)
