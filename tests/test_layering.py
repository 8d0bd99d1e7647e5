"""The import graph: arrows point down the layers, and nothing imports itself in a circle.

Read from the source (AST), not from `sys.modules`: every `import` statement counts,
including ones inside functions (an import moved into a function to dodge a cycle is still
an arrow). Imports under `if TYPE_CHECKING:` are annotations only and are not counted for
cycles, but they still may not point up a layer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("harness", "memory", "prompts")

# (importer prefix, forbidden target prefix, why)
FORBIDDEN = (
    ("memory", "harness", "memory never imports harness"),
    ("prompts", "harness", "prompts never imports harness"),
    ("prompts", "memory", "prompts never imports memory (it receives rendered strings)"),
    ("harness.compress", "harness.loop", "compress/ depends on its CompressionHost protocol, never on loop/"),
    (
        "memory.sessions.postgres",
        "memory.sessions.sqlite",
        "the postgres backend never imports the sqlite one",
    ),
    (
        "memory.sessions.sqlite",
        "memory.sessions.postgres",
        "the sqlite backend never imports the postgres one",
    ),
    *(
        (f"memory.sessions.{neutral}", f"memory.sessions.{backend}", "only factory.py opens a backend")
        for neutral in (
            "contract",
            "search",
            "_fts_query",
            "_ranking",
            "_records",
            "_render",
            "_rows",
            "_scoped",
            "_validate",
            "journal",
            "reads",
            "writes",
            "dense",
        )
        for backend in ("sqlite", "postgres")
    ),
    (
        "harness.modelfiles",
        "harness.models",
        "model files are read by the server and the meter alike; they know neither",
    ),
    (
        "harness.modelfiles",
        "harness.cachemeter",
        "model files are read by the server and the meter alike; they know neither",
    ),
    (
        "harness.models.local",
        "harness.loop",
        "the embedded server is a separate program: it never reaches into a session",
    ),
    (
        "harness.models.local",
        "harness.wiring",
        "the embedded server is a separate program: it never reaches into a session",
    ),
    (
        "harness.loop",
        "harness.wiring",
        "the turn loop never knows how it was wired: wiring/ builds it from a config",
    ),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for root in ROOTS for p in (REPO / root).rglob("*.py")}


MODULES = _modules()
_SESSION_PACKAGES = {"memory.sessions.sqlite", "memory.sessions.postgres"}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, type_only: bool = False) -> Iterator[tuple[str, bool]]:
    """(imported module, under TYPE_CHECKING) for every import in `tree`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), type_only=True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), type_only=type_only)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, type_only
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield (sub if sub in MODULES else node.module), type_only
        else:
            yield from _imports(node, type_only=type_only)


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    runtime: dict[str, set[str]] = {m: set() for m in MODULES}
    every: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for target, type_only in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if target.split(".")[0] not in ROOTS or target == name:
                continue
            every[name].add(target)
            if not type_only:
                runtime[name].add(target)
    return runtime, every


RUNTIME, EVERY = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read_from_every_module() -> None:
    assert "harness.loop.session" in RUNTIME and "harness.compress.run" in RUNTIME["harness.loop.session"]
    assert "memory.errors" in RUNTIME["memory.curated.store"]


def test_there_is_no_import_cycle() -> None:
    assert _cycles(RUNTIME) == []


@pytest.mark.parametrize(("importer", "target", "why"), FORBIDDEN)
def test_no_arrow_points_up_a_layer(importer: str, target: str, why: str) -> None:
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in EVERY.items()
        if m == importer or m.startswith(importer + ".")
        for t in targets
        if t == target or t.startswith(target + ".")
    )
    assert bad == [], why


def test_every_neutral_session_module_is_held_to_the_backend_rule() -> None:
    # A new module beside contract.py must be added to the table above (or be the factory).
    neutral = {
        m.rsplit(".", 1)[1]
        for m in MODULES
        if m.startswith("memory.sessions.") and m.count(".") == 2 and m not in _SESSION_PACKAGES
    }
    listed = {
        importer.rsplit(".", 1)[1] for importer, target, _ in FORBIDDEN if target == "memory.sessions.sqlite"
    }
    assert neutral - listed == {"factory"}


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(planted) == [["a", "b", "c"]]


def _owner(module: str) -> str:
    """The package whose private module `module` is (`a.b` for `a.b._x`), or "" if it is public."""
    owner, _, last = module.rpartition(".")
    private = last.startswith("_") and not last.startswith("__") and MODULES[module].name != "__init__.py"
    return owner if private else ""


def _private_imports(graph: dict[str, set[str]]) -> list[str]:
    """`importer -> target` for every import of a private module from outside its package."""
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if t in MODULES and (owner := _owner(t)) and m != owner and not m.startswith(owner + ".")
    )


def test_no_module_imports_another_packages_private_module() -> None:
    # A package's `_x.py` is reached by the package itself and its subpackages; everyone
    # else goes through a public module or the `__init__` (type-only imports included).
    assert _private_imports(EVERY) == []


def _unit(module: str) -> str:
    """The package a module belongs to for the two-way rule: `harness.loop`, `memory.curated`,
    or a top-level module of its layer (`harness.trace`)."""
    return ".".join(module.split(".")[:2])


def _two_way_arrows(graph: dict[str, set[str]]) -> list[str]:
    arrows = {(_unit(m), _unit(t)) for m, targets in graph.items() for t in targets if _unit(m) != _unit(t)}
    return sorted(f"{a} <-> {b}" for a, b in arrows if a < b and (b, a) in arrows)


def test_no_two_packages_import_each_other_at_run_time() -> None:
    # A cycle between modules is caught above; this is the coarser rule: if `harness.tools`
    # imports `harness.wiring`, `harness.wiring` does not import `harness.tools` (and
    # `harness.trace` does not reach into `harness.models` while the clients use it).
    assert _two_way_arrows(RUNTIME) == []


def test_the_structure_checks_find_what_they_look_for() -> None:
    planted = {
        "harness.loop.session": {"harness.wiring.open"},
        "harness.wiring.open": {"harness.loop.session", "harness.cachemeter.report._table"},
        "harness.cachemeter.report._measure": {"harness.cachemeter.report._table"},
    }
    assert _two_way_arrows(planted) == ["harness.loop <-> harness.wiring"]
    assert _private_imports(planted) == ["harness.wiring.open -> harness.cachemeter.report._table"]


_METER = "harness.cachemeter"
_METER_FOLDERS = sorted(
    m for m, path in MODULES.items() if m.startswith(_METER + ".") and path.name == "__init__.py"
)


def _meter_reaches(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a meter sub-folder's modules from outside it, not through its `__init__`."""
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        for folder in _METER_FOLDERS
        if t.startswith(folder + ".") and not (m == folder or m.startswith(folder + "."))
    )


def test_the_meters_sub_folders_meet_only_through_their_init() -> None:
    # `sweep/` and `replicas/` once reached into `report/`'s and `sim/`'s modules, and a
    # traced `keel cache report --replicas 2` switched between them 15 times; the kernel
    # (`cachemeter/run.py`) feeds them one stream, and each folder is a unit behind its façade.
    assert {"harness.cachemeter.report", "harness.cachemeter.sim", "harness.cachemeter.sweep"} <= set(
        _METER_FOLDERS
    )
    assert _meter_reaches(EVERY) == []
    assert _meter_reaches({"harness.cachemeter.run": {"harness.cachemeter.sweep._sweep"}}) == [
        "harness.cachemeter.run -> harness.cachemeter.sweep._sweep"
    ]
