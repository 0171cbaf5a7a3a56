"""Keep the report's freed memory for reuse instead of handing it back to the kernel (glibc only).

A large report allocates and frees the same tens of megabytes again and again: every batch of
scenarios draws its bootstrap replicates (about 28 MB for 64 scenarios of 2000 resamples) and frees
them when the batch is done. glibc returns the freed top of its heap to the kernel whenever more
than its trim threshold lies free there, and the next batch then faults every page back in (one
fault and one zeroed page per 4 KiB). The threshold moves with the blocks glibc has seen, so how
often this happens depends on the order of allocations: traced with strace on a 2-core VM, the
forked analysis process of a 10^6-sample ``report -j auto`` trimmed its heap 16 times, 890 MB in
all, and grew it back 1 MB at a time. That report took 5.2 x 10^5 page faults and 1.3 s of system
time; with these settings 2.9 x 10^5 and 0.85 s, and 3.9 s of wall time instead of 4.2 s. On the
device hosts the faults halved too, but the wall time did not move beyond their noise
(benchmarks/results/device_logs/session20).

The settings are glibc's own upper bound for its dynamic threshold (blocks up to 32 MiB come from
the heap) and twice that for trimming (the ratio glibc's dynamic rule keeps). Freed memory then
stays with the process until it exits or the free top of the heap passes 64 MiB; the peak RSS of
that report rose from 473 MB to 478-489 MB.

A setting the user made (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``
or ``glibc.malloc`` tunables in ``GLIBC_TUNABLES``) wins: nothing is changed then. Elsewhere (musl,
macOS, Windows) there is no ``mallopt`` of this meaning, and nothing is changed either; the report's
numbers never depend on it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping

# mallopt's parameter numbers (glibc's malloc.h) and the values set.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024   # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD

USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def user_tuned(environ: Mapping[str, str]) -> str | None:
    """The variable by which the user tuned glibc's malloc, if any (their choice is kept)."""
    for name in USER_SETTINGS:
        if name in environ:
            return name
    if "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES"
    return None


def _glibc() -> ctypes.CDLL | None:
    """This process's C library when it is glibc (it alone has ``gnu_get_libc_version``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if hasattr(libc, "gnu_get_libc_version") else None


def keep_freed_memory() -> str:
    """Apply the settings above; returns what was done (the tests read it)."""
    tuned = user_tuned(os.environ)
    if tuned is not None:
        return f"left as set by {tuned}"
    libc = _glibc()
    if libc is None:
        return "not glibc: left as it is"
    # mallopt returns 1 on success, 0 when glibc refuses the value (then its own rule stays).
    done = [libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD), libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)]
    if done != [1, 1]:
        return f"glibc refused mallopt (returned {done}): left as it is"
    return f"mmap threshold {MMAP_THRESHOLD >> 20} MiB, trim threshold {TRIM_THRESHOLD >> 20} MiB"
