"""Output safety: no command overwrites its inputs, and every output appears whole or not at all.

Every command that writes files (report, ingest, capture) declares its outputs up front, before any
work, and ``check_outputs`` refuses (one line, exit 2) when

- an output resolves to an input (same real path after symbolic links, or the same file through a
  hard link: same ``st_dev``/``st_ino``), or an output directory holds an input;
- two outputs of the same command resolve to the same path, or one lies inside the other;
- an output file path is an existing directory or a special file, or an output directory path is a file;
- an output other than ``--json`` is ``-`` (standard output: only the JSON goes there);
- an output directory exists and holds files this output would not write (a re-run replaces the
  whole set of its own files; a directory with anything else in it is not ours to replace).

Files are written atomically: into a temporary file in the same directory, then ``os.replace``
(rename), so a reader never sees half a file and an interrupted write leaves the old file; the
temporary file is removed on failure. Directories are written as a set the same way: into a
temporary sibling directory, swapped into place when complete.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable, Iterator

from c3prof.errors import C3profError


@dataclass(frozen=True)
class Output:
    """One output a command will write: ``flag`` names it in messages (e.g. ``--json``)."""

    flag: str
    path: Path
    is_dir: bool = False
    # For a directory: file-name patterns of everything this output writes (what a re-run may replace).
    patterns: tuple[str, ...] = ()

    @classmethod
    def file(cls, flag: str, path: str | Path) -> Output:
        return cls(flag, Path(path))

    @classmethod
    def directory(cls, flag: str, path: str | Path, patterns: Iterable[str]) -> Output:
        return cls(flag, Path(path), True, tuple(patterns))


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(child: Path, parent: Path) -> bool:
    return child != parent and parent in child.parents


def _check_shape(out: Output) -> None:
    """The path exists only as what this output writes (a file, or a directory of our own files)."""
    try:
        st = os.stat(out.path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise C3profError(f"{out.flag} {out.path}: cannot write it: {exc.strerror or exc}") from None
    if out.is_dir:
        if not stat.S_ISDIR(st.st_mode):
            raise C3profError(f"{out.flag} needs a directory, and {out.path} is a file")
        foreign = sorted(name for name in os.listdir(out.path)
                         if not any(fnmatch.fnmatchcase(name, p) for p in out.patterns))
        if foreign:
            # Not "files c3prof did not write": an earlier run's nested output (ingest -o out
            # --figures out/figures, then ingest -o out) is ours, but this run would not write it again.
            raise C3profError(f"{out.flag} {out.path}: directory holds files this command would not write "
                              f"again ({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}), which "
                              f"replacing it would lose; choose a new or empty directory, or move them")
    elif stat.S_ISDIR(st.st_mode):
        raise C3profError(f"{out.flag} {out.path}: is a directory; give a file name")
    elif not stat.S_ISREG(st.st_mode):
        raise C3profError(f"{out.flag} {out.path}: is not a regular file (a FIFO, device or socket)")


def _clash(a: Path, a_id, b: Path, b_id, a_is_dir: bool) -> bool:
    """Does writing ``a`` (a file, or a directory replaced as a whole) touch ``b``?"""
    same = a == b or (a_id is not None and a_id == b_id)
    return same or (a_is_dir and _inside(b, a))


def check_outputs(inputs: Iterable[str | Path], outputs: Iterable[Output]) -> list[Output]:
    """Refuse (C3profError) before any work when an output could overwrite an input or another output.

    An output may lie inside an output directory (``ingest -o out --figures out/figures``) when its
    name is not one the directory writes itself; the returned outputs then list it among the
    directory's own files, and ``in_write_order`` puts the directory first (writing the directory
    replaces it as a whole, then the nested output is written into it).
    """
    outs = list(outputs)
    for o in outs:
        if str(o.path) == "-":   # --json takes '-' (its callers leave it out of ``outputs``); these cannot
            raise C3profError(f"{o.flag} -: only --json can go to standard output; give a "
                              f"{'directory' if o.is_dir else 'file name'}")
    in_info = [(Path(p), _real(Path(p)), _identity(Path(p))) for p in inputs]
    for o in outs:
        real, ident = _real(o.path), _identity(o.path)
        for p, p_real, p_id in in_info:
            if _clash(real, ident, p_real, p_id, o.is_dir):
                what = "holds" if real != p_real and o.is_dir and _inside(p_real, real) else "is"
                raise C3profError(f"{o.flag} {o.path}: {what} the input {p}; c3prof never overwrites its inputs")
    outs = _with_nested_names(outs)
    for o in outs:
        _check_shape(o)
        check_creatable(o)
    return outs


def _with_nested_names(outs: list[Output]) -> list[Output]:
    """Refuse outputs that collide; give each directory the names of the outputs nested in it."""
    info = [(o, _real(o.path), _identity(o.path)) for o in outs]
    result = []
    for a, a_real, a_id in info:
        nested = []
        for b, b_real, b_id in info:
            if b is a:
                continue
            same = a_real == b_real or (a_id is not None and a_id == b_id)
            child = a.is_dir and _inside(b_real, a_real)
            name = b_real.relative_to(a_real).parts[0] if child else ""
            if same or (child and any(fnmatch.fnmatchcase(name, p) for p in a.patterns)):
                raise C3profError(f"{a.flag} {a.path} and {b.flag} {b.path} overlap; give each output its own path")
            if child:
                nested.append(name)
        result.append(Output(a.flag, a.path, a.is_dir, a.patterns + tuple(nested)) if nested else a)
    return result


def in_write_order(outputs: Iterable[Output]) -> list[Output]:
    """Outer paths before the paths inside them (a directory is replaced before its nested outputs)."""
    return sorted(outputs, key=lambda o: len(_real(o.path).parts))


def nearest_existing_parent(path: Path) -> Path:
    parent = _real(path).parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def check_creatable(out: Output) -> None:
    """The output's folder exists or can be made there, and is writable; nothing is created."""
    parent = nearest_existing_parent(out.path)
    if not parent.is_dir():
        raise C3profError(f"{out.flag} {out.path}: cannot write it: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise C3profError(f"{out.flag} {out.path}: cannot write it: folder {parent} is not writable")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _make_parent(path: Path, what: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise C3profError(f"{path}: cannot write {what}: cannot create its folder: {exc.strerror or exc}") from None


@contextmanager
def atomic_file(path: str | Path, what: str) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on failure it is removed."""
    path = Path(path)
    _make_parent(path, what)
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise C3profError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; the output gets the usual permissions
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise C3profError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str, what: str) -> None:
    """Write UTF-8 text atomically. Text that cannot be encoded (a lone surrogate) is an error, not a crash."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise C3profError(f"{path}: cannot write {what}: text is not valid Unicode ({exc.reason})") from None
    write_bytes_atomic(path, data, what)


def write_bytes_atomic(path: str | Path, data: bytes, what: str) -> None:
    """Write ``data`` atomically (atomic_file)."""
    with atomic_file(path, what) as tmp:
        tmp.write_bytes(data)


@contextmanager
def atomic_directory(out: Output, what: str) -> Iterator[Path]:
    """Yield a fresh temporary directory; when the block succeeds it replaces ``out.path`` as a whole.

    An existing ``out.path`` holds only files of this output (``check_outputs`` made sure), so
    replacing it loses nothing but an older set of the same files, which must not mix with the new.
    """
    target = out.path
    _make_parent(target, what)
    try:
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    except OSError as exc:
        raise C3profError(f"{target}: cannot write {what}: {exc.strerror or exc}") from None
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        _check_shape(out)  # still only our files: nothing foreign appeared while we worked
        _swap_in(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise C3profError(f"{target}: cannot write {what}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(new: Path, target: Path) -> None:
    """Put directory ``new`` at ``target``; an old ``target`` is moved aside first and removed after."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
        os.rmdir(old)
        os.rename(target, old)
    try:
        os.rename(new, target)
    except OSError:
        if old is not None:
            os.rename(old, target)  # put the previous set back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def print_written(command: str, paths: Iterable[str | Path], to_stderr: bool = False) -> None:
    """Where the files went, a line each, as every command says it (under --quiet too); on stderr
    when stdout carries the JSON (--json -)."""
    for path in paths:
        print(f"c3prof {command}: wrote {path}", file=sys.stderr if to_stderr else sys.stdout)
