"""User-facing errors. The CLI prints their message on one line and exits with status 2."""


class C3profError(Exception):
    """Bad input or an unusable environment: reported as one line, exit status 2, no traceback."""

    exit_code = 2


class ScenarioError(C3profError):
    """A scenario file or suite is malformed or asks for something impossible."""


class TraceError(C3profError):
    """A trace file is unreadable, truncated, of the wrong version, or violates the schema."""


class NoGPUError(C3profError):
    """No usable GPU (no driver, no device, too few devices)."""


class PeerFailed(RuntimeError):
    """Another rank of a multi-GPU capture failed (its message is in the abort key) or stopped
    answering. Not a C3profError: the rank that sees it did nothing wrong and exits with status 1."""
