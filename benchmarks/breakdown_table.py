"""The latency-breakdown table of bench_collectives.py (``--breakdown``), GPU-free.

Rows carry ``params["breakdown"]`` (c3prof/backends/cuda/dma_breakdown.py, parts already the
maximum over ranks). Per operation, implementation configuration and placement, one line per
size, nccl-tests style (``#`` comment lines, then right-aligned columns), followed by the copy
stage's fixed cost and bandwidth fitted over the sizes (dma_breakdown.fit_startup), and which
part dominates.
"""

from __future__ import annotations

from itertools import groupby

from c3prof.analysis.busbw import BandwidthRow

COLUMNS = (("host", "host_enqueue_us"), ("ready", "ready_wait_us"), ("copies", "copies_us"),
           ("done", "done_wait_us"), ("local", "local_tail_us"), ("total", "total_us"))
# The parts the sum of which is the device time (host enqueue overlaps the device in a stream).
DEVICE_PARTS = ("ready_wait_us", "copies_us", "done_wait_us", "local_tail_us")


def rank_max_parts(per_rank: list[dict]) -> dict:
    """Each part's maximum over the ranks' breakdowns (a collective ends with its slowest rank)."""
    keys = per_rank[0]["parts_us"]
    return {k: max(b["parts_us"][k] for b in per_rank) for k in keys}


def dominant_part(parts: dict) -> str:
    """The device part that takes the most time, or host enqueue when it exceeds the device total."""
    if parts["host_enqueue_us"] > parts["total_us"]:
        return "host_enqueue_us"
    return max(DEVICE_PARTS, key=lambda k: parts[k])


def _line(r: BandwidthRow) -> str:
    b = r.params["breakdown"]
    parts = b["parts_us"]
    calls = b["enqueue_calls"]
    per_copy = b.get("per_copy_us")
    cols = "".join(f"{parts[k]:>9.1f}" for _, k in COLUMNS)
    return (f"{r.size:>12d}{cols}{(per_copy if per_copy is not None else float('nan')):>9.1f}"
            f"{calls['copy_batches']:>8d}{calls['copy_calls']:>7d}{calls['flag_ops']:>7d}  {dominant_part(parts)}")


def _configuration(r: BandwidthRow) -> tuple[str, str, str]:
    return r.op, r.impl, r.params.get("placement", "")


def _configurations(rows: list[BandwidthRow]):
    """(op, impl, placement), rows by size: one block per configuration."""
    for k, group in groupby(sorted(rows, key=lambda r: (*_configuration(r), r.size)), key=_configuration):
        yield k, list(group)


def _copy_points(block: list[BandwidthRow]) -> list[tuple[int, float]]:
    """(bytes this rank's copies move, copy-stage time) per size: the fit's input. Empty when the
    sizes ran in different modes (dma_auto switches from push to pull): one line cannot fit both."""
    if len({r.params.get("mode") for r in block}) > 1:
        return []
    return [(r.params.get("remote_bytes", r.size), r.params["breakdown"]["parts_us"]["copies_us"]) for r in block]


def copy_stage_fits(rows: list[BandwidthRow], fit) -> list[dict]:
    """The copy-stage fit of every configuration with a breakdown (for the JSON)."""
    return [{"op": op, "impl": impl, "placement": placement, "fit": fit(_copy_points(block))}
            for (op, impl, placement), block in _configurations([r for r in rows if r.params.get("breakdown")])]


def format_breakdown(rows: list[BandwidthRow], fit) -> str:
    """The table for every row with a breakdown; ``fit`` is dma_breakdown.fit_startup (passed in so
    that this module needs no CUDA runtime)."""
    with_bd = [r for r in rows if r.params.get("breakdown")]
    if not with_bd:
        return "# no latency breakdown measured (bench_collectives --breakdown; c3prof DMA rows only)"
    names = "".join(f"{name:>9s}" for name, _ in COLUMNS)
    units = "".join(f"{'(us)':>9s}" for _ in COLUMNS)
    head = f"#       size{names} per-copy batches  calls  flags  dominant\n#        (B){units}     (us)"
    out = []
    for (op, impl, placement), block in _configurations(with_bd):
        out += [f"# latency breakdown: {op} {impl} {placement}, {block[0].world_size} ranks (max over ranks)", head]
        out += [_line(r) for r in block]
        f = fit(_copy_points(block))
        if f is None:
            out.append("# copy stage fit: needs two or more sizes in one mode (push or pull)")
        else:
            gbps = f"{f['copy_gbps']:.1f} GB/s" if f["copy_gbps"] else "n/a (time does not grow with size)"
            out.append(f"# copy stage fit over {f['sizes']} sizes: fixed cost (start-up) {f['startup_us']:.1f} us, "
                       f"{gbps}")
        out.append("")
    return "\n".join(out)
