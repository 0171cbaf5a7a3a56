"""Errors of ``c3prof ingest``: user-facing (one line, exit status 2), like every C3profError."""

from c3prof.errors import C3profError, TraceError


class KinetoTraceError(TraceError):
    """A Kineto trace cannot be read: missing, not JSON, not a Kineto trace."""


class NoGpuEventsError(KinetoTraceError):
    """The trace has no GPU kernels or memcpys (the profiler ran without CUDA activities)."""


class ScannerMissingError(C3profError):
    """The compiled Kineto scanner (c3prof.ingest._kineto) is not built."""
