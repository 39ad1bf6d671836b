"""One meaning per verb: the older names still work and warn, and nothing of aprender's own calls them.

The table of deprecated names is not written here: it is read from the package (every
older name is made by ``aprender._warn.deprecated_alias``, which marks it with PEP 702's
``__deprecated__``), so a name deprecated tomorrow is covered by the scan at once. The
scan reads every Python file of the project (package, tests, examples, benchmarks,
tools, scripts), the doctest examples of their docstrings, and the Python code of the
README and docs/, and fails on any use of a deprecated name: an internal call would
warn every user who did nothing wrong, and docs that use an old name teach it.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import functools
import importlib
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aprender
from aprender.base import SerializableMixin
from aprender.cluster import KMeans
from aprender.format._formats import FORMATS
from aprender.linear_model import LinearRegression

ROOT = Path(__file__).resolve().parents[1]
#: Folders whose Python files are scanned; this module alone may call the old names (it tests them).
CODE = ("aprender", "tests", "examples", "benchmarks", "tools", "scripts")
#: Where a backend is chosen at run time (``FORMATS[name].backend``, ``backend_for_path(p)``, ...):
#: such a receiver may be any backend, so every backend's deprecated names count.
_DYNAMIC = re.compile(r"(^|[._])backend$|^_?backend(_for_path)?$|^_import$")
#: The mixin's one deprecated *form*: ``to_gguf`` is current, ``to_gguf(path)`` wrote a file.
_PATH_FORM = "to_gguf"


@functools.cache
def deprecated() -> dict[str, frozenset[str]]:
    """Module -> its deprecated names, and ``"<mixin>"`` -> the mixin's deprecated methods."""
    modules = [f.module for f in FORMATS.values()] + ["aprender.format", "aprender", "aprender.codec",
                                                        "aprender.codec._registry"]
    table = {}
    for name in modules:
        module = importlib.import_module(name)
        table[name] = frozenset(n for n in dir(module)
                                if not n.startswith("__") and hasattr(getattr(module, n, None), "__deprecated__"))
    table["<mixin>"] = frozenset(n for n in dir(SerializableMixin)
                                 if hasattr(getattr(SerializableMixin, n), "__deprecated__"))
    return table


def test_the_table_holds_the_older_names() -> None:
    table = deprecated()
    for backend in ("aprender.format.safetensors", "aprender.format.gguf", "aprender.format.onnx"):
        assert table[backend] == {"save", "load"}
    assert table["aprender.format.apr"] == {"save", "load", "save_to_bytes", "load_from_bytes"}
    assert table["aprender.format"] == {"load_from_bytes"}
    assert table["<mixin>"] == {"from_gguf"}
    assert table["aprender.codec"] == table["aprender.codec._registry"] == {"registered"}


class _Uses(ast.NodeVisitor):
    """Collects ``(line, text)`` for every use of a deprecated name in one module's tree."""

    def __init__(self) -> None:
        self.table = deprecated()
        self.any_backend = frozenset().union(*(self.table[f.module] for f in FORMATS.values()))
        self.bound: dict[str, str] = {}  # local name -> the module it names
        self.found: list[tuple[int, str]] = []
        self.called: set[int] = set()  # ids of the nodes that are called where they stand

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.bound[alias.asname] = alias.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if full in self.table:
                self.bound[alias.asname or alias.name] = full
            elif alias.name in self.table.get(node.module or "", ()):
                self.found.append((node.lineno, f"from {node.module} import {alias.name}"))

    def _module(self, node: ast.expr) -> str | None:
        """The module an expression names (``apr``, ``aprender.format.apr``), or "*" for a run-time backend."""
        text = ast.unparse(node)
        head, _, rest = text.partition(".")
        module = f"{self.bound[head]}.{rest}".rstrip(".") if head in self.bound else text
        if module in self.table:
            return module
        called = node.func if isinstance(node, ast.Call) else node
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        return "*" if _DYNAMIC.search(name) else None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        module = self._module(node.value)
        names = self.any_backend if module == "*" else self.table.get(module or "", frozenset())
        passed_on = node.attr == _PATH_FORM and id(node) not in self.called  # may be called with a path later
        if node.attr in names or node.attr in self.table["<mixin>"] or passed_on:
            self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        self.called.add(id(func))
        if isinstance(func, ast.Attribute) and func.attr == _PATH_FORM and (
                node.args or any(k.arg == "path" for k in node.keywords)):
            self.found.append((node.lineno, ast.unparse(node)[:80]))
        self.generic_visit(node)


def _uses(source: str) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a docs fragment that is not a whole program (a signature, an elision)
        return []
    visitor = _Uses()
    visitor.visit(tree)
    return visitor.found


def _doctests(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, source) of every docstring's doctest examples, the docstring's imports in scope."""
    parser = doctest.DocTestParser()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and ">>>" in doc:
                yield getattr(node, "lineno", 1), "".join(e.source for e in parser.get_examples(doc))


def _markdown_code(text: str) -> Iterator[str]:
    """The Python of a Markdown page, block by block: its ```python (and untagged) blocks, or their ``>>>`` lines.

    Each block is parsed alone, so a shell block (which is no Python) hides nothing else.
    """
    for block in re.findall(r"```(?:python|py|pycon)?\n(.*?)```", text, flags=re.S):
        prompts = [line.strip()[4:] for line in block.splitlines() if line.strip().startswith(">>> ")]
        yield "\n".join(prompts) if prompts else block


def _sources() -> Iterator[tuple[str, str]]:
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve() or "data" in path.relative_to(ROOT).parts:
                continue
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in _markdown_code(path.read_text(encoding="utf-8")):
            yield str(path.relative_to(ROOT)), block


def test_nothing_of_aprenders_own_uses_a_deprecated_name() -> None:
    offences = []
    for where, source in _sources():
        offences += [f"{where}:{line}: {text}" for line, text in _uses(source)]
        if where.endswith(".py"):
            for line, example in _doctests(ast.parse(source)):
                offences += [f"{where}:{line} (docstring): {text}" for _, text in _uses(example)]
    assert not offences, "deprecated names in use (docs/formats.md lists what to use):\n" + "\n".join(offences)


@pytest.mark.parametrize("source", [
    "from aprender.format import apr\napr.save(m, p)",
    "import aprender.format.gguf as g\ng.load(b)",
    "from aprender.format.safetensors import save",
    "from aprender.format import load_from_bytes",
    "FORMATS['apr'].backend.save_to_bytes(m)",
    "_backend('gguf').load(b)",
    "model.to_gguf('m.gguf')",
    "KMeans.from_gguf(p)",
    "save = model.to_gguf\nsave(p)",
])
def test_the_scan_finds_each_kind_of_use(source: str) -> None:
    assert _uses(source)


@pytest.mark.parametrize("source", [
    "import aprender\naprender.save(m, p)\naprender.load(p)",
    "import onnx\nonnx.save(proto, p)\nonnx.load(p)",
    "from aprender.format import apr\napr.save_file(m, p)\napr.loads(apr.dumps(m))",
    "model.to_gguf()\nmodel.to_gguf(quantize='q8_0')",
    "card.save(p)",
])
def test_the_scan_passes_the_current_names(source: str) -> None:
    assert not _uses(source)


# -- the older names still work, warn, and say what to use ------------------------


@pytest.fixture(scope="module")
def model() -> LinearRegression:
    return LinearRegression().fit(np.array([[0.0], [1.0], [2.0]]), np.array([1.0, 3.0, 5.0]))


def _warns(use: str) -> pytest.WarningsChecker:
    return pytest.warns(DeprecationWarning, match=f"is deprecated; use {re.escape(use)}")


@pytest.mark.parametrize("name", ["safetensors", "gguf"])
def test_bytes_save_and_load_of_a_backend_warn_and_agree_with_dumps_loads(name: str, model) -> None:
    backend = FORMATS[name].backend
    with _warns("dumps") as caught:
        data = backend.save(model)
    assert caught[0].filename == __file__  # the warning names the caller's line
    assert data == backend.dumps(model)
    with _warns("loads"):
        assert backend.load(data).predict([[3.0]]) == pytest.approx([7.0])


def test_apr_older_names_warn_and_agree_with_the_verbs(model, tmp_path) -> None:
    from aprender.format import apr

    with _warns("save_file"):
        apr.save(model, tmp_path / "old.apr")
    apr.save_file(model, tmp_path / "new.apr")
    assert (tmp_path / "old.apr").read_bytes() == (tmp_path / "new.apr").read_bytes()
    with _warns("load_file"):
        assert apr.load(tmp_path / "old.apr").coef_.tolist() == model.coef_.tolist()
    with _warns("dumps"):
        data = apr.save_to_bytes(model)
    assert data == apr.dumps(model)
    with _warns("loads"):
        assert apr.load_from_bytes(data).coef_.tolist() == model.coef_.tolist()
    with _warns("loads"):
        assert aprender.format.load_from_bytes(data).coef_.tolist() == model.coef_.tolist()


def test_mixin_to_gguf_with_a_path_and_from_gguf_warn(tmp_path) -> None:
    km = KMeans(n_clusters=1, n_init=1).fit([[1.0], [3.0]])
    with _warns("save_gguf(path)"):
        assert km.to_gguf(tmp_path / "old.gguf") is None
    km.save_gguf(tmp_path / "new.gguf")
    assert (tmp_path / "old.gguf").read_bytes() == (tmp_path / "new.gguf").read_bytes() == km.to_gguf()
    with _warns("load_gguf"):
        assert KMeans.from_gguf(tmp_path / "old.gguf").cluster_centers_.tolist() == [[2.0]]


# -- the current verbs, for every format alike, warn about nothing ----------------


@pytest.mark.filterwarnings("error:.* is deprecated; use :DeprecationWarning")
@pytest.mark.parametrize("name", [f.name for f in FORMATS.values()])
def test_every_format_has_save_and_to_on_the_mixin_and_the_verbs_in_its_backend(name: str, model, tmp_path) -> None:
    backend = FORMATS[name].backend
    path = tmp_path / f"m{FORMATS[name].suffix}"
    getattr(model, f"save_{name}")(path)
    in_memory = getattr(model, f"to_{name}")()
    if name == "onnx":
        assert in_memory.SerializeToString() == path.read_bytes() == backend.dumps(model)
        return
    assert in_memory == path.read_bytes() == backend.dumps(model)  # saves are deterministic
    for loaded in (getattr(type(model), f"load_{name}")(path), backend.load_file(path), backend.loads(in_memory),
                   aprender.load(path)):
        assert loaded.predict([[3.0]]) == pytest.approx([7.0])
    aprender.save(model, tmp_path / f"top{FORMATS[name].suffix}")
    assert (tmp_path / f"top{FORMATS[name].suffix}").read_bytes() == in_memory


def test_every_deprecated_name_warns_when_called(model) -> None:
    # Each wrapper warns before it delegates: a call with no arguments warns, then fails in the real function
    # (or, for a function whose arguments all have defaults, such as aprender.codec.registered, succeeds).
    for module, names in deprecated().items():
        owner = SerializableMixin if module == "<mixin>" else importlib.import_module(module)
        for name in names:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with contextlib.suppress(TypeError):
                    getattr(owner, name)()
            assert any(issubclass(w.category, DeprecationWarning) and "is deprecated; use" in str(w.message)
                       for w in caught), f"{module}.{name}"


def test_the_allow_list_under_its_older_name_warns_and_agrees() -> None:
    from aprender.codec import allow_list, registered

    with _warns("aprender.codec.allow_list"):
        older = registered(generic=True)
    assert older == allow_list(generic=True) and len(older) > 200
