"""Type stub of c3prof.backends.cuda.runtime.copies (Cython). Pointers are plain ints."""

from typing import Sequence

from c3prof.backends.cuda.runtime.streams import Stream

def memcpy_async(dst: int, src: int, nbytes: int, stream: Stream) -> None: ...
def memcpy_peer_async(dst: int, dst_device: int, src: int, src_device: int, nbytes: int, stream: Stream) -> None: ...

class CopyBatch:
    count: int
    total_bytes: int
    mode: str
    prefer_overlap: bool
    def __init__(self, dsts: Sequence[int], srcs: Sequence[int], sizes: Sequence[int], mode: str = "memcpy",
                 prefer_overlap: bool = False) -> None: ...
    def enqueue(self, stream: Stream) -> None: ...

class PeerCopyBatch:
    count: int
    total_bytes: int
    def __init__(self, dsts: Sequence[int], dst_devices: Sequence[int], srcs: Sequence[int],
                 src_devices: Sequence[int], sizes: Sequence[int]) -> None: ...
    def enqueue(self, stream: Stream) -> None: ...
