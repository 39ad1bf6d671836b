"""An export-only toy backend (``.toyx``): a model's class and hyperparameters as JSON, for another runtime.

The file is the magic ``TOYX``, one byte of ``level`` (its own write option, ``--toyx-level``
in ``apr convert``), then canonical JSON. Nothing reads it back into a model: its
``CAPABILITIES`` say ``loads=False``, and the load verbs raise. With its one row in the
format table (tests/test_formats.py), it is a fifth format everywhere: it touches this
module and that row only, and imports from aprender's public modules only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import aprender
from aprender.exceptions import FormatError, UnsupportedExportError
from aprender.extend import (
    Capabilities,
    Format,
    ModelInfo,
    ValidationReport,
    existing_file,
    model_type_keyword,
    write_atomic,
)

MAGIC = b"TOYX"
ROW = Format("toyx", ".toyx", __name__, "ToyExport", MAGIC)


@dataclass(frozen=True)
class Options:
    """The write options of the toy export."""

    level: int = field(default=1, metadata={"help": "detail level, 0 to 9, written as the file's fifth byte."})


CAPABILITIES = Capabilities(loads=False, options=Options)


def _record(model: Any) -> dict[str, Any]:
    params = {k: v for k, v in model.get_params(deep=False).items() if isinstance(v, (int, float, str, bool))}
    return {"class": f"{type(model).__module__}.{type(model).__qualname__}", "params": params}


def dumps(model: Any, level: int = 1, **options: Any) -> bytes:
    if not 0 <= level <= 9:
        raise ValueError(f"level must be 0 to 9, got {level}")
    record = {**_record(model), "level": level}
    return MAGIC + bytes([level]) + json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def save_file(model: Any, path: str | os.PathLike, **options: Any) -> None:
    write_atomic(path, [dumps(model, **options)])


def state_to_bytes(state: Any, **options: Any) -> bytes:
    from aprender.codec import from_state

    return dumps(from_state(state), **options)


def write_state(state: Any, path: str | os.PathLike, **options: Any) -> None:
    write_atomic(path, [state_to_bytes(state, **options)])


def _refuse(what: str) -> UnsupportedExportError:
    return UnsupportedExportError(f"cannot load {what}: ToyExport is export-only")


@model_type_keyword
def loads(data: Any, model_type: Any = None, **options: Any) -> Any:
    raise _refuse("a model from ToyExport bytes")


@model_type_keyword
def load_file(path: str | os.PathLike, model_type: Any = None, **options: Any) -> Any:
    raise _refuse(f"a model from '{existing_file(path)}'")


def state_from_bytes(data: Any, **options: Any) -> Any:
    raise _refuse("a model state from ToyExport bytes")


def read_state(path: str | os.PathLike, **options: Any) -> Any:
    raise _refuse(f"a model state from '{existing_file(path)}'")


def _read(path: str | os.PathLike) -> tuple[int, dict[str, Any]]:
    data = existing_file(path).read_bytes()
    if data[:4] != MAGIC or len(data) < 5:
        raise FormatError(f"'{path}': no ToyExport magic")
    try:
        return data[4], json.loads(data[5:])
    except ValueError as exc:
        raise FormatError(f"'{path}': the ToyExport record is not JSON: {exc}") from None


def inspect_file(path: str | os.PathLike) -> ModelInfo:
    _, record = _read(path)
    return ModelInfo(format=ROW.name, path=str(path), file_size=os.path.getsize(path),
                     model_type=aprender.ModelType.CUSTOM, class_key=record.get("class"),
                     metadata=record, tensors=())


def validate_file(path: str | os.PathLike, **keys: Any) -> ValidationReport:
    level, record = _read(path)
    if record.get("level") != level:
        raise FormatError(f"'{path}': the level byte ({level}) and the record ({record.get('level')}) disagree")
    return ValidationReport(str(path), ROW.name, ("ToyExport magic", "JSON record", "level byte"), False)
