"""The import graph of c3prof/ keeps its layers, read with ``ast`` (nothing is imported).

    scenarios -> plan -> capture -> backends.base <- backends/<vendor> ; trace -> analysis -> report, figures

Rules (every import counts, including the ones inside functions):
1. no import cycle among c3prof modules;
2. analysis/, report/, figures/, ingest/ and advise/ import no backend, capture code, torch, CUDA, triton or NVML;
3. capture/ and plan/ import no vendor module (a backend's package, the runtime extension,
   cuda.bindings, pynvml); they reach a backend through c3prof.backends (the registry and base);
4. backends/ never import capture/; plan/ imports neither capture/ nor backends/.
A failure names the offending edge: importer, imported module, file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "c3prof"

GPU_LIBS = ("torch", "cuda", "triton", "pynvml")
VENDOR_LIBS = ("cuda", "pynvml")
NEUTRAL_BACKEND_MODULES = ("c3prof.backends", "c3prof.backends.base")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def known_modules(root: Path) -> set[str]:
    """Python modules and compiled (Cython) extensions under ``root``."""
    return {module_name(p, root) for ext in ("*.py", "*.pyx") for p in root.rglob(ext)}


def imports_of(path: Path, name: str, modules: set[str]) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement of the file."""
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_pkg else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for a in node.names:
                sub = f"{target}.{a.name}"
                # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod.
                out.append((sub if sub in modules else target, node.lineno))
    return out


def import_graph(root: Path) -> dict[str, list[tuple[str, int, str]]]:
    """c3prof module -> [(imported module, line, file)] (imports of anything, c3prof or not)."""
    modules = known_modules(root)
    graph = {}
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        rel = str(path.relative_to(root.parent))
        graph[name] = [(target, line, rel) for target, line in imports_of(path, name, modules)]
    return graph


def within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def find_cycle(graph: dict[str, list[tuple[str, int, str]]]) -> list[str] | None:
    """One import cycle among the graph's own modules, as 'a -> b (file:line)' edges, or None."""
    state: dict[str, int] = {}          # 1: on the current path, 2: done
    path: list[tuple[str, str]] = []    # (module, edge text that led to the next one)

    def visit(mod: str) -> list[str] | None:
        state[mod] = 1
        for target, line, rel in graph.get(mod, []):
            if target not in graph or target == mod:
                continue
            path.append((mod, f"{mod} -> {target} ({rel}:{line})"))
            if state.get(target) == 1:
                start = next(i for i, (m, _) in enumerate(path) if m == target)
                return [edge for _, edge in path[start:]]
            if target not in state:
                found = visit(target)
                if found:
                    return found
            path.pop()
        state[mod] = 2
        return None

    for mod in sorted(graph):
        if mod not in state:
            found = visit(mod)
            if found:
                return found
    return None


def violations(graph: dict[str, list[tuple[str, int, str]]]) -> list[str]:
    bad = []
    for mod, edges in graph.items():
        for target, line, rel in edges:
            edge = f"{mod} imports {target} ({rel}:{line})"
            vendor = (within(target, "c3prof.backends") and target not in NEUTRAL_BACKEND_MODULES) or \
                within(target, "c3prof._dma")
            if within(mod, "c3prof.analysis", "c3prof.report", "c3prof.figures", "c3prof.ingest", "c3prof.advise"):
                if within(target, "c3prof.backends", "c3prof.capture", "c3prof._dma", *GPU_LIBS):
                    bad.append(f"GPU-free layer imports GPU code: {edge}")
            if within(mod, "c3prof.capture", "c3prof.plan") and (vendor or within(target, *VENDOR_LIBS)):
                bad.append(f"vendor-neutral layer imports a vendor module: {edge}")
            if within(mod, "c3prof.backends") and within(target, "c3prof.capture"):
                bad.append(f"backend imports capture (an upward arrow): {edge}")
            if within(mod, "c3prof.plan") and within(target, "c3prof.capture", "c3prof.backends"):
                bad.append(f"plan imports a layer above it: {edge}")
    return bad


def test_no_import_cycle():
    cycle = find_cycle(import_graph(PKG))
    assert cycle is None, "import cycle: " + "; ".join(cycle)


def test_layers_are_respected():
    bad = violations(import_graph(PKG))
    assert not bad, "\n".join(bad)


def test_the_graph_sees_lazy_and_relative_imports():
    """The checks read real edges: a lazy import inside a function and the package layout."""
    graph = import_graph(PKG)
    cli_targets = {t for t, _, _ in graph["c3prof.capture.cli"]}
    assert "c3prof.backends" in cli_targets                       # imported inside run()
    assert "c3prof.capture.phases" in cli_targets
    bench_targets = {t for t, _, _ in graph["c3prof.backends.cuda.bench"]}
    assert "c3prof.backends.cuda.runtime" in bench_targets        # `from c3prof.backends.cuda import runtime`


@pytest.mark.parametrize("files,expected", [
    ({"a.py": "from c3prof_fake import b\n", "b.py": "def f():\n    from c3prof_fake.a import x\n"},
     "c3prof_fake.a -> c3prof_fake.b"),
    ({"a.py": "from . import b\n", "b.py": "import c3prof_fake.a\n"}, "c3prof_fake.b -> c3prof_fake.a"),
])
def test_cycle_finder_reports_the_edges(tmp_path, files, expected):
    """SYNTHETIC packages: the finder catches a cycle closed by a lazy or a relative import."""
    root = tmp_path / "c3prof_fake"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    cycle = find_cycle(import_graph(root))
    assert cycle is not None and any(expected in edge for edge in cycle), cycle


def test_rule_violations_name_the_edge():
    """SYNTHETIC graph: each rule fires on the edge it forbids and names file and line."""
    graph = {
        "c3prof.report.table": [("torch", 3, "c3prof/report/table.py")],
        "c3prof.capture.runner": [("c3prof.backends.cuda.bench", 7, "c3prof/capture/runner.py"),
                                  ("c3prof.backends", 8, "c3prof/capture/runner.py")],
        "c3prof.backends.cuda.bench": [("c3prof.capture.phases", 9, "c3prof/backends/cuda/bench.py")],
        "c3prof.plan.model": [("c3prof.capture.stopping", 4, "c3prof/plan/model.py")],
    }
    bad = violations(graph)
    assert any("c3prof.report.table imports torch (c3prof/report/table.py:3)" in b for b in bad)
    assert any("c3prof.capture.runner imports c3prof.backends.cuda.bench" in b for b in bad)
    assert not any("imports c3prof.backends (" in b for b in bad)           # the registry is allowed
    assert any("backend imports capture" in b and "bench.py:9" in b for b in bad)
    assert any("plan imports a layer above it" in b for b in bad)
    assert len(bad) == 4
