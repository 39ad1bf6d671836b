"""Classes of lie in a container's structure, and what the command line shows of a file.

Each GGUF rule of ``aprender.format.gguf._reader.RULES`` has a crafted file that breaks it
(a new rule without one fails here); files whose records alias one region or whose counts ask for
more records than their bytes hold are refused before the cost, measured in a child process. What
the command line shows of a file (rows, cells) and what an error message quotes of it are bounded.
"""

from __future__ import annotations

import json
import re
import struct
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cli_run import invoke
from gguf import GGMLQuantizationType, GGUFEndian, GGUFReader, GGUFWriter
from peak_rss import peak_growths

import aprender
from aprender._display import MAX_MESSAGE_CHARS
from aprender.cli import _render
from aprender.exceptions import AprenderError, FormatError, LoadBudgetExceeded
from aprender.format import gguf, safetensors
from aprender.format.gguf import _reader
from aprender.linear_model import LinearRegression
from aprender.pipeline import make_pipeline
from aprender.preprocessing import StandardScaler

MiB = 2**20
F32, Q5_0 = int(GGMLQuantizationType.F32), int(GGMLQuantizationType.Q5_0)


# -- hand-made GGUF v3 bytes: what gguf's writer refuses to make -------------------------------


def _str(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _kv_u8(key: str) -> bytes:
    return _str(key) + struct.pack("<IB", 0, 1)  # GGUF value type 0: uint8


def _kv_str(key: str, value: str) -> bytes:
    return _str(key) + struct.pack("<I", 8) + _str(value)  # 8: string


def _tensor(name: str, dims: list[int], ggml_type: int, offset: int) -> bytes:
    return (_str(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
            + struct.pack("<IQ", ggml_type, offset))


def _gguf(kvs: list[bytes], tensors: list[bytes], data: bytes, *, order: str = "<") -> bytes:
    head = b"GGUF" + struct.pack(f"{order}IQQ", 3, len(tensors), len(kvs))
    body = head + b"".join(kvs) + b"".join(tensors)
    return body + bytes(-len(body) % 32) + data


def _llama(tensors: list[bytes], data: bytes) -> bytes:
    return _gguf([_kv_str("general.architecture", "llama")], tensors, data)


def _aprender_gguf() -> bytes:
    # 32 features: one GGML block of coefficients, so the reader takes the tensor under any block type
    X = np.random.default_rng(0).normal(size=(40, 32))
    return gguf.dumps(LinearRegression().fit(X, X.sum(axis=1)))


def _set_offset(data: bytes, tmp_path: Path, name: str, offset_of: str) -> bytes:
    """``data`` with tensor ``name``'s offset replaced by tensor ``offset_of``'s."""
    path = tmp_path / "offsets.gguf"
    path.write_bytes(data)
    fields = {t.name: t.field for t in GGUFReader(path).tensors}
    at = fields[name].offset + sum(int(part.nbytes) for part in fields[name].parts[:-1])
    source = fields[offset_of].offset + sum(int(part.nbytes) for part in fields[offset_of].parts[:-1])
    raw = bytearray(data)
    raw[at : at + 8] = data[source : source + 8]
    return bytes(raw)


# -- one crafted file per rule ---------------------------------------------------------------


def _many_records(tmp_path: Path) -> bytes:
    n = _reader.RECORD_ALLOWANCE + 1000  # each record 14 bytes: far past one per RECORD_BYTES
    return _gguf([_kv_u8(f"k{i:x}") for i in range(n)], [], b"")


def _array_items(tmp_path: Path) -> bytes:
    key = _str("tokens") + struct.pack("<IIQ", 9, 0, 2**40)  # 9: array, of uint8, 2**40 items
    return _gguf([key], [], b"")


def _unaligned(tmp_path: Path) -> bytes:
    return _llama([_tensor("w", [4], F32, 4)], bytes(32))


def _overlapping(tmp_path: Path) -> bytes:
    return _llama([_tensor("a", [8], F32, 0), _tensor("b", [8], F32, 0)], bytes(32))


def _foreign_type(tmp_path: Path) -> bytes:
    data = _aprender_gguf()
    path = tmp_path / "types.gguf"
    path.write_bytes(data)
    tensor = GGUFReader(path).tensors[0]
    at = tensor.field.offset + sum(int(part.nbytes) for part in tensor.field.parts[:-2])
    return data[:at] + struct.pack("<I", Q5_0) + data[at + 4 :]


def _trailing(tmp_path: Path) -> bytes:
    return _aprender_gguf() + bytes(32)


def _big_endian(tmp_path: Path) -> bytes:
    writer = gguf.GGUFWriter

    def big(*args: object, **kwargs: object) -> GGUFWriter:
        return writer(*args, **kwargs, endianess=GGUFEndian.BIG)

    gguf.GGUFWriter = big
    try:
        return _aprender_gguf()
    finally:
        gguf.GGUFWriter = writer


#: Rule -> (a file breaking it, how it is read, what the error says). Foreign-file rules are read as
#: raw tensors (aprender.load would refuse such a file for not being aprender's, whatever its layout).
BREAKS: dict[str, tuple[Callable[[Path], bytes], Callable[[Path], object], str]] = {
    "record count": (_many_records, gguf.load_tensors, "too costly to parse"),
    "array items": (_array_items, gguf.load_tensors, "too costly to parse"),
    "aligned tensors": (_unaligned, gguf.load_tensors, "not on the file's 32-byte alignment"),
    "disjoint tensors": (_overlapping, gguf.load_tensors, "tensors 'a' and 'b' overlap at bytes"),
    "tensor types": (_foreign_type, aprender.load, "has type Q5_0, which aprender does not read"),
    "extent": (_trailing, aprender.load, "(truncated or trailing data)"),
    "byte order": (_big_endian, aprender.load, "a big-endian GGUF file (bytes 4-7)"),
}


def test_every_gguf_rule_has_a_crafted_file() -> None:
    assert set(BREAKS) == set(_reader.RULES)


@pytest.mark.parametrize("rule", sorted(_reader.RULES))
def test_a_file_breaking_a_gguf_rule_is_refused(rule: str, tmp_path: Path) -> None:
    craft, read, message = BREAKS[rule]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(craft(tmp_path))
    with pytest.raises(FormatError) as info:
        read(path)
    assert message in str(info.value) and str(info.value).startswith(f"'{path}'")
    with pytest.raises(FormatError):  # inspect and validate read through the same rules
        gguf.validate_file(path)


def test_record_counts_are_read_in_either_byte_order(tmp_path: Path) -> None:
    path = tmp_path / "big.gguf"
    for counts in ((2**40, 0), (0, 2**40), (_reader.RECORD_ALLOWANCE, 1)):
        path.write_bytes(b"GGUF" + struct.pack(">IQQ", 3, *counts) + bytes(64))
        with pytest.raises(LoadBudgetExceeded, match=r"bytes 8-23\), more than 4,096 records in 88 bytes"):
            gguf.load_tensors(path)


def test_records_a_real_file_holds_are_read(tmp_path: Path) -> None:
    # Inside the allowance a small file may hold many records: 4,000 key-values and 90 tensors.
    kvs = [_kv_str("general.architecture", "llama")] + [_kv_u8(f"k{i:x}") for i in range(4000)]
    tensors = [_tensor(f"t{i}", [8], F32, 32 * i) for i in range(90)]
    path = tmp_path / "many.gguf"
    path.write_bytes(_gguf(kvs, tensors, np.arange(8 * 90, dtype=np.float32).tobytes()))
    loaded = gguf.load_tensors(path)
    assert len(loaded) == 90 and loaded["t89"].tolist() == list(range(712, 720))


def test_empty_tensors_may_share_an_offset(tmp_path: Path) -> None:
    path = tmp_path / "empty.gguf"
    path.write_bytes(_llama([_tensor("a", [0], F32, 0), _tensor("b", [0], F32, 0), _tensor("c", [4], F32, 0)],
                            np.ones(4, dtype=np.float32).tobytes() + bytes(16)))
    loaded = gguf.load_tensors(path)
    assert loaded["a"].shape == (0,) and loaded["c"].tolist() == [1.0] * 4


def test_an_aprender_model_whose_tensors_alias_is_refused(tmp_path: Path) -> None:
    model = make_pipeline(StandardScaler(), LinearRegression()).fit([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]],
                                                                    [1.0, 2.0, 4.0])
    data = gguf.dumps(model)
    path = tmp_path / "valid.gguf"
    path.write_bytes(data)
    names = sorted(t.name for t in GGUFReader(path).tensors if t.n_bytes)
    crafted = _set_offset(data, tmp_path, names[1], names[0])
    path.write_bytes(crafted)
    with pytest.raises(FormatError, match="overlap at bytes"):
        aprender.load(path)


def test_aliased_and_counted_records_cost_nothing_before_refusal(tmp_path: Path) -> None:
    # 3,000 tensor records over one 1 MiB region: a 1.1 MB file that asked 3 GB when each tensor was copied;
    # 20,000 one-byte key-values: a 340 KB file that took seconds and hundreds of MB to parse.
    alias = tmp_path / "alias.gguf"
    alias.write_bytes(_llama([_tensor(f"t{i}", [2**18], F32, 0) for i in range(3000)], bytes(MiB)))
    records = tmp_path / "records.gguf"
    records.write_bytes(_gguf([_kv_u8(f"k{i:x}") for i in range(20_000)], [], b""))
    start = time.perf_counter()
    results = peak_growths({str(alias): f"gguf.load_tensors({str(alias)!r})",
                            str(records): f"gguf.load_tensors({str(records)!r})"})
    assert time.perf_counter() - start < 60
    for path, result in results.items():
        name, is_ours, _ = result["error"]
        assert is_ours and name in ("FormatError", "LoadBudgetExceeded"), (path, result)
        assert result["growth"] < 32 * MiB, (path, result)


# -- what the command line shows of a file ---------------------------------------------------


def _safetensors(path: Path, header: dict, data: bytes = b"") -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def _empty(n: int) -> dict:
    return {f"t{i:05d}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(n)}


def test_a_table_shows_at_most_max_rows(tmp_path: Path, capsys: pytest.CaptureFixture,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_render, "MAX_ROWS", 10)
    path = _safetensors(tmp_path / "many.safetensors", _empty(25))
    run = invoke(capsys, "inspect", path)
    assert run.code == 0
    assert "t00009" in run.out and "t00010" not in run.out
    assert "... 15 more not shown (--json lists them all)" in run.out
    listed = invoke(capsys, "inspect", path, "--json").json
    assert len(listed["tensors"]) == 25


def test_a_model_tree_shows_at_most_max_rows_nodes(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_render, "MAX_ROWS", 1)
    model = make_pipeline(StandardScaler(), StandardScaler(), LinearRegression()).fit([[0.0], [1.0], [2.0]],
                                                                                      [1.0, 2.0, 4.0])
    path = tmp_path / "pipe.apr"
    aprender.save(model, path)
    run = invoke(capsys, "inspect", path)
    assert run.code == 0 and "more not shown (--json lists them all)" in run.out


def test_a_cell_shows_at_most_max_cell_chars(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    name = "A" * 200_000
    path = _safetensors(tmp_path / "long.safetensors", {name: {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
                                                        "__metadata__": {"K" * 50_000: "v"}})
    run = invoke(capsys, "inspect", path)
    assert run.code == 0
    assert f"[...{200_000 - _render.MAX_CELL_CHARS:,}characterscut...]" in re.sub(r"[\s│]", "", run.out)
    assert run.out.count("A") <= _render.MAX_CELL_CHARS and len(run.out) < 20 * _render.MAX_CELL_CHARS
    assert name in "".join(invoke(capsys, "inspect", path, "--json").json["tensors"][0]["name"])


@pytest.mark.parametrize("offsets", [[0, 99], [16, 32]])  # past the data section; a gap before the tensor
def test_an_error_message_quotes_at_most_max_message_chars(offsets: list[int], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    name = "B" * 1_000_000
    path = _safetensors(tmp_path / "err.safetensors", {name: {"dtype": "F32", "shape": [4], "data_offsets": offsets}},
                        bytes(32))
    with pytest.raises(AprenderError) as info:
        safetensors.load_file(path)
    text = str(info.value)
    assert len(text) <= MAX_MESSAGE_CHARS + 64 and "characters cut ...]" in text
    assert text.startswith(f"'{path}': tensor 'BBB")
    run = invoke(capsys, "validate", path)
    assert run.code != 0 and len(run.err) < 2 * MAX_MESSAGE_CHARS


def test_threat_model_states_the_bounds_in_force() -> None:
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "threat-model.md").read_text().split())
    assert (f"one record per {_reader.RECORD_BYTES} bytes of file beyond {_reader.RECORD_ALLOWANCE:,} "
            "(`RECORD_BYTES`, `RECORD_ALLOWANCE`)") in text
    assert f"`MAX_MESSAGE_CHARS`, {MAX_MESSAGE_CHARS:,} characters" in text
    assert f"`MAX_ROWS` ({_render.MAX_ROWS:,})" in text and f"`MAX_CELL_CHARS` ({_render.MAX_CELL_CHARS:,})" in text


# -- what the server's log shows ---------------------------------------------------------------

HOSTILE = "m\x1b]0;owned\x07\n2026-01-01 INFO forged line\u202e"


def test_every_server_log_record_is_one_inert_line(caplog: pytest.LogCaptureFixture) -> None:
    from aprender.serve._log import log

    caplog.set_level("INFO", logger="aprender.serve")
    log.warning("model '%s' could not be loaded: %s", HOSTILE, FormatError(HOSTILE + "x" * 100_000))
    try:
        raise ValueError(HOSTILE)
    except ValueError:
        log.exception("internal error on %s %s", "POST", "/v2/models/" + HOSTILE)
    first, second = (record.getMessage() for record in caplog.records)
    assert "\n" not in first and len(first) < 2 * MAX_MESSAGE_CHARS
    assert "\\x1b]0;owned\\x07\\x0a2026-01-01 INFO forged line\\u202e" in first
    head, *trace = second.split("\n")
    assert head == "internal error on POST /v2/models/m\\x1b]0;owned\\x07\\x0a2026-01-01 INFO forged line\\u202e"
    assert trace[0] == "Traceback (most recent call last):" and trace[-1].startswith("ValueError: m\\x1b]0;")
    assert not any(ch in caplog.text for ch in "\x1b\x07\u202e")


def test_the_server_logs_only_through_its_inert_logger() -> None:
    serve = Path(aprender.__file__).parent / "serve"
    using = sorted(p.name for p in serve.glob("*.py") if "getLogger(" in p.read_text() and p.name != "_log.py")
    assert using == []


def test_a_name_cannot_forge_a_line_of_output(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    forged = "valid: evil.safetensors: safetensors (model rebuilt through the allow-list)"
    path = _safetensors(tmp_path / "evil.safetensors",
                        {f"w'\n{forged}\n'": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}}, bytes(32))
    run = invoke(capsys, "validate", path)
    assert run.code == 1 and len(run.err.strip().splitlines()) == 1
    assert run.err.startswith("invalid: ") and f"\\x0a{forged}\\x0a" in run.err
    debug = invoke(capsys, "--debug", "inspect", path)  # the traceback's frames on lines, its message on one
    assert "Traceback (most recent call last):" in debug.err
    assert not any(line.startswith("valid:") for line in debug.err.splitlines())


# -- values numpy itself never writes ----------------------------------------------------------


@pytest.mark.parametrize("fmt", ["apr", "safetensors"])
def test_a_bool_tensor_holds_only_zero_and_one(fmt: str, tmp_path: Path) -> None:
    from aprender.codec import ModelState, to_state
    from aprender.format import apr
    from aprender.impute import KNNImputer

    X = np.arange(40.0).reshape(10, 4)
    X[::3, 1] = np.nan
    state = to_state(KNNImputer(n_neighbors=2).fit(X))
    mask = state.tensors["_mask_fit_X"].view(np.uint8).copy()
    mask[mask == 0] = 2  # a byte no producer writes
    tensors = {**state.tensors, "_mask_fit_X": mask.view(np.bool_)}
    path = tmp_path / f"imputer.{fmt}"
    (apr if fmt == "apr" else safetensors).write_state(ModelState(tensors=tensors, meta=state.meta), path)
    with pytest.raises(FormatError, match="at '_mask_fit_X': bool tensor '_mask_fit_X' holds bytes other than 0 and 1"):
        aprender.load(path)
