"""Public names a reader and a type checker can follow, each with one meaning.

Each lazy package lists its names once, in its ``__init__.pyi`` stub (lazy_loader, SPEC 1),
and every one of them is there at run time. No name is both a module and something else:
``package.name`` means what ``import package.name`` imports (``aprender.distill`` was a
function and a package, and which one a reader got depended on what was imported before).
Modules are imported from strings only where the name is data.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import types
from pathlib import Path

import pytest

import aprender

ROOT = Path(aprender.__file__).parent


def _stubbed() -> list[str]:
    return sorted(".".join(p.parent.relative_to(ROOT.parent).parts) for p in ROOT.rglob("__init__.pyi"))


def test_every_lazy_package_has_a_stub() -> None:
    lazy = sorted(".".join(p.parent.relative_to(ROOT.parent).parts) for p in ROOT.rglob("__init__.py")
                  if "attach_stub" in p.read_text())
    assert lazy == _stubbed()
    assert len(lazy) == 21


@pytest.mark.parametrize("name", _stubbed())
def test_every_name_a_stub_lists_is_listed_once_and_there_at_run_time(name: str) -> None:
    stub = ROOT.parent.joinpath(*name.split("."), "__init__.pyi")
    listed = [a.asname or a.name for node in ast.parse(stub.read_text()).body if isinstance(node, ast.ImportFrom)
              for a in node.names]
    assert len(listed) == len(set(listed)), name
    package = importlib.import_module(name)
    assert sorted(listed) == sorted(dir(package))
    submodules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert set(package.__all__) <= set(listed) and set(listed) - set(package.__all__) <= submodules
    star: dict[str, object] = {}
    exec(f"from {name} import *", star)
    assert set(package.__all__) <= set(star)


def test_a_star_import_of_aprender_format_needs_no_extra() -> None:
    """The backend modules are attributes of aprender.format but not in its __all__ (ONNX's needs its extra)."""
    import aprender.format

    assert {"apr", "gguf", "onnx"} <= set(dir(aprender.format)) and not {"apr", "onnx"} & set(aprender.format.__all__)


def _packages() -> list[str]:
    return ["aprender"] + [m.name for m in pkgutil.walk_packages(aprender.__path__, "aprender.") if m.ispkg]


def _clashes(package: types.ModuleType) -> dict[str, str]:
    """Public names of ``package`` that are a submodule's name but not that submodule."""
    submodules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    out = {}
    for name in sorted(submodules & set(dir(package))):
        value = getattr(package, name)
        if value is not importlib.import_module(f"{package.__name__}.{name}"):
            out[name] = type(value).__name__
    return out


@pytest.mark.parametrize("name", _packages())
def test_no_package_attribute_shadows_a_submodule(name: str) -> None:
    assert _clashes(importlib.import_module(name)) == {}


def test_a_shadowing_attribute_is_found() -> None:
    """The check fails on the clash it is for: a package whose function has a submodule's name."""
    package = types.ModuleType("aprender.format")
    package.__path__ = importlib.import_module("aprender.format").__path__
    package.quantize = lambda: None  # aprender/format/quantize.py is a module
    assert _clashes(package) == {"quantize": "function"}


def test_distill_is_the_function_and_its_package_is_distillation() -> None:
    import aprender.distillation

    assert isinstance(aprender.distillation, types.ModuleType)
    assert callable(aprender.distill) and aprender.distill is aprender.distillation.distill


def _verbs() -> set[str]:
    from aprender.format._formats import Backend

    return {name for name in vars(Backend) if not name.startswith("_")}


@pytest.mark.parametrize("backend", ["apr", "gguf", "onnx"])
def test_a_backend_verb_has_one_meaning_inside_its_package(backend: str) -> None:
    """A private module of a backend package defines a verb's name only as the function the backend exports.

    (gguf's reader had a ``read_state(path, where)`` beside the backend's ``read_state(path)``.)
    """
    package = importlib.import_module(f"aprender.format.{backend}")
    verbs = _verbs()
    assert {"read_state", "loads", "save_file"} <= verbs
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        defined = {name for name, value in vars(module).items()
                   if name in verbs and getattr(value, "__module__", None) == module.__name__}
        assert all(getattr(package, name) is getattr(module, name) for name in defined), (info.name, defined)


def test_each_format_row_imports_the_backend_its_module_names() -> None:
    """aprender's own rows reach their backend through the lazy package, which type checkers follow."""
    from aprender.format._formats import FORMATS

    for fmt in FORMATS.values():
        assert fmt.importer is not None, fmt.name
        assert fmt.backend is importlib.import_module(fmt.module), fmt.name


#: The modules that import a module by a name held in a string, and why the name is data there.
STRING_IMPORTS = {
    "codec/_registry.py": "the class table's module for a class key read from a file, imported for that file only",
    "codec/_migrations.py": "scikit-learn classes named in the migration table, which not every version has",
    "codec/trust.py": "a trusted function's module, named by the file or by the caller's trusted= list",
    "codec/handlers/_base.py": "the handler module of a value tag read from the file",
    "codec/handlers/objects.py": "an allow-listed object's module, for an object key read from the file",
    "codec/handlers/callbacks.py": "an allow-listed callback's module, for a callback named in the file",
    "codec/_optional.py": "an optional library (a booster's), whose absence names the extra to install",
    "card.py": "an optional library of the card extra, whose absence names the extra to install",
    "format/_formats.py": "a format registered at run time by its module's name",
    "cli/_app.py": "the module of the command argv names, from the table --help lists without importing",
}


def test_modules_are_imported_from_strings_only_where_the_name_is_data() -> None:
    root = Path(aprender.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            called = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(called, "attr", getattr(called, "id", "")) == "import_module":
                found.add(path.relative_to(root).as_posix())
    assert found == set(STRING_IMPORTS)
