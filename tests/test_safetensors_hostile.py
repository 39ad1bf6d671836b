"""Malformed, truncated, tampered and hostile SafeTensors files fail cleanly."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
import safetensors.numpy as official
from safetensors import SafetensorError, deserialize
from zoo import diabetes, iris

import aprender
from aprender.exceptions import AprenderError, FormatError, UnsupportedVersion, UntrustedTypeError
from aprender.format import _io, safetensors
from aprender.linear_model import LinearRegression, LogisticRegression


@pytest.fixture(scope="module")
def valid() -> bytes:
    X, y = diabetes()
    return safetensors.dumps(LinearRegression().fit(X, y))


def _split(raw: bytes) -> tuple[dict, bytes]:
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _join(header: dict, data: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _with_meta(raw: bytes, edit) -> bytes:
    header, data = _split(raw)
    meta = json.loads(header["__metadata__"]["aprender"])
    edit(meta)
    header["__metadata__"]["aprender"] = json.dumps(meta)
    return _join(header, data)


def _load(data: bytes, tmp_path):
    """Both entry points must agree: bytes and file."""
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(data)
    errors = []
    for attempt in (lambda: safetensors.loads(data), lambda: aprender.load(path)):
        with pytest.raises(AprenderError) as info:
            attempt()
        errors.append(info.value)
    assert type(errors[0]) is type(errors[1])
    return errors[0]


def test_header_length_past_end(valid, tmp_path) -> None:
    data = struct.pack("<Q", len(valid)) + valid[8:]
    error = _load(data, tmp_path)
    assert isinstance(error, FormatError) and "runs past the end" in str(error)


def test_header_length_over_limit_is_rejected_before_reading(valid, tmp_path) -> None:
    data = struct.pack("<Q", 2**62) + valid[8:]
    error = _load(data, tmp_path)
    assert "exceeds the 100000000-byte limit" in str(error)


def test_header_not_json(valid, tmp_path) -> None:
    (n,) = struct.unpack("<Q", valid[:8])
    data = valid[:8] + b"[" + b"x" * (n - 1) + valid[8 + n :]
    error = _load(data, tmp_path)
    assert "header (bytes 8-" in str(error) and "not valid JSON" in str(error)


def test_tensor_offsets_outside_data(valid, tmp_path) -> None:
    header, data = _split(valid)
    header["coefficients"]["data_offsets"] = [len(data), len(data) + 80]
    error = _load(_join(header, data), tmp_path)
    assert "tensor 'coefficients' data_offsets" in str(error) and "outside" in str(error)


def test_tensor_size_disagrees_with_shape(valid, tmp_path) -> None:
    header, data = _split(valid)
    header["coefficients"]["shape"] = [1000]
    error = _load(_join(header, data), tmp_path)
    assert "needs 8000 bytes" in str(error)


def test_unknown_tensor_dtype(valid, tmp_path) -> None:
    header, data = _split(valid)
    header["coefficients"]["dtype"] = "F128"
    assert "unsupported dtype 'F128'" in str(_load(_join(header, data), tmp_path))


def test_missing_required_tensor(tmp_path) -> None:
    X, y = diabetes()
    state = aprender.codec.to_state(LinearRegression().fit(X, y))
    tensors = {k: v for k, v in state.tensors.items() if k != "coefficients"}
    path = tmp_path / "m.safetensors"
    official.save_file(tensors, str(path), metadata={"aprender": json.dumps(state.meta)})
    with pytest.raises(FormatError, match="missing tensor 'coefficients'"):
        aprender.load(path)


def test_extra_tensor_is_rejected(tmp_path) -> None:
    X, y = diabetes()
    state = aprender.codec.to_state(LinearRegression().fit(X, y))
    path = tmp_path / "m.safetensors"
    official.save_file({**state.tensors, "smuggled": np.zeros(3)}, str(path),
                       metadata={"aprender": json.dumps(state.meta)})
    with pytest.raises(FormatError, match="tensor 'smuggled' is not referenced"):
        aprender.load(path)


def test_metadata_not_json(valid, tmp_path) -> None:
    header, data = _split(valid)
    header["__metadata__"]["aprender"] = "{not json"
    assert "'aprender' metadata is not valid JSON" in str(_load(_join(header, data), tmp_path))


def test_unknown_class_is_untrusted(valid, tmp_path) -> None:
    def edit(meta):
        meta["model"]["class"] = "os.system"

    error = _load(_with_meta(valid, edit), tmp_path)
    assert isinstance(error, UntrustedTypeError) and "'os.system'" in str(error)


def test_future_schema_is_unsupported(valid, tmp_path) -> None:
    def edit(meta):
        meta["schema"] = 99

    assert isinstance(_load(_with_meta(valid, edit), tmp_path), UnsupportedVersion)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m["model"]["attrs"].__setitem__("predict", 1), "would shadow LinearRegression.predict"),
        (lambda m: m["model"]["attrs"].__setitem__("__class__", 1), "invalid fitted attribute name"),
        (lambda m: m["model"]["attrs"].__setitem__("n_features_in_", 3), "axis -1 must be 3"),
        (lambda m: m["model"]["attrs"].__setitem__("rank_", {"__t__": "pickle", "v": "x"}), "unknown value tag"),
        (lambda m: m["model"]["attrs"].__setitem__("rank_", {"__t__": "scalar", "dtype": "object", "v": 1}),
         "unsupported scalar dtype"),
        (lambda m: m["model"]["attrs"].__setitem__("rank_", {"__t__": "type", "v": "os.system"}), "is not allowed"),
        (lambda m: m["model"]["attrs"].__setitem__("rank_", {"__t__": "strarray", "dtype": "<U9999999", "shape": [1],
                                                              "v": ["a"]}), "wider than its contents"),
        (lambda m: m["model"]["attrs"].__setitem__("rank_", {"__t__": "objarray", "shape": [10**12], "v": []}),
         "needs 1000000000000 values"),
        (lambda m: m["model"]["params"].__setitem__("fit_intercept", "yes please"), "invalid hyperparameters"),
        (lambda m: m["model"]["params"].__setitem__("evil", 1), "invalid hyperparameters"),
        (lambda m: m["model"]["attrs"]["intercept_"].__setitem__("scalar", "pickle"), "unknown scalar kind"),
        (lambda m: m["model"]["attrs"]["coef_"].__setitem__("dtype", "float32"), "cannot be restored"),
        (lambda m: m.__setitem__("model", []), "no 'model' object"),
    ],
)
def test_hostile_metadata(valid, tmp_path, edit, message) -> None:
    error = _load(_with_meta(valid, edit), tmp_path)
    assert isinstance(error, FormatError)
    assert message in str(error)


def test_deep_nesting_is_bounded(valid, tmp_path) -> None:
    def edit(meta):
        node = 1
        for _ in range(200):
            node = [node]
        meta["model"]["attrs"]["rank_"] = node

    assert "nested deeper than" in str(_load(_with_meta(valid, edit), tmp_path))


def test_classifier_shape_checks(tmp_path) -> None:
    X, y = iris()
    raw = safetensors.dumps(LogisticRegression(max_iter=1000).fit(X, y))

    def edit(meta):
        meta["model"]["attrs"]["classes_"] = {"__t__": "strarray", "dtype": "<U1", "shape": [2], "v": ["a", "b"]}

    error = _load(_with_meta(raw, edit), tmp_path)
    assert "'coef_' has shape (3, 4); axis 0 must be 1" in str(error)


def test_every_truncation_fails_cleanly(valid, tmp_path) -> None:
    path = tmp_path / "t.safetensors"
    for length in range(len(valid)):
        with pytest.raises(FormatError):
            safetensors.loads(valid[:length])
        if length % 7 == 0:  # the file path shares the parser; sample it to stay fast
            path.write_bytes(valid[:length])
            with pytest.raises(FormatError):
                aprender.load(path)


@pytest.mark.parametrize("streamed", [False, True], ids=["in-memory", "streamed"])
def test_failed_save_leaves_existing_file_intact(streamed: bool, tmp_path, monkeypatch) -> None:
    # Small files are serialized in memory and written through write_atomic; large ones are
    # streamed by the package into a temporary of its own. A write failing half-way through
    # either leaves the old file and no temporary.
    X, y = diabetes()
    path = tmp_path / "m.safetensors"
    model = LinearRegression().fit(X, y)
    model.save_safetensors(path)
    before = path.read_bytes()

    if streamed:
        def crash(specs, filename, metadata=None):
            with open(filename, "wb") as f:
                f.write(b"partial")
            raise OSError("disk full")

        monkeypatch.setattr(safetensors, "_IN_MEMORY_BYTES", -1)
        monkeypatch.setattr(safetensors, "serialize_file", crash)
    else:
        def failing_write(fd, chunks):
            os.write(fd, bytes(memoryview(chunks[0])[:7]))
            raise OSError("disk full")

        monkeypatch.setattr(_io, "_write_all", failing_write)
    with pytest.raises(OSError, match="disk full"):
        model.save_safetensors(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]


def _gap(raw: bytes) -> bytes:
    header, data = _split(raw)
    begin, end = header["coefficients"]["data_offsets"]
    header["coefficients"]["data_offsets"] = [begin + 8, end + 8]
    return _join(header, data + bytes(8))


def _trailing(raw: bytes) -> bytes:
    header, data = _split(raw)
    return _join(header, data + b"extra")


def _overlap(raw: bytes) -> bytes:
    header, data = _split(raw)
    begin = header["singular_"]["data_offsets"][0]
    header["intercept"]["data_offsets"] = [begin, begin + 8]  # shares singular_'s first 8 bytes
    return _join(header, data)


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda raw: struct.pack("<Q", len(raw)) + raw[8:], "runs past the end"),
        (lambda raw: raw[:8] + b"]" + raw[9:], "not valid JSON"),
        (_gap, "expected"),
        (_trailing, "the data section has"),
        (_overlap, "without gaps or overlaps"),
    ],
    ids=["past-end", "bad-json", "gap", "trailing-bytes", "overlap"],
)
def test_reader_agrees_with_the_official_package(valid, corrupt, message) -> None:
    data = corrupt(valid)
    with pytest.raises(FormatError, match=message):
        safetensors.loads(data)
    with pytest.raises(SafetensorError):
        deserialize(data)


def test_valid_file_is_read_identically_by_the_official_package(valid) -> None:
    ours = safetensors.state_from_bytes(valid).tensors
    theirs = official.load(valid)
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert ours[name].dtype == theirs[name].dtype and np.array_equal(ours[name], theirs[name])


def test_scaler_without_its_fitted_mean_is_rejected(tmp_path) -> None:
    from aprender.preprocessing import StandardScaler

    raw = safetensors.dumps(StandardScaler().fit(iris()[0]))

    def edit(meta):
        del meta["model"]["attrs"]["mean_"]

    assert "missing fitted attribute 'mean_'" in str(_load(_with_meta(raw, edit), tmp_path))


@pytest.mark.parametrize("suffix", [".safetensors", ".apr"])
def test_a_file_that_shrinks_while_it_is_read_is_refused(suffix: str, tmp_path, request) -> None:
    # The size is taken before the read; a file cut short meanwhile ends the read early.
    path = tmp_path / f"m{suffix}"
    aprender.save(LinearRegression().fit(*diabetes()), path)
    request.getfixturevalue("files_seem_longer")  # after the save, which stats too
    with pytest.raises(FormatError, match="changed size while being read"):
        aprender.load(path)
