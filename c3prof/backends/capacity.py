"""Does a scenario fit in the GPU and the host? Checked before anything is allocated, by every backend."""

from __future__ import annotations

from c3prof.errors import C3profError


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_fits(what: str, device_bytes: int, host_pinned_bytes: int, free_device_bytes: int) -> None:
    """Raise C3profError if a scenario would not fit, before allocating anything.

    Keeps 10% of free device memory (and 20% of available host memory) as headroom for the
    allocator, cuBLAS workspaces and the validation readback.
    """
    from c3prof.units import format_bytes as fb

    if device_bytes > 0.9 * free_device_bytes:
        raise C3profError(f"{what} needs {device_bytes / 2**30:.2f} GiB of device memory but only "
                          f"{free_device_bytes / 2**30:.2f} GiB are free")
    avail = host_available_bytes()
    if host_pinned_bytes and avail is not None and host_pinned_bytes > 0.8 * avail:
        raise C3profError(f"{what} needs {fb(host_pinned_bytes)} of pinned host memory but only "
                          f"{avail / 2**30:.2f} GiB are available")
