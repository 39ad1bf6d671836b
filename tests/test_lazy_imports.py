"""Loading a plain model imports only what its file needs (issue: first load ≤ 10 ms over the second).

The gguf package alone takes about 0.1 s to import; a SafeTensors or .apr file without
quantized tensors must load without it, and without the schema modules of other families.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from sklearn.datasets import load_iris

import aprender
from aprender.linear_model import LogisticRegression


@pytest.mark.parametrize("suffix", ["apr", "safetensors"])
def test_plain_load_imports_neither_gguf_nor_other_schemas(suffix: str, tmp_path) -> None:
    X, y = load_iris(return_X_y=True)
    path = tmp_path / f"m.{suffix}"
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), path)
    code = ("import sys, json, aprender; aprender.load(sys.argv[1]); "
            "print(json.dumps(sorted(m for m in sys.modules if m == 'gguf' or m.startswith(('gguf.', "
            "'aprender.codec.schemas.')))))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    assert "gguf" not in loaded
    # the family's schema, and the shared checks and tables
    assert loaded == [f"aprender.codec.schemas.{m}" for m in ("_compiled", "_model_checks", "linear")]


def test_loading_a_hand_written_class_defines_no_namesakes(tmp_path) -> None:
    """aprender.linear_model's generated namesakes (SGDClassifier, ...) come in on first use, not with the package."""
    X, y = load_iris(return_X_y=True)
    path = tmp_path / "m.apr"
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), path)
    code = ("import sys, aprender; aprender.load(sys.argv[1]); "
            "print('aprender.linear_model._generated' in sys.modules); "
            "from aprender.linear_model import SGDClassifier; "
            "print(SGDClassifier.__module__, 'SGDClassifier' in dir(sys.modules['aprender.linear_model']))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "aprender.linear_model._generated", "True"]


def test_loading_a_forest_defines_no_mixture_of_experts(tmp_path) -> None:
    """aprender.ensemble imports its forests; boosting, the mixture of experts and its gate come on first use."""
    from sklearn.datasets import make_classification

    from aprender.ensemble import RandomForestClassifier

    path = tmp_path / "forest.apr"
    aprender.save(RandomForestClassifier(n_estimators=3, random_state=0).fit(*make_classification(random_state=0)),
                  path)
    code = ("import sys, aprender; aprender.load(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m in ('aprender.ensemble._moe', 'aprender.ensemble._moe_base', "
            "'aprender.ensemble._routing', 'aprender.ensemble._gating', "
            "'aprender.ensemble._boosting', 'aprender.codec.schemas.boosting'))); "
            "from aprender.ensemble import SoftmaxGating; print(SoftmaxGating.__module__)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "aprender.ensemble._gating"]


# -- import aprender, and the codec's handler tables ------------------------------------------

#: Packages no header-reading command and no bare ``import aprender`` may import.
HEAVY = ("sklearn", "scipy", "pandas")


def _imported(code: str, *args: str) -> list[str]:
    """The top-level packages and aprender modules a fresh interpreter holds after ``code``."""
    probe = (f"{code}\nimport json, sys\n"
             "print(json.dumps(sorted(m for m in sys.modules if '.' not in m or m.startswith('aprender.'))))")
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_import_aprender_imports_no_estimator_family_nor_the_codec() -> None:
    loaded = _imported("import aprender")
    assert not [m for m in loaded if m in (*HEAVY, "ml_dtypes", "cryptography", "gguf")], loaded
    assert [m for m in loaded if m.startswith("aprender.")] == [], loaded  # even __version__ comes on first use


def test_the_top_level_names_come_on_first_use() -> None:
    code = ("import aprender\n"
            "names = [n for n in aprender.__all__ if n != '__version__']\n"
            "assert all(callable(getattr(aprender, n)) for n in names), names\n"
            "assert set(names) <= set(dir(aprender))\n"
            "import aprender.distillation as d\n"
            "assert aprender.distill is d.distill\n"
            "from aprender import load, register_function, save\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def _registered() -> dict[str, Any]:
    import importlib
    import pkgutil

    from aprender.codec import handlers
    from aprender.codec.handlers import _base

    for info in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"{handlers.__name__}.{info.name}")
    return {tag: h for tag, h in _base._HANDLERS.items() if h.encode.__module__.startswith(handlers.__name__ + ".")}


def test_the_tag_table_names_the_module_that_registers_each_tag() -> None:
    from aprender.codec.handlers import TAG_MODULES

    registered = _registered()
    assert {tag: h.encode.__module__.rsplit(".", 1)[1] for tag, h in registered.items()} == TAG_MODULES


def test_every_handler_type_lives_under_its_modules_type_roots() -> None:
    """The encoder imports a handler module when a value's class comes from one of its roots."""
    from aprender.codec.handlers import TAG_MODULES
    from aprender.codec.handlers._base import TYPE_ROOTS
    from aprender.codec.handlers.objects import OBJECTS, object_class

    assert set(TYPE_ROOTS) == set(TAG_MODULES.values())
    for tag, handler in _registered().items():
        module = handler.encode.__module__.rsplit(".", 1)[1]
        types = [object_class(key, "") for key in OBJECTS] if tag == "object" else list(handler.types)
        if tag == "class":  # a class object as a value: the encoder's branch for types imports it
            types = []
        if tag == "callback":
            from aprender.codec.handlers.callbacks import CALLBACKS

            types = [getattr(importlib.import_module(module), name) for name, (module, _) in CALLBACKS.items()
                     if importlib.util.find_spec(module) is not None]
        assert types or tag in ("records", "datetime", "class"), tag  # found by dtype or as a type, not by type
        for cls in types:
            home = cls.__module__
            assert any(home == root or home.startswith(root + ".") for root in TYPE_ROOTS[module]), (tag, cls)


def test_a_file_imports_the_handler_modules_of_the_tags_it_names(tmp_path) -> None:
    """A tree's file brings the tree handler and not the spline one (scipy.interpolate); an isotonic file brings it."""
    import numpy as np

    from aprender.isotonic import IsotonicRegression
    from aprender.tree import DecisionTreeRegressor

    X = np.arange(30.0).reshape(-1, 1)
    aprender.save(DecisionTreeRegressor(max_depth=2).fit(X, X[:, 0]), tmp_path / "tree.apr")
    aprender.save(IsotonicRegression().fit(X[:, 0], X[:, 0] ** 2), tmp_path / "iso.apr")
    code = ("import sys, aprender\n"
            "aprender.load(sys.argv[1])\n"
            "assert 'aprender.codec.handlers.tree' in sys.modules\n"
            "assert 'aprender.codec.handlers.interpolate' not in sys.modules\n"
            "assert aprender.load(sys.argv[2]).predict([3.0]).tolist() == [9.0]\n")
    imported = _imported(code, str(tmp_path / "tree.apr"), str(tmp_path / "iso.apr"))
    assert "aprender.codec.handlers.interpolate" in imported


def test_threads_that_first_need_a_handler_module_together_all_load(tmp_path) -> None:
    """A handler module imported by one thread is waited for by the others (never an 'unknown value tag')."""
    import numpy as np

    from aprender.isotonic import IsotonicRegression
    from aprender.preprocessing import OneHotEncoder

    x = np.arange(30.0)
    aprender.save(IsotonicRegression().fit(x, x**2), tmp_path / "iso.apr")  # interp1d: the interpolate handler
    aprender.save(OneHotEncoder().fit([["a"], ["b"]]), tmp_path / "ohe.apr")  # dtype nodes: the std handler
    code = ("import sys, threading, aprender\n"
            "aprender.load(sys.argv[1])  # the codec and the families, not the handlers\n"
            "gate, out = threading.Barrier(8), []\n"
            "def one(i):\n"
            "    gate.wait()\n"
            "    out.append(aprender.load(sys.argv[2 + i % 2]))\n"
            "threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\n"
            "assert len(out) == 8, out\n"
            "assert all(m.predict([3.0]).tolist() == [9.0] for m in out if hasattr(m, 'f_'))\n")
    from sklearn.datasets import load_iris as iris

    aprender.save(LogisticRegression(max_iter=500).fit(*iris(return_X_y=True)), tmp_path / "lr.apr")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "lr.apr"), str(tmp_path / "iso.apr"),
                    str(tmp_path / "ohe.apr")], check=True)


def test_a_save_imports_the_handler_modules_its_values_need(tmp_path) -> None:
    """Encoding finds a handler whose module nobody imported yet (interp1d -> interpolate), and no other."""
    code = ("import sys, numpy as np, aprender\n"
            "from aprender.isotonic import IsotonicRegression\n"
            "from aprender.linear_model import LinearRegression\n"
            "X = np.arange(30.0)\n"
            "aprender.save(LinearRegression().fit(X[:, None], X), sys.argv[1] + '/lr.apr')\n"
            "assert 'aprender.codec.handlers.interpolate' not in sys.modules\n"
            "aprender.save(IsotonicRegression().fit(X, X ** 2), sys.argv[1] + '/iso.apr')\n"
            "assert aprender.load(sys.argv[1] + '/iso.apr').predict([3.0]).tolist() == [9.0]\n")
    assert "aprender.codec.handlers.interpolate" in _imported(code, str(tmp_path))


def test_loading_a_logistic_regression_imports_nothing_joblib_would_not(tmp_path) -> None:
    """Past what unpickling the same model imports (scikit-learn's linear models), only aprender and its readers."""
    X, y = load_iris(return_X_y=True)
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), tmp_path / "m.apr")
    code = ("import sys, sklearn.linear_model; before = set(sys.modules)\n"
            "import aprender; aprender.load(sys.argv[1]).predict([[1.0, 2.0, 3.0, 4.0]])\n"
            "print(sorted({m.split('.')[0] for m in set(sys.modules) - before}))\n"
            "print('aprender.codec._migrations' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.apr")], capture_output=True, text=True,
                          check=True)
    packages, migrations = done.stdout.splitlines()
    # lazy_loader: the packages' names on first use (SPEC 1), a few hundred microseconds
    assert set(json.loads(packages.replace("'", '"'))) <= {"aprender", "lazy_loader", "orjson", "isal"}, done.stdout
    assert migrations == "False"  # the version table comes in only for a file from another scikit-learn


# -- the command line -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory) -> dict[str, str]:
    """A small model in every format, a signed copy and an Ed25519 key pair."""
    from aprender.cli import main

    folder = tmp_path_factory.mktemp("cli")
    X, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=500).fit(X, y)
    files = {suffix: str(folder / f"m.{suffix}") for suffix in ("apr", "safetensors", "gguf")}
    for path in files.values():
        aprender.save(model, path)
    files["onnx"] = str(folder / "m.onnx")
    aprender.save(model, files["onnx"])
    files["key"] = str(folder / "k")
    files["signed"] = str(folder / "signed.apr")
    assert main(["keygen", "--type", "ed25519", "-o", files["key"]]) == 0
    assert main(["sign", files["apr"], "--key", files["key"], "-o", files["signed"]]) == 0
    return files


def _cli_imports(*argv: str) -> list[str]:
    code = ("import sys\nfrom aprender.cli import main\ncode = main(sys.argv[1:])\n"
            "assert code == 0, code\n")
    return _imported(code, *argv)


#: command -> what it must not import beyond scikit-learn, scipy and pandas: the gguf package (and
#: ml_dtypes) only for a .gguf file that needs them, the codec's decoder and allow-list only to build or
#: quantize a model, cryptography only to sign, verify or make keys, numpy not to make keys or print help.
_NO_CODEC = ("aprender.codec._decode", "aprender.codec._registry")
_NO_GGUF = ("gguf", "ml_dtypes")
_CLI_COMMANDS = {
    "--help": (["--help"], ("numpy", "rich", *_NO_GGUF, "cryptography", *_NO_CODEC)),
    "--version": (["--version"], ("numpy", "rich", *_NO_GGUF, "cryptography", *_NO_CODEC)),
    "inspect apr": (["inspect", "{apr}"], (*_NO_GGUF, "cryptography", *_NO_CODEC)),
    "inspect safetensors": (["inspect", "{safetensors}"], (*_NO_GGUF, "cryptography", *_NO_CODEC)),
    "inspect gguf": (["inspect", "{gguf}"], ("ml_dtypes", "cryptography", *_NO_CODEC)),
    "inspect onnx": (["inspect", "{onnx}"], ("gguf", "skl2onnx", "cryptography", "aprender.codec._decode",
                                             "aprender.codec._encode")),
    "inspect --json signed": (["inspect", "--json", "{signed}"], (*_NO_GGUF, *_NO_CODEC)),
    "verify": (["verify", "{signed}", "--key", "{key}.pub"], (*_NO_GGUF, *_NO_CODEC)),
    "sign": (["sign", "{apr}", "--key", "{key}", "-o", "{out}", "--force"], (*_NO_GGUF, *_NO_CODEC)),
    "keygen ed25519": (["keygen", "--type", "ed25519", "-o", "{out}", "--force"], ("numpy", *_NO_GGUF, *_NO_CODEC)),
    "keygen x25519": (["keygen", "--type", "x25519", "-o", "{out}", "--force"], ("numpy", *_NO_GGUF, *_NO_CODEC)),
}


@pytest.mark.parametrize("case", sorted(_CLI_COMMANDS))
def test_header_commands_import_no_estimator_library(case: str, cli_files, tmp_path) -> None:
    """Commands that read bytes answer without scikit-learn, scipy or pandas (each costs a second to import),
    and without what only another format or command needs."""
    command, also_not = _CLI_COMMANDS[case]
    argv = [part.format(**cli_files, out=tmp_path / "out.apr") for part in command]
    loaded = _cli_imports(*argv)
    assert not [m for m in loaded if m in HEAVY or m in also_not], loaded
    if case == "--help":  # the commands are listed from a table: none of their modules is imported
        assert not [m for m in loaded if m.startswith("aprender.cli._") and m not in (
            "aprender.cli._app", "aprender.cli._options", "aprender.cli._render")], loaded


@pytest.mark.parametrize(("user_setting", "threads"), [(None, "1"), ("2", "2")])
def test_byte_commands_start_numpy_with_one_blas_thread(user_setting, threads, cli_files) -> None:
    """inspect starts numpy (through gguf) with one OpenBLAS thread unless the user chose a number,
    and gives the environment back as it found it."""
    if user_setting is not None and (os.cpu_count() or 1) < int(threads):
        pytest.skip(f"OpenBLAS starts at most one thread per core: {threads} threads need {threads} cores here")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_setting is not None:
        env["OPENBLAS_NUM_THREADS"] = user_setting
    code = ("import os, sys\nfrom aprender.cli import main\nassert main(sys.argv[1:]) == 0\n"
            "from threadpoolctl import threadpool_info\n"
            "blas = [p['num_threads'] for p in threadpool_info() if p['internal_api'] == 'openblas']\n"
            "print(blas, os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, "inspect", cli_files["gguf"]], capture_output=True, text=True,
                          env=env, check=True)
    counts, left = done.stderr.strip().splitlines()[-1].rsplit(" ", 1)
    if counts == "[]":
        pytest.skip("numpy here is not built on OpenBLAS: no BLAS thread pool to size")
    assert json.loads(counts) == [int(threads)] * len(json.loads(counts)), done.stderr
    assert left == str(user_setting), done.stderr  # None: the variable is gone again


def test_validate_imports_what_its_model_needs_and_no_other_family(cli_files) -> None:
    """validate rebuilds the model: scikit-learn's linear models come in, no other family's schema or handler."""
    loaded = _cli_imports("validate", cli_files["apr"])
    assert "aprender.codec.schemas.linear" in loaded
    schemas = [m for m in loaded if m.startswith("aprender.codec.schemas.")]
    assert schemas == [f"aprender.codec.schemas.{m}" for m in ("_compiled", "_model_checks", "linear")], schemas
    assert "aprender.codec.handlers.interpolate" not in loaded and "aprender.distillation" not in loaded
