"""The format table: every backend has the table's verbs and declares what it can do, and a new format is
one module plus one row.

Two toy formats are registered through the public :mod:`aprender.extend`, each a module
and a row and nothing else. This module is the backend of a plain one (``.toy``: the
magic ``TOY\\0``, then the SafeTensors bytes of the model's state);
tests/support/toy_export.py is an export-only one with an option of its own (``.toyx``,
``level``). ``aprender.save`` / ``load`` / ``inspect`` / ``validate``, format detection
by magic bytes, the mixin, the CLI's ``convert`` / ``inspect`` / ``validate`` and help,
``aprender serve`` and model cards then handle them.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import toy_export
from click.testing import CliRunner

import aprender
from aprender.codec import ModelState, from_state, to_state
from aprender.exceptions import FormatError, ModelTypeMismatch, UnsupportedExportError
from aprender.extend import (
    FORMATS,
    VERBS,
    Capabilities,
    Format,
    ModelInfo,
    TensorInfo,
    ValidationReport,
    existing_file,
    model_type_keyword,
    register_format,
    write_atomic,
)
from aprender.format import safetensors
from aprender.format._api import file_format
from aprender.format._formats import by_suffix, sniff_head
from aprender.linear_model import LinearRegression

ROOT = Path(__file__).resolve().parent.parent
MAGIC = b"TOY\x00"
TOY = Format("toy", ".toy", __name__, "Toy", MAGIC)
#: A plain format: it loads back, and does nothing else.
CAPABILITIES = Capabilities()


# -- the toy backend: the verbs of Backend ---------------------------------------------


def state_to_bytes(state: ModelState, **options: Any) -> bytes:
    return MAGIC + safetensors.state_to_bytes(state)


def state_from_bytes(data: bytes | bytearray | memoryview, **options: Any) -> ModelState:
    if bytes(data[:4]) != MAGIC:
        raise FormatError("toy bytes: no TOY magic")
    return safetensors.state_from_bytes(bytes(data[4:]))


def write_state(state: ModelState, path: str | os.PathLike, **options: Any) -> None:
    write_atomic(path, [state_to_bytes(state)])


def read_state(path: str | os.PathLike, **options: Any) -> ModelState:
    return state_from_bytes(existing_file(path).read_bytes())


def dumps(model: Any, **options: Any) -> bytes:
    return state_to_bytes(to_state(model, **options))


@model_type_keyword
def loads(data: bytes, model_type: Any = None, *, trusted: Any = None, **options: Any) -> Any:
    return from_state(state_from_bytes(data), model_type, trusted=trusted)


def save_file(model: Any, path: str | os.PathLike, **options: Any) -> None:
    write_state(to_state(model, **options), path)


@model_type_keyword
def load_file(path: str | os.PathLike, model_type: Any = None, *, trusted: Any = None, **options: Any) -> Any:
    return from_state(read_state(path), model_type, trusted=trusted)


def inspect_file(path: str | os.PathLike) -> ModelInfo:
    state = read_state(path)
    return ModelInfo(format="toy", path=str(path), file_size=os.path.getsize(path), model_type=state.model_type,
                     class_key=state.class_key, metadata=dict(state.meta),
                     tensors=tuple(TensorInfo(n, str(a.dtype), a.shape, a.nbytes) for n, a in state.tensors.items()))


def validate_file(path: str | os.PathLike, **keys: Any) -> ValidationReport:
    from_state(read_state(path))
    return ValidationReport(str(path), "toy", ("TOY magic", "SafeTensors body", "model rebuilt"), True)


# -- tests -----------------------------------------------------------------------------

@pytest.fixture
def toy():
    """The toy rows in the table for one test: the only change a fifth and sixth format make outside their
    modules."""
    rows = [register_format(TOY), register_format(toy_export.ROW)]
    try:
        yield TOY
    finally:
        for row in rows:
            FORMATS.pop(row.name)


def _line() -> LinearRegression:
    return LinearRegression().fit([[0.0], [1.0], [2.0]], [1.0, 3.0, 5.0])


def test_the_table_lists_the_four_formats_in_the_clis_order() -> None:
    assert [(f.name, f.suffix) for f in FORMATS.values()] == [
        ("safetensors", ".safetensors"), ("apr", ".apr"), ("gguf", ".gguf"), ("onnx", ".onnx")]
    # what each can do is the backend's own declaration, not a flag of the row
    assert [f.name for f in FORMATS.values() if f.can.loads] == ["safetensors", "apr", "gguf"]
    assert [f.name for f in FORMATS.values() if f.can.signs or f.can.encrypts or f.can.compresses
            or f.can.mmaps] == ["apr"]
    assert not {f.name for f in dataclasses.fields(Format)} & set(Capabilities.FLAGS)


@pytest.mark.parametrize("name", ["safetensors", "apr", "gguf", "onnx"])
def test_every_backend_has_every_verb_of_the_protocol_and_declares_its_capabilities(name: str) -> None:
    backend = importlib.import_module(FORMATS[name].module)
    missing = [verb for verb in VERBS if not callable(getattr(backend, verb, None))]
    assert not missing, f"{name} lacks {missing}"
    for verb in ("loads", "load_file"):  # the target class is named model_type everywhere
        assert "model_type" in inspect.signature(getattr(backend, verb)).parameters, (name, verb)
    can = backend.CAPABILITIES
    assert isinstance(can, Capabilities)
    for verb in ("save_file", "write_state"):  # every option it declares is a keyword its writers take
        params = inspect.signature(getattr(backend, verb)).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        assert all(f.name in params or takes_any for f in can.option_fields()), (name, verb)
    assert can.load_options <= set(inspect.signature(backend.load_file).parameters), name


def test_the_toy_modules_are_backends() -> None:
    assert VERBS == ("dumps", "loads", "save_file", "load_file", "state_to_bytes", "state_from_bytes",
                     "write_state", "read_state", "inspect_file", "validate_file")
    for module in (sys.modules[__name__], toy_export):
        assert all(callable(getattr(module, verb)) for verb in VERBS)
        assert isinstance(module.CAPABILITIES, Capabilities)


def test_register_format_refuses_what_is_no_backend_and_a_known_name(monkeypatch) -> None:
    with pytest.raises(TypeError, match="lacks dumps, loads, save_file"):
        register_format(Format("nothing", ".nothing", "textwrap", "Nothing", b"NO"))
    bare = types.ModuleType("bare_backend")  # every verb, no declaration of what it can do
    vars(bare).update({verb: getattr(sys.modules[__name__], verb) for verb in VERBS})
    monkeypatch.setitem(sys.modules, "bare_backend", bare)
    with pytest.raises(TypeError, match="declares no CAPABILITIES"):
        register_format(Format("bare", ".bare", "bare_backend", "Bare", b"NO"))
    with pytest.raises(ValueError, match="registered already"):
        register_format(Format("apr", ".apr2", __name__, "x", b"X"))
    assert "nothing" not in FORMATS and "bare" not in FORMATS


def test_bytes_and_paths_round_trip_under_the_same_verbs_in_every_loading_format(tmp_path) -> None:
    model = _line()
    for fmt in (f for f in FORMATS.values() if f.can.loads):
        backend = fmt.backend
        assert backend.loads(backend.dumps(model), LinearRegression).predict([[3.0]]) == pytest.approx([7.0])
        path = tmp_path / f"m{fmt.suffix}"
        backend.save_file(model, path)
        assert backend.load_file(path, model_type=LinearRegression).predict([[3.0]]) == pytest.approx([7.0])


def test_expected_is_a_deprecated_alias_of_model_type(tmp_path) -> None:
    path = tmp_path / "m.safetensors"
    safetensors.save_file(_line(), path)
    with pytest.warns(DeprecationWarning, match="pass model_type="):
        assert isinstance(safetensors.load_file(path, expected=LinearRegression), LinearRegression)
    with pytest.raises(TypeError, match="both model_type= and its older name"):
        safetensors.load_file(path, model_type=LinearRegression, expected=LinearRegression)
    with pytest.warns(DeprecationWarning, match="from_state"):  # the codec's rebuild names it the same way
        assert isinstance(from_state(to_state(_line()), expected=LinearRegression), LinearRegression)


def test_a_registered_fifth_format_is_saved_loaded_inspected_and_validated(toy, tmp_path) -> None:
    path = tmp_path / "line.toy"
    aprender.save(_line(), path)
    assert path.read_bytes()[:4] == MAGIC
    assert aprender.load(path, LinearRegression).predict([[3.0]]) == pytest.approx([7.0])
    assert aprender.inspect(path).class_key == "aprender.linear_model.LinearRegression"
    assert aprender.validate(path).checks == ("TOY magic", "SafeTensors body", "model rebuilt")
    assert by_suffix(path) is toy
    # detection reads the magic, whatever the name says
    renamed = tmp_path / "line.bin"
    renamed.write_bytes(path.read_bytes())
    assert file_format(renamed) is toy
    assert aprender.load(renamed).predict([[3.0]]) == pytest.approx([7.0])


def test_the_mixin_reads_the_table(toy, tmp_path, monkeypatch) -> None:
    # the mixin's SafeTensors methods look their backend up in the table: swap the row's module, and they follow
    monkeypatch.setitem(FORMATS, "safetensors", Format("safetensors", ".safetensors", __name__, "Toy", MAGIC))
    path = tmp_path / "line.safetensors"
    _line().save_safetensors(path)
    assert path.read_bytes()[:4] == MAGIC
    assert LinearRegression.load_safetensors(path).predict([[3.0]]) == pytest.approx([7.0])


def test_the_cli_converts_to_and_from_a_registered_fifth_format(toy, tmp_path) -> None:
    from aprender.cli import cli as main

    source = tmp_path / "line.apr"
    aprender.save(_line(), source)
    runner = CliRunner()
    done = runner.invoke(main, ["convert", str(source), "-o", str(tmp_path / "line.toy"), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["format"] == "toy"
    assert (tmp_path / "line.toy").read_bytes()[:4] == MAGIC
    done = runner.invoke(main, ["convert", str(tmp_path / "line.toy"), "--format", "toy", "-o",
                                str(tmp_path / "again.dat"), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["input_format"] == "toy"
    done = runner.invoke(main, ["convert", str(tmp_path / "again.dat"), "-o", str(tmp_path / "back.safetensors")])
    assert done.exit_code == 0, done.output
    back = aprender.load(tmp_path / "back.safetensors")
    assert np.array_equal(back.coef_, _line().coef_)
    done = runner.invoke(main, ["inspect", str(tmp_path / "line.toy"), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["format"] == "toy"
    done = runner.invoke(main, ["validate", str(tmp_path / "line.toy"), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["format"] == "toy"


def test_sniffing_prefers_the_most_specific_magic() -> None:
    # an .apr header whose tensor count is 123 has "{" at byte 8, where SafeTensors has its JSON
    head = b"APR\x00\x02\x00\x00\x00{\x00\x00\x00" + bytes(4)
    assert sniff_head(head, ".apr").name == "apr"
    assert sniff_head(b"\x08\x07" + bytes(14), ".onnx").name == "onnx"
    assert sniff_head(b"\x08\x07" + bytes(14), ".bin") is None  # ONNX's tag byte alone proves nothing


def test_a_second_row_with_a_known_name_or_suffix_is_refused() -> None:
    with pytest.raises(ValueError, match="registered already"):
        register_format(Format("apr2", ".apr", __name__, "x", b"X"))


# -- the export-only toy: its own option, refused wherever a model is loaded -------------


def test_the_mixin_saves_and_loads_any_format_of_the_table(toy, tmp_path) -> None:
    _line().save(tmp_path / "line.toy")
    assert LinearRegression.load(tmp_path / "line.toy").predict([[3.0]]) == pytest.approx([7.0])
    _line().save(tmp_path / "line.toyx", level=2)
    assert (tmp_path / "line.toyx").read_bytes()[:5] == b"TOYX\x02"
    with pytest.raises(UnsupportedExportError, match="ToyExport is export-only"):
        LinearRegression.load(tmp_path / "line.toyx")
    from aprender.cluster import KMeans

    with pytest.raises(ModelTypeMismatch):
        KMeans.load(tmp_path / "line.toy")


def test_an_export_only_format_takes_its_own_option_through_the_api(toy, tmp_path) -> None:
    path = tmp_path / "line.toyx"
    aprender.save(_line(), path, level=7)
    assert path.read_bytes()[:5] == b"TOYX\x07"
    assert aprender.inspect(path).metadata["level"] == 7
    assert aprender.validate(path).checks == ("ToyExport magic", "JSON record", "level byte")
    assert not aprender.validate(path).model
    with pytest.raises(UnsupportedExportError, match="export-only"):
        aprender.load(path)
    with pytest.raises(ValueError, match=r"keys open \.apr files only"):
        aprender.validate(path, password="x")


def test_the_cli_writes_an_export_only_format_with_its_own_option(toy, tmp_path) -> None:
    from aprender.cli import cli as main

    source = tmp_path / "line.apr"
    aprender.save(_line(), source)
    runner = CliRunner()
    out = tmp_path / "line.toyx"
    done = runner.invoke(main, ["convert", str(source), "-o", str(out), "--toyx-level", "4", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["format"] == "toyx"
    assert out.read_bytes()[:5] == b"TOYX\x04"
    done = runner.invoke(main, ["inspect", str(out), "--json"])
    assert done.exit_code == 0, done.output
    shown = json.loads(done.output)
    # an export records the root's class and hyperparameters, shown as an ONNX file's are
    assert shown["format"] == "toyx" and shown["metadata"] == {"level": 4}
    assert shown["hyperparameters"]["fit_intercept"] is True
    done = runner.invoke(main, ["inspect", str(out), "--tensors"])
    assert done.exit_code == 0 and "holds no tensors aprender reads" in done.output, done.output
    done = runner.invoke(main, ["validate", str(out)])
    assert done.exit_code == 0, done.output
    # its option is its own; the options of the others are not its
    done = runner.invoke(main, ["convert", str(source), "-o", str(tmp_path / "x.apr"), "--toyx-level", "4"])
    assert done.exit_code == 2 and "--toyx-level applies to toyx output only" in done.output
    for refused in (["--compress", "zstd"], ["--sample", str(source)], ["--dtype", "f32"], ["--quantize", "q8_0"]):
        done = runner.invoke(main, ["convert", str(source), "-o", str(tmp_path / "y.toyx"), *refused])
        assert done.exit_code == 2, (refused, done.output)
    # nothing reads it back into a model
    done = runner.invoke(main, ["convert", str(out), "-o", str(tmp_path / "back.apr")])
    assert done.exit_code == 1 and "cannot read back into a model" in done.output


def test_help_lists_the_formats_of_the_table(toy) -> None:
    from aprender.cli import cli as main

    runner = CliRunner()
    top = runner.invoke(main, ["--help"]).output
    assert "Convert to safetensors, apr, gguf, onnx, toy or toyx." in top
    assert ".toy or .toyx" in top
    convert = runner.invoke(main, ["convert", "--help"]).output
    assert "safetensors|apr|gguf|onnx|toy|toyx" in convert
    assert "--toyx-level INTEGER" in convert and "toyx output: detail level" in convert
    flat = " ".join(convert.split())
    assert "Convert INPUT to another format: safetensors, apr, gguf, onnx, toy or toyx." in flat
    assert "(onnx: f32 or f64 export)" in flat and "--sample ROWS onnx: a .csv" in flat  # toyx takes neither


def test_help_names_four_formats_without_the_toys() -> None:
    from aprender.cli import cli as main

    convert = CliRunner().invoke(main, ["convert", "--help"]).output
    assert "safetensors|apr|gguf|onnx]" in convert and "toy" not in convert


def test_the_server_serves_a_format_that_loads_and_refuses_an_export(toy, tmp_path) -> None:
    import httpx
    from serve_helpers import serving

    from aprender.serve import Policy, RepositoryError, ServeConfig, scan

    folder = tmp_path / "repo" / "line" / "1"
    folder.mkdir(parents=True)
    aprender.save(_line(), folder / "model.toy")
    assert scan([tmp_path / "repo"], Policy())["line"][1].format == "toy"
    with serving(ServeConfig((str(tmp_path / "repo"),))) as url:
        body = {"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP64", "data": [3.0]}]}
        answer = httpx.post(f"{url}/v2/models/line/infer", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["outputs"][0]["data"] == pytest.approx([7.0])
    aprender.save(_line(), tmp_path / "model.toyx")
    with pytest.raises(RepositoryError, match="ToyExport files are not served"):
        scan([tmp_path / "model.toyx"], Policy())


def test_a_card_names_the_format_and_says_how_to_load_it(toy, tmp_path) -> None:
    pytest.importorskip("yaml")
    from aprender.card import Card

    for suffix, loads in ((".toy", True), (".toyx", False)):
        path = tmp_path / f"line{suffix}"
        aprender.save(_line(), path)
        text = Card(_line(), model_id="line").for_file(path).render()
        assert f"| `line{suffix}` | {by_suffix(path).title} |" in text
        assert (f'aprender.load("line{suffix}")' in text) is loads
        assert ("cannot load it back" in text) is not loads


# -- no caller names a format; the docs are the table's ---------------------------------

#: Where a format's name may be compared: the table and the backends themselves.
_OWN = ("aprender/format/_formats.py", "aprender/format/safetensors.py", "aprender/format/apr/",
        "aprender/format/gguf/", "aprender/format/onnx/")
_COMPARISON = re.compile(r"""(==|!=|\bin\b)\s*\(?\s*["'](safetensors|apr|gguf|onnx)["']"""
                         r"""|["'](safetensors|apr|gguf|onnx)["']\s*(==|!=|\bin\b)"""
                         r"""|["']\.?(safetensors|apr|gguf|onnx)["']\s*:\s*["']""")  # a second table by name or suffix


def test_no_module_compares_format_names_outside_the_formats_own() -> None:
    assert _COMPARISON.search('_FORMATS = {".safetensors": "SafeTensors"}')  # card.py's old second table
    assert _COMPARISON.search('if info.format == "onnx":') and _COMPARISON.search('fmt.name in ("apr", "gguf")')
    found = []
    for path in sorted((ROOT / "aprender").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(_OWN):
            continue
        found += [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
                  if _COMPARISON.search(line)]
    assert not found, "ask the format's backend (fmt.can), not its name:\n" + "\n".join(found)


def test_the_docs_table_is_the_one_the_generator_writes() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_format_table.py"), "--check"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_extension_snippet_of_the_docs_runs_as_written(tmp_path) -> None:
    page = (ROOT / "docs" / "formats.md").read_text()
    snippet = page.split("```python\n", 1)[1].split("```", 1)[0]
    assert "from aprender.extend import" in snippet and "_formats" not in snippet
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[5.]", "box"]
    assert (tmp_path / "line.box").read_bytes()[:8] == b"BOX\x00\x03\x00\x00\x00"
