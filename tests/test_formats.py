"""The format table: every backend has the table's verbs, and a new format is one module plus one row.

This module is itself the backend of a toy fifth format (``.toy``: the magic ``TOY\\0``,
then the SafeTensors bytes of the model's state). The test registers it as one row of
:data:`aprender.format._formats.FORMATS` and nothing else, and ``aprender.save`` /
``load`` / ``inspect`` / ``validate``, format detection by magic bytes, the mixin's
table lookup and the CLI's ``convert`` / ``inspect`` then handle it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import aprender
from aprender.codec import ModelState, from_state, to_state
from aprender.exceptions import FormatError
from aprender.format import ModelInfo, TensorInfo, ValidationReport, safetensors
from aprender.format._api import file_format
from aprender.format._formats import FORMATS, Backend, Format, by_suffix, model_type_keyword, register, sniff_head
from aprender.format._io import existing_file, write_atomic
from aprender.linear_model import LinearRegression

MAGIC = b"TOY\x00"
TOY = Format("toy", ".toy", __name__, "Toy", MAGIC)


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

VERBS = [name for name, member in vars(Backend).items() if callable(member) and not name.startswith("_")]


@pytest.fixture
def toy(monkeypatch):
    """The toy row in the table for one test: the only change a fifth format makes outside its module."""
    monkeypatch.setitem(FORMATS, TOY.name, TOY)
    return TOY


def _line() -> LinearRegression:
    return LinearRegression().fit([[0.0], [1.0], [2.0]], [1.0, 3.0, 5.0])


def test_the_table_lists_the_four_formats_in_the_clis_order() -> None:
    assert [(f.name, f.suffix) for f in FORMATS.values()] == [
        ("safetensors", ".safetensors"), ("apr", ".apr"), ("gguf", ".gguf"), ("onnx", ".onnx")]
    assert [f.name for f in FORMATS.values() if f.loads] == ["safetensors", "apr", "gguf"]
    assert [f.name for f in FORMATS.values() if f.signs or f.encrypts or f.compresses or f.mmaps] == ["apr"]


@pytest.mark.parametrize("name", ["safetensors", "apr", "gguf", "onnx"])
def test_every_backend_has_every_verb_of_the_protocol(name: str) -> None:
    backend = importlib.import_module(FORMATS[name].module)
    missing = [verb for verb in VERBS if not callable(getattr(backend, verb, None))]
    assert not missing, f"{name} lacks {missing}"
    for verb in ("loads", "load_file"):  # the target class is named model_type everywhere
        assert "model_type" in inspect.signature(getattr(backend, verb)).parameters, (name, verb)


def test_the_toy_module_is_a_backend() -> None:
    assert VERBS == ["dumps", "loads", "save_file", "load_file", "state_to_bytes", "state_from_bytes",
                     "write_state", "read_state", "inspect_file", "validate_file"]
    assert all(callable(getattr(sys.modules[__name__], verb)) for verb in VERBS)


def test_bytes_and_paths_round_trip_under_the_same_verbs_in_every_loading_format(tmp_path) -> None:
    model = _line()
    for fmt in (f for f in FORMATS.values() if f.loads):
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


def test_sniffing_prefers_the_most_specific_magic() -> None:
    # an .apr header whose tensor count is 123 has "{" at byte 8, where SafeTensors has its JSON
    head = b"APR\x00\x02\x00\x00\x00{\x00\x00\x00" + bytes(4)
    assert sniff_head(head, ".apr").name == "apr"
    assert sniff_head(b"\x08\x07" + bytes(14), ".onnx").name == "onnx"
    assert sniff_head(b"\x08\x07" + bytes(14), ".bin") is None  # ONNX's tag byte alone proves nothing


def test_a_second_row_with_a_known_name_or_suffix_is_refused() -> None:
    with pytest.raises(ValueError, match="registered already"):
        register(Format("apr2", ".apr", "x", "x", b"X"))
