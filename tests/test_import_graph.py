"""The package's import graph has no circles (issue 29).

Every import between aprender modules counts: at module level, inside functions and
under ``if TYPE_CHECKING:``. Relative imports are resolved, and ``from pkg import name``
where ``name`` is a submodule of ``pkg`` counts as importing that submodule. A circle
is reported as the chain of modules that closes it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import aprender

ROOT = Path(aprender.__file__).parent



def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The aprender modules ``module`` imports, wherever the import statement is."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            names = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target
                     for alias in node.names]
        else:
            continue
        for name in names:
            # "from pkg import name" names a submodule or an attribute: the deepest module it names.
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name.startswith("aprender") and name != module:
                found.add(name)
    return found


@functools.cache
def _graph() -> dict[str, frozenset[str]]:
    modules = _modules()
    known = set(modules)
    return {name: frozenset(_imports(name, path, known)) for name, path in modules.items()}


def import_graph() -> dict[str, set[str]]:
    """Module -> the aprender modules it imports.

    A submodule's implicit import of its parent package is left out, as grimp leaves it
    out: every package whose ``__init__`` names a submodule would otherwise be a circle.
    """
    return {name: set(targets) for name, targets in _graph().items()}  # parsed once per session


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (iterative: the graph is deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def _cycle(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One shortest circle through the first module of a strongly connected component."""
    inside = set(members)
    start = members[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & inside):
            if child == start:
                return paths[node] + [start]
            if child not in paths:
                paths[child] = paths[node] + [child]
                queue.append(child)
    return members


def test_the_graph_is_read_with_function_level_type_checking_and_relative_imports() -> None:
    graph = import_graph()
    # module level, absolute
    assert "aprender.codec" in graph["aprender.format._api"]
    # function level: the mixin reads the format table only when one of its methods is called
    assert "aprender.format._formats" in graph["aprender.base"]
    # `from aprender.format import quantize` names a submodule
    assert "aprender.format.quantize" in graph["aprender.format.gguf"]
    # relative imports, from a module and from a package's __init__
    node = ast.parse("from .._io import write_atomic").body[0]
    assert _resolve("aprender.format.apr._read", False, node) == "aprender.format._io"
    assert _resolve("aprender.format.apr", True, node) == "aprender.format._io"


def test_no_import_circles() -> None:
    graph = import_graph()
    circles = [_cycle(graph, c) for c in _strongly_connected(graph)]
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_a_circle_is_found_and_printed_as_its_chain() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"a"}}
    assert _strongly_connected(graph) == [["a", "b", "c"]]
    assert _cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    graph["c"] = {"d"}  # cut one edge: no circle is left
    assert _strongly_connected(graph) == []


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _crossing(graph: dict[str, set[str]], source: str, target: str) -> list[str]:
    """Imports from a module of package ``source`` (or the package itself) into package ``target``."""
    return sorted(f"{module} -> {imported}" for module, targets in graph.items() if _inside(module, source)
                  for imported in targets if _inside(imported, target))


def test_schemas_never_import_handlers() -> None:
    """The codec's two layers import one way: a handler may use a family's checks, a schema never a handler.

    A check that both need (sparse index arrays, tree structure) lives below both, in
    ``aprender.codec._checks`` or ``aprender.codec.trees``.
    """
    graph = import_graph()
    assert not _crossing(graph, "aprender.codec.schemas", "aprender.codec.handlers")
    assert not _crossing(graph, "aprender.codec.trees", "aprender.codec.handlers")
    assert not _crossing(graph, "aprender.codec.trees", "aprender.codec.schemas")


def test_an_import_from_a_schema_into_a_handler_is_caught() -> None:
    graph = {"aprender.codec.schemas.tree": {"aprender.codec.handlers.tree", "aprender.codec._checks"},
             "aprender.codec.handlers.tree": {"aprender.codec.schemas._hgb"},
             "aprender.codec.schemas_extra": {"aprender.codec.handlers"}}
    assert _crossing(graph, "aprender.codec.schemas", "aprender.codec.handlers") == [
        "aprender.codec.schemas.tree -> aprender.codec.handlers.tree"]
