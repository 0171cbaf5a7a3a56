"""Every `c3prof ...` command shown in README.md and docs/*.md works as written.

Rules (each command becomes one test; a skipped one says why in pytest's -ra summary):

* Commands are the lines of fenced code blocks that start with ``c3prof`` or run ``-m c3prof``
  (torchrun, python -m); ``\\`` continuations are joined. Blocks marked ```text are usage
  synopses (``c3prof report TRACE [TRACE ...]``), listed here as skipped, never run.
* A command whose trailing comment says ``placeholder`` (``my.toml``, ``...``) cannot run as
  written: skipped with that comment as the reason. A command that looks like a placeholder
  (``...``, an all-caps argument such as FILE) without that annotation fails the test.
* ``report``, ``ingest``, ``suites``, ``advise`` and ``--help`` run here, GPU-free, in one temporary directory
  per document (commands of a document run in order, so a later one may read an earlier one's
  output), where ``tests/`` points at this repository's tests. Each must exit 0 and create every
  output it names (``--out``, ``-o``, ``--json``, ``--csv``, ``--figures``, ``--perfetto``).
* ``capture`` needs a GPU: marked ``gpu`` (``multigpu`` with ``--gpus N`` or torchrun's
  ``--nproc-per-node N``, N > 1). Even on a GPU machine, these real captures (minutes each) run only
  with C3PROF_DOCS_CAPTURE=1.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import cuda_device_count

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GPU_FREE = ("report", "ingest", "suites", "advise")
OUTPUT_FLAGS = ("--out", "-o", "--json", "--csv", "--figures", "--perfetto")
FENCE = re.compile(r"^```(\w*)\s*$")
PLACEHOLDER_TOKEN = re.compile(r"^(\.\.\.|[A-Z][A-Z_]{2,}(\.\.\.)?)$")


@dataclass(frozen=True)
class DocCommand:
    document: str       # path relative to the repository root
    line: int           # first line of the command in the document
    text: str           # the command, continuations joined, comment removed
    comment: str        # its trailing comment ('' if none)
    synopsis: bool      # inside a ```text block

    @property
    def placeholder(self) -> bool:
        return "placeholder" in self.comment.lower()

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text)

    @property
    def subcommand(self) -> str | None:
        argv = self.argv
        start = argv.index("c3prof") + 1 if "c3prof" in argv else 0
        return next((a for a in argv[start:] if not a.startswith("-")), None)


def _split_comment(line: str) -> tuple[str, str]:
    match = re.search(r"\s#\s?(.*)$", line)
    return (line[:match.start()].rstrip(), match.group(1).strip()) if match else (line.rstrip(), "")


def _is_c3prof_command(text: str) -> bool:
    return text.startswith("c3prof ") or text == "c3prof" or " -m c3prof " in f" {text} "


def extract_commands(path: Path, root: Path = ROOT) -> list[DocCommand]:
    """Every c3prof command in the fenced code blocks of one Markdown file."""
    commands, language, pending, pending_line = [], None, "", 0
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        fence = FENCE.match(raw.strip())
        if fence:
            language = None if language is not None else fence.group(1)
            continue
        if language is None:
            continue
        line = raw.strip()
        if not pending:
            pending_line = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text, comment = _split_comment(pending + line)
        pending = ""
        if _is_c3prof_command(text):
            commands.append(DocCommand(str(path.relative_to(root)), pending_line, text, comment,
                                       synopsis=language == "text"))
    return commands


ALL_COMMANDS = [c for doc in DOCUMENTS for c in extract_commands(doc)]


def _world_size(argv: list[str]) -> int:
    for flag in ("--gpus", "--nproc-per-node", "--nproc_per_node"):
        if flag in argv[:-1]:
            value = argv[argv.index(flag) + 1]
            return int(value) if value.isdigit() else 2
    return 1


def _marks(command: DocCommand) -> list:
    if command.synopsis or command.placeholder or command.subcommand != "capture":
        return []
    return [pytest.mark.multigpu if _world_size(command.argv) > 1 else pytest.mark.gpu]


def _outputs(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in OUTPUT_FLAGS and argv[i + 1] != "-"]


@pytest.fixture(scope="session")
def doc_workdirs(tmp_path_factory):
    """One working directory per document, with tests/ linked to this repository's tests."""
    dirs: dict[str, Path] = {}

    def get(document: str) -> Path:
        if document not in dirs:
            work = tmp_path_factory.mktemp(Path(document).stem)
            (work / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
            dirs[document] = work
        return dirs[document]

    return get


def _run(command: DocCommand, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    argv = command.argv
    if argv[0] == "c3prof":   # the c3prof of the Python running the tests (installed or editable)
        argv = [sys.executable, "-m", "c3prof", *argv[1:]]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", [pytest.param(c, marks=_marks(c), id=f"{c.document}:{c.line}")
                                     for c in ALL_COMMANDS])
def test_documented_command_works(command: DocCommand, doc_workdirs):
    if command.synopsis:
        pytest.skip("usage synopsis (```text block), not a command")
    if command.placeholder:
        pytest.skip(f"annotated in the docs: {command.comment}")
    looks_like_placeholder = [a for a in command.argv if PLACEHOLDER_TOKEN.match(a)]
    assert not looks_like_placeholder, (
        f"{command.document}:{command.line}: {command.text!r} has placeholder-like arguments "
        f"{looks_like_placeholder}: make it runnable or annotate it '# placeholder: why'")
    is_help = "--help" in command.argv or "-h" in command.argv
    if command.subcommand == "capture" and not is_help:
        if os.environ.get("C3PROF_DOCS_CAPTURE") != "1":
            pytest.skip("a real capture (minutes on a GPU): set C3PROF_DOCS_CAPTURE=1 to run it")
        needed = _world_size(command.argv)
        if cuda_device_count() < needed:
            pytest.skip(f"needs {needed} GPUs, {cuda_device_count()} visible")
        timeout = 1800.0
    else:
        assert is_help or command.subcommand in GPU_FREE, f"unclassified command {command.text!r}"
        timeout = 300.0
    work = doc_workdirs(command.document)
    proc = _run(command, work, timeout)
    assert proc.returncode == 0, f"{command.text}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"
    for output in _outputs(command.argv):
        path = work / output
        assert path.exists(), f"{command.text}: {output} was not created"
        assert (any(path.iterdir()) if path.is_dir() else path.stat().st_size > 0), f"{output} is empty"


def test_the_docs_show_gpu_free_commands():
    """The extraction finds the README's report and ingest examples (guards against a parser that
    silently finds nothing and so tests nothing)."""
    readme = {c.subcommand for c in ALL_COMMANDS if c.document == "README.md" and not c.synopsis}
    assert {"report", "ingest", "capture"} <= readme


def test_extraction_rules_on_a_sample(tmp_path):
    sample = tmp_path / "sample.md"
    sample.write_text("```text\nc3prof report TRACE [--json FILE]\n```\n"
                      "```bash\nc3prof ingest a.json \\\n    --out out/x   # comment\n"
                      "python -m c3prof suites\necho c3prof\n```\nc3prof outside a block\n")
    found = extract_commands(sample, root=tmp_path)
    assert [(c.line, c.text, c.comment, c.synopsis) for c in found] == [
        (2, "c3prof report TRACE [--json FILE]", "", True),
        (5, "c3prof ingest a.json  --out out/x", "comment", False),
        (7, "python -m c3prof suites", "", False),
    ]
    assert found[1].subcommand == "ingest" and found[2].subcommand == "suites"
