"""Reading a large trace's second part while ``c3prof report`` is still starting.

A report reads a large trace in two processes (trace_parts.py): a forked child reads the second
part while this process reads the first. That fork came after the report's imports, and those are
one core's work: 0.27-0.38 s in all on a device host, numpy's 0.20-0.25 s of it (``python3 -c
"import numpy"`` took 0.25-0.30 s with the interpreter's start; that image compiles numpy's sources
at every import, where a pip-installed numpy loads its bytecode in about half the time), while the
other core had nothing to do (benchmarks/results/device_logs/session28).

So the ``c3prof`` command (``cli.program``) calls ``start`` first, before it imports anything of
the report: when the command line names one trace large enough to be read in parts, a child is
forked at once. It imports only the reader (c3prof.trace, which does not import numpy, and the
compiled ``_trace_read``) and reads the lines from FIRST_SHARE of the file on, exactly as
trace_parts' child does, and sends its part back through a pipe. The command meanwhile imports
numpy and the analyses, parses its arguments as always and opens the trace; when read_trace then
reads that file in two processes, trace_parts.records_in_parts takes this child's part (listed in
``trace_parts.ahead``) instead of forking one, and reads the first part itself. The trace read is
the same Trace either way (tests/test_read_ahead.py).

The command line is only glanced at here (``trace_to_read``): a wrong guess costs a child's work,
never a result. The part is used only for the file it was read from, unchanged since (the same
device, inode, size and modification time); a child whose part is not taken is stopped and reaped
when the command exits. ``-j 1`` (one process) and machines where this process may use one CPU
start none; nor do systems other than Linux (fork is what the report's other processes use too).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

# pickle, signal and atexit are imported where they are used: c3prof.cli imports this module for
# every command, and only a report that reads ahead needs them.

# This process's share of the bytes when the child starts this early: less than trace_parts'
# FIRST_SHARE (0.6), since the child starts reading while this process still imports.
FIRST_SHARE = 0.45

# The subcommand's options that take a value (the next argument, unless written --name=value):
# their value is never the trace. c3prof/report/cli.py defines them (a test checks the list).
VALUE_OPTIONS = frozenset({
    "-o", "--json", "--out", "--csv", "--figures", "--figure-formats", "--perfetto", "--perfetto-max-reps",
    "--split-by", "-j", "--jobs", "--threshold", "--plateau-fraction", "--confidence", "--resamples", "--seed",
    "--min-gain", "--tolerance", "--min-overlap", "--timeline-run", "--max-rows",
})


class ReadAhead:
    """A child reading ``path`` from byte ``start`` on; ``result()`` is its trace_parts.Part (None
    when the child ended without one: killed, say; the caller then reads the part itself)."""

    def __init__(self, path: str, identity: tuple, start: int, pid: int, fd: int) -> None:
        self.path, self.identity, self.start = path, identity, start
        self._pid, self._fd = pid, fd
        self._outcome: tuple[bool, Any] | None = None

    def result(self) -> Any:
        """The child's part (waiting for it), or its error (a TraceError: a bad line) raised here."""
        if self._outcome is None:
            self._outcome = self._receive()
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    def _receive(self) -> tuple[bool, Any]:
        import pickle

        with os.fdopen(self._fd, "rb") as pipe:
            message = pipe.read()
        _reap(self._pid)
        try:
            return pickle.loads(message)
        except Exception:   # noqa: BLE001 - nothing or part of a message: the child died on the way
            return True, None

    def unchanged(self) -> bool:
        """The file is the one the child reads (same device and inode), unchanged since (same size
        and modification time)."""
        try:
            return _identity(self.path) == self.identity
        except OSError:
            return False

    def stop(self) -> None:
        """End the child now (its part is not wanted) and reap it."""
        if self._outcome is not None:
            return
        self._outcome = (False, RuntimeError("stopped"))
        import signal

        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self._fd)
        _reap(self._pid)


def _reap(pid: int) -> None:
    """Wait for the child ``pid`` to end (already reaped: nothing to do)."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


# Whether _stop_all is registered with atexit (once).
_stopping_at_exit = False


def trace_to_read(argv: Sequence[str]) -> str | None:
    """The trace ``c3prof report`` will read in parts, as far as the command line shows without
    parsing it: the one argument after ``report`` that is neither an option nor an option's value
    and names a regular file large enough to be read in parts (trace_parts.MIN_BYTES). None when
    there is not exactly one, for --help, and when ``-j``/``--jobs`` (or an abbreviation argparse
    would accept) asks for one process or for something not understood here."""
    if "report" not in argv:
        return None
    args = list(argv)[list(argv).index("report") + 1:]
    found: list[str] = []
    at = 0
    while at < len(args):
        arg = args[at]
        at += 1
        if arg in ("-h", "--help"):
            return None
        if arg == "--":   # what follows is positional
            found += [a for a in args[at:] if _large_file(a)]
            break
        if not arg.startswith("-"):
            if _large_file(arg):
                found.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if name.startswith("-j") or (len(name) > 2 and "--jobs".startswith(name)):   # --jo: an abbreviation
            if not equals:
                if name.startswith("--") or name == "-j":   # the value is the next argument
                    value = args[at] if at < len(args) else ""
                    at += 1
                else:   # -jN
                    value = name[2:]
            if not _several_jobs(value):
                return None
        elif name in VALUE_OPTIONS and not equals:
            at += 1   # the option's value
    return found[0] if len(found) == 1 else None


def _several_jobs(value: str) -> bool:
    if value == "auto":
        return True
    try:
        return int(value) >= 2
    except ValueError:
        return False


def _large_file(arg: str) -> bool:
    from c3prof.trace_parts import MIN_BYTES

    try:
        return os.path.isfile(arg) and os.path.getsize(arg) >= MIN_BYTES
    except OSError:
        return False


def _identity(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _may_fork() -> bool:
    """Linux, at least two CPUs for this process, and the compiled reader (without it, or with one
    CPU, read_trace reads in one process)."""
    if not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2:
        return False
    try:
        from c3prof import _trace_read  # noqa: F401
    except ImportError:
        return False
    return True


def start(argv: Sequence[str]) -> ReadAhead | None:
    """Fork the child for ``c3prof report``'s trace (trace_to_read), if any; None when none was started."""
    path = trace_to_read(argv)
    if path is None or not _may_fork():
        return None
    from c3prof import trace_parts

    try:
        identity = _identity(path)
        begin = trace_parts.split_at(path, FIRST_SHARE)
    except OSError:
        return None
    if begin is None:
        return None
    # The report's malloc settings (heap.py), which it makes later anyway: the child reads with
    # them, as trace_parts' child (forked after them) does.
    from c3prof.report.heap import keep_freed_memory

    keep_freed_memory()
    try:
        read_fd, write_fd = os.pipe()
    except OSError:   # no file descriptor left: read_trace forks later, or reads in one process
        return None
    try:
        pid = os.fork()
    except OSError:   # refused (a limit on processes or memory): likewise
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:   # the child: never returns
        os.close(read_fd)
        _child(path, begin, write_fd)
    os.close(write_fd)
    ahead = ReadAhead(path, identity, begin, pid, read_fd)
    global _stopping_at_exit
    if not _stopping_at_exit:
        import atexit

        atexit.register(_stop_all)
        _stopping_at_exit = True
    trace_parts.ahead[os.path.abspath(path)] = ahead   # read_trace takes it from there
    return ahead


def _child(path: str, begin: int, fd: int) -> None:
    """Read ``path`` from ``begin`` (trace._read_part), send (True, part) or (False, error), exit."""
    status = 0
    try:
        import gc
        import pickle

        gc.disable()   # reading makes some 10^5 objects and no cycle (trace.gc_paused says why)
        from c3prof import trace

        message: tuple[bool, Any]
        try:
            message = (True, trace._read_part(path, begin))
        except BaseException as exc:   # noqa: BLE001 - every error goes to the command, which raises it
            message = (False, exc)
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as refused:   # what cannot be pickled: the error's (or the refusal's) name and text
            error = message[1] if not message[0] else refused
            data = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(data)
    except BaseException:   # noqa: BLE001 - the command gone (a broken pipe) or interrupted: nothing to tell
        status = 1
    finally:
        os._exit(status)


def _stop_all() -> None:
    """At exit: stop every child whose part was never taken."""
    from c3prof import trace_parts

    while trace_parts.ahead:
        trace_parts.ahead.popitem()[1].stop()
