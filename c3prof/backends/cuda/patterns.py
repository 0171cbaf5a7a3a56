"""The collectives' reference byte pattern on the device (torch tensors): fill and check.

The pattern itself (splitmix64 of the word index, keyed by seed and rank) is defined once in
c3prof/plan/layout.py; these helpers compute it on the tensor's own device, chunk by chunk, so
filling and checking a GiB buffer needs no host copy and bounded temporary memory.
"""

from __future__ import annotations

from c3prof.errors import C3profError
from c3prof.plan.layout import ALIGN, PATTERN_CHUNK, pattern_key, splitmix64


def pattern_words(torch, start_word: int, n_words: int, seed: int, rank: int, device):
    """Rank ``rank``'s pattern words [start_word, start_word + n_words) as an int64 tensor on ``device``."""
    return splitmix64(torch.arange(start_word, start_word + n_words, dtype=torch.int64, device=device)
                      + pattern_key(seed, rank))


def fill_pattern(torch, out_u8, seed: int, rank: int, offset: int = 0, invert: bool = False) -> None:
    """Write rank ``rank``'s source bytes [offset, offset + len) into the uint8 tensor ``out_u8``
    (on its own device), or their bitwise complement (``invert``: poison that differs everywhere)."""
    n = out_u8.numel()
    if offset % ALIGN or n % ALIGN:
        raise C3profError(f"pattern offset and length must be multiples of {ALIGN}")
    words = out_u8.view(torch.int64)
    step = PATTERN_CHUNK // ALIGN
    for w0 in range(0, words.numel(), step):
        k = min(step, words.numel() - w0)
        x = pattern_words(torch, offset // ALIGN + w0, k, seed, rank, out_u8.device)
        words[w0:w0 + k] = torch.bitwise_not(x) if invert else x


def count_mismatches(torch, got_u8, seed: int, rank: int, offset: int = 0) -> tuple[int, int | None]:
    """(number of bytes of ``got_u8`` that differ from rank ``rank``'s pattern at ``offset``,
    index of the first one or None), compared chunk by chunk on ``got_u8``'s device."""
    n = got_u8.numel()
    count, first = 0, None
    step = PATTERN_CHUNK
    for b0 in range(0, n, step):
        k = min(step, n - b0)
        x = pattern_words(torch, (offset + b0) // ALIGN, k // ALIGN, seed, rank, got_u8.device)
        ne = got_u8[b0:b0 + k] != x.view(torch.uint8)
        c = int(ne.sum().item())
        if c:
            if first is None:
                first = b0 + int(ne.nonzero()[0].item())
            count += c
    return count, first
