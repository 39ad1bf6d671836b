"""docs/ are the spec: a reader written from them alone (tests/support/docreader.py) reads our files as aprender
does."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from docreader import read_apr, read_gguf
from zoo import CASES, Case

from aprender.codec import ModelState, to_state
from aprender.format import apr, gguf
from aprender.format.apr import _crypto as crypto
from aprender.format.quantize import dequantize, is_quantized, quantize

SIGNING_KEY = Ed25519PrivateKey.generate()
FEW = {"LinearRegression", "LogisticRegression-strings", "PCA-whiten-randomized", "MLPClassifier",
       "RandomForestClassifier", "KMeans", "MixtureOfExpertsClassifier-strings"}


@pytest.fixture
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cost is recorded in each file and read back from it by both readers.
    monkeypatch.setitem(crypto.ARGON2, "memory_cost", 64)
    monkeypatch.setitem(crypto.ARGON2, "iterations", 1)


def _state(case: Case, qtype: str | None) -> ModelState:
    state = to_state(case.make()[0], metadata={"name": case.id})
    if qtype is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a model with no quantizable weights stays as it is
            state = quantize(state, qtype)
    return state


def _assert_same(doc: tuple[dict[str, Any], dict[str, np.ndarray]], ours: ModelState) -> None:
    """Same metadata tree; same tensors, quantized ones as aprender hands them to the estimator."""
    meta, tensors = doc
    assert meta == ours.meta
    records = ours.meta.get("quantization", {}).get("tensors", {})
    decoded = dequantize(ours).tensors if is_quantized(ours) else ours.tensors
    assert sorted(tensors) == sorted(decoded)
    for name, array in tensors.items():
        expected = decoded[name]
        if name in records:  # the codec casts dequantized float32 values back to the recorded dtype
            expected = expected.astype(array.dtype)
            assert array.dtype.name == records[name]["dtype"], name
        assert (array.dtype, array.shape) == (expected.dtype, expected.shape), name
        assert np.ascontiguousarray(array).tobytes() == np.ascontiguousarray(expected).tobytes(), name


APR_OPTIONS = {
    "zstd-signed-q4_1": ({"compression": "zstd", "signing_key": SIGNING_KEY}, "q4_1"),
    "plain": ({}, None),
    "lz4-q8_0": ({"compression": "lz4"}, "q8_0"),
    "encrypted-zstd-q4_0": ({"compression": "zstd", "password": "pässword"}, "q4_0"),
}


def _grid(options: list[Any]) -> list[Any]:
    """Every model with the first option; the other options on a few models (each read costs a save)."""
    return [pytest.param(case, option, id=f"{case.id}-{option}") for option in options for case in CASES
            if option == options[0] or case.id in FEW]


@pytest.mark.parametrize(("case", "option"), _grid(list(APR_OPTIONS)))
def test_apr_files_read_from_the_docs(case: Case, option: str, tmp_path: Path, cheap_argon2: None) -> None:
    options, qtype = APR_OPTIONS[option]
    path = tmp_path / "m.apr"
    apr.write_state(_state(case, qtype), path, **options)
    doc = read_apr(path.read_bytes(), password=options.get("password"))
    _assert_same(doc, apr.read_state(path, password=options.get("password")))


@pytest.mark.parametrize(("case", "qtype"), _grid(["q8_0", None, "q4_0"]))
def test_gguf_files_read_from_the_docs(case: Case, qtype: str | None, tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    gguf.write_state(_state(case, qtype), path)
    _assert_same(read_gguf(path.read_bytes()), gguf.read_state(path))
