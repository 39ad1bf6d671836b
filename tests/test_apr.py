"""The .apr container: roundtrips of every zoo model, options, golden bytes, mmap, inspect.

Hostile and tampered files are in test_apr_hostile.py.
"""

from __future__ import annotations

import mmap
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from zoo import Case, assert_identical_outputs, iris

import aprender
from aprender.cluster import KMeans
from aprender.codec import ModelState, ModelType, from_state, to_state
from aprender.exceptions import ModelTypeMismatch, VersionSkewWarning
from aprender.format import Compression, ModelInfo, SaveOptions, apr
from aprender.format.apr import _crypto as crypto
from aprender.format.quantize import dequantize, quantize
from aprender.linear_model import LinearRegression
from aprender.preprocessing import StandardScaler

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "golden_linear.apr"

SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
RECIPIENT = X25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


def _small_model() -> LinearRegression:
    X = iris()[0]
    return LinearRegression().fit(X[:, :3], X[:, 3])


# -- every zoo model through every option ------------------------------------------------

#: option -> (save keyword arguments, load keyword arguments)
OPTIONS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "plain": ({}, {}),
    "mmap": ({}, {"mmap": True}),
    "zstd": ({"compression": Compression.ZSTD_DEFAULT}, {}),
    "zstd-max": ({"compression": Compression.ZSTD_MAX}, {}),
    "lz4": ({"compression": Compression.LZ4}, {}),
    "signed": ({"signing_key": SIGNING_KEY}, {"verifying_key": SIGNING_KEY.public_key()}),
    "password": ({"password": "correct horse battery staple"}, {"password": "correct horse battery staple"}),
    "recipient": ({"recipient_public_key": RECIPIENT.public_key()}, {"secret_key": RECIPIENT}),
}


@pytest.fixture
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cost is recorded in each file and read back from it, so a cheaper cost runs the
    # same code; test_password_files_use_owasp_argon2_cost covers the real one.
    monkeypatch.setitem(crypto.ARGON2, "memory_cost", 64)
    monkeypatch.setitem(crypto.ARGON2, "iterations", 1)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("apr")


@pytest.mark.parametrize("option", list(OPTIONS))
def test_roundtrip_every_model(case: Case, option: str, folder: Path, cheap_argon2: None) -> None:
    model, X = case.make()  # fitted once per process: only read here
    save_kw, load_kw = OPTIONS[option]
    if option in ("plain", "mmap"):  # the two file paths; the other options share load_from_bytes' code
        path = folder / f"{case.id}.apr"
        apr.save_file(model, path, **save_kw)
        loaded = apr.load_file(path, type(model), **load_kw)
    else:
        loaded = apr.loads(apr.dumps(model, **save_kw), type(model), **load_kw)
    assert type(loaded) is type(model)
    assert_identical_outputs(model, loaded, X)


def test_password_files_use_owasp_argon2_cost(tmp_path: Path) -> None:
    model = _small_model()
    path = tmp_path / "secret.apr"
    apr.save_encrypted(model, path, "pw")
    params = apr.inspect_file(path).metadata["encryption"]
    assert (params["kdf"], params["memory_cost"], params["iterations"], params["lanes"]) == ("argon2id", 19456, 2, 1)
    assert len(bytes.fromhex(params["salt"])) == 16
    assert np.array_equal(apr.load_encrypted(path, "pw").coef_, model.coef_)


# -- determinism, golden bytes -----------------------------------------------------------


@pytest.mark.parametrize("option", ["plain", "zstd", "zstd-max", "lz4", "signed"])
def test_unencrypted_saves_are_deterministic(option: str, tmp_path: Path) -> None:
    save_kw = OPTIONS[option][0]
    a, b = tmp_path / "a.apr", tmp_path / "b.apr"
    apr.save_file(KMeans(n_clusters=3, n_init=1, random_state=0).fit(iris()[0]), a, **save_kw)
    apr.save_file(KMeans(n_clusters=3, n_init=1, random_state=0).fit(iris()[0]), b, **save_kw)
    assert a.read_bytes() == b.read_bytes()


def test_encrypted_saves_differ_each_time(cheap_argon2: None) -> None:
    model = _small_model()
    assert apr.dumps(model, password="pw") != apr.dumps(model, password="pw")


def golden_state() -> tuple[ModelState, SaveOptions]:
    """A LinearRegression state written out by hand: fixed versions, fixed records."""
    tensors = {
        "coefficients": np.array([2.0, -1.0]),
        "intercept": np.array([0.5]),
        "singular_": np.array([1.0, 0.5]),
    }
    attrs = {
        "coef_": {"__t__": "tensor", "name": "coefficients"},
        "intercept_": {"__t__": "tensor", "name": "intercept", "scalar": "numpy"},
        "n_features_in_": 2,
        "rank_": 2,
        "singular_": {"__t__": "tensor", "name": "singular_"},
    }
    params = {"copy_X": True, "fit_intercept": True, "n_jobs": None, "positive": False, "tol": 1e-06}
    meta = {
        "schema": 1,
        "model_type": 1,
        "model": {"__t__": "estimator", "class": "aprender.linear_model.LinearRegression", "params": params,
                  "attrs": attrs},
        "versions": {"aprender": "0.1.0", "numpy": "2.0.0", "sklearn": "1.7.0"},
        "user": {},
    }
    return ModelState(tensors, meta), SaveOptions(name="golden", license="MIT")


def test_golden_bytes() -> None:
    state, options = golden_state()
    assert apr.state_to_bytes(state, options) == GOLDEN.read_bytes()


def test_golden_header_fields() -> None:
    data = GOLDEN.read_bytes()
    assert data[:4] == b"APR\x00" and data[4:6] == b"\x02\x00"
    assert int.from_bytes(data[6:8], "little") == 0  # no flags
    assert int.from_bytes(data[8:12], "little") == 3  # tensors
    assert int.from_bytes(data[12:20], "little") == 64  # metadata offset
    meta_size = int.from_bytes(data[20:24], "little")
    index_offset = int.from_bytes(data[24:32], "little")
    data_offset = int.from_bytes(data[32:40], "little")
    assert index_offset == 64 + -(-meta_size // 64) * 64
    assert data_offset % 64 == 0 and data[44:64] == bytes(20)
    assert data[64:65] == b"{" and data[64 + meta_size : index_offset] == bytes(index_offset - 64 - meta_size)
    # three float64 tensors, each on a 64-byte boundary: 16 + 48 pad, 8 + 56 pad, 16 + 48 pad
    assert len(data) == data_offset + 3 * 64 + 4
    assert data[data_offset : data_offset + 16] == np.array([2.0, -1.0]).tobytes()
    info = apr.inspect_file(GOLDEN)
    assert [(t.name, t.dtype, t.shape, t.offset) for t in info.tensors] == [
        ("coefficients", "float64", (2,), data_offset),
        ("intercept", "float64", (1,), data_offset + 64),
        ("singular_", "float64", (2,), data_offset + 128),
    ]


def test_golden_file_loads() -> None:
    state, _ = golden_state()
    loaded = apr.state_from_bytes(GOLDEN.read_bytes())
    assert loaded.meta == {**state.meta, "name": "golden", "license": "MIT"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VersionSkewWarning)  # the golden file pins old versions
        model = apr.load_file(GOLDEN, LinearRegression)
    assert model.predict([[1.0, 1.0]])[0] == 1.5


# -- options and records ----------------------------------------------------------------


def test_save_options_are_recorded(tmp_path: Path) -> None:
    options = (SaveOptions().with_name("iris-petal").with_description("petal width from the rest")
               .with_compression(Compression.ZSTD_MAX).with_license({"spdx": "MIT", "holder": "ACME"})
               .with_hyperparameters({"alpha": 0.0}).with_metrics({"r2": 0.93}).with_custom({"team": "ml"}))
    path = tmp_path / "m.apr"
    apr.save_file(_small_model(), path, options=options)
    info = apr.inspect_file(path)
    assert info.metadata["name"] == "iris-petal"
    assert info.metadata["description"] == "petal width from the rest"
    assert info.metadata["license"] == {"spdx": "MIT", "holder": "ACME"}
    assert info.metadata["metrics"] == {"r2": 0.93}
    assert (info.metadata["hyperparameters"], info.metadata["custom"]) == ({"alpha": 0.0}, {"team": "ml"})
    assert info.compressed == "zstd" and info.metadata["compression"] == {"algorithm": "zstd", "level": 19}
    assert info.created_at is None and "provenance" not in info.metadata


def test_keyword_fields_override_options() -> None:
    data = apr.dumps(_small_model(), options=SaveOptions(name="a"), name="b", compression="lz4")
    state = apr.state_from_bytes(data)
    assert state.meta["name"] == "b" and "compression" not in state.meta


def test_provenance_honours_source_date_epoch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    options = SaveOptions().with_provenance(git_commit="0123abc", dataset_sha256="ff" * 32)
    a, b = tmp_path / "a.apr", tmp_path / "b.apr"
    apr.save_file(_small_model(), a, options=options)
    apr.save_file(_small_model(), b, options=options)
    assert a.read_bytes() == b.read_bytes()
    info = apr.inspect_file(a)
    assert info.created_at == "2023-11-14T22:13:20Z"
    assert info.metadata["provenance"]["git_commit"] == "0123abc"
    assert info.metadata["provenance"]["python"] == ".".join(map(str, sys.version_info[:3]))


def test_bad_options_are_rejected() -> None:
    with pytest.raises(TypeError, match="JSON-serializable"):
        SaveOptions(metrics={"when": object()})
    with pytest.raises(ValueError, match="is not a valid compression; use one of"):
        SaveOptions().with_compression("gzip")
    with pytest.raises(TypeError, match="unexpected keyword"):
        apr.dumps(_small_model(), colour="blue")
    with pytest.raises(ValueError, match="either password= or recipient_public_key="):
        apr.dumps(_small_model(), password="pw", recipient_public_key=RECIPIENT.public_key())


def test_raw_32_byte_keys(tmp_path: Path) -> None:
    path = tmp_path / "m.apr"
    raw_public = crypto.public_key_bytes(RECIPIENT.public_key())
    apr.save_file(_small_model(), path, signing_key=bytes(range(32)), recipient_public_key=raw_public)
    loaded = apr.load_file(path, secret_key=bytes(range(1, 33)),
                      verifying_key=crypto.public_key_bytes(SIGNING_KEY.public_key()))
    assert np.array_equal(loaded.coef_, _small_model().coef_)
    with pytest.raises(ValueError, match="32 bytes"):
        apr.dumps(_small_model(), signing_key=b"short")
    with pytest.raises(FileNotFoundError, match="no such key file: 'not a key'"):
        apr.dumps(_small_model(), signing_key="not a key")
    with pytest.raises(TypeError, match="Ed25519PrivateKey, 32 raw bytes, PEM text or bytes, or the path"):
        apr.dumps(_small_model(), signing_key=42)


def test_key_files_written_by_keygen_are_accepted_everywhere(tmp_path: Path) -> None:
    from aprender.cli import main

    for name, kind in (("signer", "ed25519"), ("bob", "x25519")):
        assert main(["keygen", "--type", kind, "--output", str(tmp_path / name)]) == 0
    signed, sealed = tmp_path / "signed.apr", tmp_path / "sealed.apr"
    model = _small_model()
    apr.save_signed(model, signed, tmp_path / "signer")                       # a path to a PEM private key
    apr.save_for_recipient(model, sealed, str(tmp_path / "bob.pub"))          # a str path to a PEM public key
    for key in (tmp_path / "signer.pub", (tmp_path / "signer.pub").read_bytes(),
                (tmp_path / "signer.pub").read_text(), tmp_path / "signer"):  # a private key stands for its public half
        assert np.array_equal(apr.load_verified(signed, key).coef_, model.coef_)
    assert np.array_equal(apr.load_as_recipient(sealed, (tmp_path / "bob").read_bytes()).coef_, model.coef_)
    with pytest.raises(TypeError, match="holds an X25519 public key; this needs an Ed25519 public key"):
        apr.load_verified(signed, tmp_path / "bob.pub")


def test_model_type_mismatch_messages(tmp_path: Path) -> None:
    path = tmp_path / "lr.apr"
    apr.save_file(_small_model(), path, ModelType.LINEAR_REGRESSION)
    with pytest.raises(ModelTypeMismatch, match=r"^file contains LinearRegression, expected KMeans$"):
        apr.load_file(path, KMeans)
    with pytest.raises(ModelTypeMismatch, match=r"file contains LinearRegression \(LINEAR_REGRESSION\), "
                                                r"expected KMEANS"):
        apr.load_file(path, ModelType.KMEANS)
    with pytest.raises(ModelTypeMismatch, match="file contains LinearRegression, expected KMeans"):
        KMeans.load_apr(path)
    with pytest.raises(ModelTypeMismatch, match="expected KMEANS"):
        apr.save_file(_small_model(), path, ModelType.KMEANS)


# -- memory order, mmap ------------------------------------------------------------------


def test_fortran_order_comes_back(tmp_path: Path) -> None:
    from aprender.decomposition import PCA

    X = iris()[0]
    pca = PCA(n_components=3).fit(X)
    assert pca.components_.flags.f_contiguous and not pca.components_.flags.c_contiguous
    path = tmp_path / "pca.apr"
    apr.save_file(pca, path)
    for loaded in (apr.load_file(path), apr.load_file(path, mmap=True)):
        assert loaded.components_.flags.f_contiguous and not loaded.components_.flags.c_contiguous
        assert np.array_equal(loaded.transform(X), pca.transform(X))


def _mapped_root(array: np.ndarray) -> Any:
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array.obj if isinstance(array, memoryview) else array


def test_mmap_returns_copy_on_write_views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apr._load, "MMAP_MIN_BYTES", 0)  # map even this small file
    model = _small_model()
    path = tmp_path / "lr.apr"
    model.save_apr(path)
    before = path.read_bytes()
    mapped = LinearRegression.load_apr(path, mmap=True)
    assert mapped.coef_.flags.writeable
    assert isinstance(_mapped_root(mapped.coef_), mmap.mmap)
    assert np.array_equal(mapped.predict(iris()[0][:, :3]), model.predict(iris()[0][:, :3]))
    mapped.coef_[:] = 0.0  # a private page: the file is not written
    assert path.read_bytes() == before
    assert np.array_equal(apr.load_file(path).coef_, model.coef_)
    default = apr.load_file(path)
    assert default.coef_.flags.writeable and not isinstance(_mapped_root(default.coef_), mmap.mmap)


def test_mmap_svc_copies_only_what_predict_proba_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # libsvm.predict_proba takes these four as non-const memoryviews; the support vectors stay mapped.
    from aprender.svm import SVC, SVR

    monkeypatch.setattr(apr._load, "MMAP_MIN_BYTES", 0)
    X, y = iris()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=True) is deprecated in sklearn 1.9
        models = {"platt": SVC(probability=True, random_state=0).fit(X, y), "plain": SVC().fit(X, y),
                  "svr": SVR().fit(X, X[:, 0])}
    for name, model in models.items():
        apr.save_file(model, tmp_path / f"{name}.apr")
    platt = apr.load_file(tmp_path / "platt.apr", mmap=True)
    assert all(getattr(platt, a).flags.writeable for a in ("_dual_coef_", "_intercept_", "_probA", "_probB"))
    assert isinstance(_mapped_root(platt.support_vectors_), mmap.mmap)
    assert np.array_equal(platt.predict_proba(X), models["platt"].predict_proba(X))
    for name in ("plain", "svr"):  # no predict_proba to feed: nothing is copied
        assert isinstance(_mapped_root(apr.load_file(tmp_path / f"{name}.apr", mmap=True)._dual_coef_), mmap.mmap)


def test_mmap_of_a_small_file_reads_and_checksums_it(tmp_path: Path) -> None:
    """Mapping costs more than reading a file under MMAP_MIN_BYTES: such files are read and fully checked."""
    model = _small_model()
    path = tmp_path / "lr.apr"
    model.save_apr(path)
    assert path.stat().st_size < apr.MMAP_MIN_BYTES
    loaded = apr.load_file(path, mmap=True)
    assert loaded.coef_.flags.writeable and not isinstance(_mapped_root(loaded.coef_), mmap.mmap)
    assert np.array_equal(loaded.coef_, model.coef_)
    data = bytearray(path.read_bytes())
    data[apr.inspect_file(path).extra["data_offset"]] ^= 0x10
    path.write_bytes(data)
    from aprender.exceptions import ChecksumMismatch

    with pytest.raises(ChecksumMismatch, match="footer CRC32"):
        apr.load_file(path, mmap=True)


def test_mmap_of_large_model_reads_no_data(tmp_path: Path) -> None:
    # 40 MB of coefficients: larger than one read chunk, so the default load pipelines its CRC.
    model = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    model.coef_ = np.random.default_rng(0).standard_normal(5_000_000)
    model.n_features_in_ = model.coef_.shape[0]
    path = tmp_path / "big.apr"
    apr.save_file(model, path)
    info = apr.inspect_file(path)
    coef = next(t for t in info.tensors if t.name == "coefficients")
    mapped = apr.load_file(path, mmap=True)
    root = _mapped_root(mapped.coef_)
    assert isinstance(root, mmap.mmap) and len(root) == info.file_size
    assert mapped.coef_.ctypes.data % 64 == 0
    assert np.array_equal(mapped.coef_, model.coef_) and np.array_equal(apr.load_file(path).coef_, model.coef_)
    # a corrupted tensor byte is not noticed by mmap (it reads no data) but by the default load and validate
    data = bytearray(path.read_bytes())
    data[coef.offset + 12345] ^= 0x10
    path.write_bytes(data)
    assert apr.load_file(path, mmap=True).coef_[12345 // 8] != model.coef_[12345 // 8]
    from aprender.exceptions import ChecksumMismatch

    for check in (apr.load_file, apr.validate_file, aprender.validate):
        with pytest.raises(ChecksumMismatch, match="footer CRC32"):
            check(path)


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_mmap_refuses_compressed_and_encrypted(compression: str, tmp_path: Path, cheap_argon2: None) -> None:
    path = tmp_path / "m.apr"
    apr.save_file(_small_model(), path, compression=compression)
    with pytest.raises(ValueError, match="mmap=True needs an uncompressed, unencrypted file and this one is "
                                         "compressed"):
        apr.load_file(path, mmap=True)
    apr.save_file(_small_model(), path, password="pw")
    with pytest.raises(ValueError, match="this one is encrypted"):
        apr.load_file(path, mmap=True, password="pw")


# -- quantization -------------------------------------------------------------------------


@pytest.mark.parametrize("qtype", ["q8_0", "q4_0", "q4_1"])
def test_quantized_save_and_load(qtype: str, tmp_path: Path) -> None:
    X = iris()[0]
    km = KMeans(n_clusters=3, n_init=1, random_state=0).fit(X)
    path = tmp_path / "km.apr"
    apr.save_file(km, path, quantize=qtype, compression="lz4")
    info = apr.inspect_file(path)
    assert info.quantization == qtype and "QUANTIZED" in info.extra["flags"]
    centers = next(t for t in info.tensors if t.name == "cluster_centers_")
    # the true shape (not the padded 3 x 32 block layout) and the bytes actually stored: one block per row
    block_bytes = {"q8_0": 34, "q4_0": 18, "q4_1": 20}[qtype]
    assert (centers.dtype, centers.shape, centers.nbytes, centers.quantization) == (qtype, (3, 4), 3 * block_bytes,
                                                                                    qtype)
    assert info.n_parameters == 3 * 4 + X.shape[0]  # centers + labels_
    loaded = apr.load_file(path, KMeans)
    assert loaded.cluster_centers_.dtype == np.float64 and loaded.cluster_centers_.shape == (3, 4)
    # exactly the values of GGML's own blocks, decoded
    reference = from_state(dequantize(quantize(to_state(km), qtype))).cluster_centers_
    assert np.array_equal(loaded.cluster_centers_, reference)
    assert not np.array_equal(loaded.cluster_centers_, km.cluster_centers_)


def test_quantized_file_loads_by_mmap(tmp_path: Path) -> None:
    km = KMeans(n_clusters=3, n_init=1, random_state=0).fit(iris()[0])
    path = tmp_path / "km.apr"
    apr.save_file(km, path, quantize="q8_0")
    assert np.array_equal(apr.load_file(path, mmap=True).cluster_centers_, apr.load_file(path).cluster_centers_)
    state = apr.read_state(path)
    assert state.tensors["cluster_centers_"].dtype == np.uint8  # read_state keeps the GGML blocks


# -- inspect / validate / dispatch --------------------------------------------------------


def test_inspect_encrypted_file_without_a_key(tmp_path: Path, cheap_argon2: None) -> None:
    path = tmp_path / "secret.apr"
    apr.save_encrypted(_small_model(), path, "pw", name="secret model", compression="zstd")
    info = aprender.inspect(path)
    assert isinstance(info, ModelInfo)
    assert (info.format, info.format_version, info.model_type) == ("apr", "2.0", ModelType.LINEAR_REGRESSION)
    assert info.class_key == "aprender.linear_model.LinearRegression"
    assert info.encrypted and not info.signed and info.compressed == "zstd"
    assert info.metadata["name"] == "secret model"
    assert [(t.name, t.shape, t.offset) for t in info.tensors] == [
        ("coefficients", (3,), None), ("intercept", (1,), None), ("singular_", (3,), None)]
    assert info.file_size == path.stat().st_size
    assert info.n_parameters == 7


def test_inspect_reports_embedded_public_key(tmp_path: Path) -> None:
    path = tmp_path / "signed.apr"
    apr.save_signed(_small_model(), path, SIGNING_KEY)
    info = apr.inspect_file(path)
    assert info.signed and info.embedded_public_key == crypto.public_key_bytes(SIGNING_KEY.public_key())
    assert apr.load_verified(path).coef_.shape == (3,)  # the embedded key: integrity, not origin
    assert apr.inspect_file(GOLDEN).embedded_public_key is None


def test_validate_encrypted_and_signed(tmp_path: Path, cheap_argon2: None) -> None:
    from aprender.exceptions import DecryptionFailed, SignatureInvalid

    path = tmp_path / "m.apr"
    apr.save_file(_small_model(), path, password="pw", signing_key=SIGNING_KEY)
    report = apr.validate_file(path)  # no key: structure, CRCs and the embedded-key signature
    assert report.checks == ("header CRC32, layout, metadata and tensor index", "footer CRC32 over the whole file",
                             "Ed25519 signature (embedded key)")
    assert not report.complete and report.not_checked.startswith("encrypted data not opened: pass password=")
    assert aprender.validate(path) == report
    report = apr.validate_file(path, password="pw", verifying_key=SIGNING_KEY.public_key())
    assert report.complete and report.model
    assert report.checks[2:] == ("Ed25519 signature (key given)", "AES-256-GCM decryption",
                                 "model rebuilt through the allow-list")
    with pytest.raises(DecryptionFailed):
        apr.validate_file(path, password="wrong")
    with pytest.raises(SignatureInvalid):
        aprender.validate(path, verifying_key=Ed25519PrivateKey.generate().public_key())


def test_verify_file_returns_the_verified_key(tmp_path: Path, cheap_argon2: None) -> None:
    from aprender.exceptions import FormatError, SignatureInvalid

    path = tmp_path / "signed.apr"
    apr.save_file(_small_model(), path, signing_key=SIGNING_KEY, password="pw")  # no password needed to verify
    raw_key = crypto.public_key_bytes(SIGNING_KEY.public_key())
    assert apr.verify_file(path) == raw_key == apr.inspect_file(path).embedded_public_key
    assert apr.verify_file(path, SIGNING_KEY.public_key()) == raw_key
    assert apr.verify_file(path, raw_key) == raw_key
    with pytest.raises(SignatureInvalid, match="the file embeds a different public key"):
        apr.verify_file(path, Ed25519PrivateKey.generate().public_key())
    data = bytearray(path.read_bytes())
    data[70] ^= 1  # a metadata byte
    path.write_bytes(data)
    with pytest.raises(SignatureInvalid, match="the Ed25519 signature does not verify;"):
        apr.verify_file(path)
    apr.save_file(_small_model(), path)
    with pytest.raises(SignatureInvalid, match="the file is not signed"):
        apr.verify_file(path)
    path.write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(FormatError, match=r"not an \.apr file"):
        apr.verify_file(path)
    with pytest.raises(FileNotFoundError):
        apr.verify_file(tmp_path / "absent.apr")


def test_validate_raw_tensor_files_without_a_model(tmp_path: Path, cheap_argon2: None) -> None:
    # Custom files (apr import, write_state of bare tensors) have no estimator to rebuild
    from aprender.exceptions import ChecksumMismatch, DecryptionFailed, FormatError, SignatureInvalid

    raw = ModelState({"w": np.arange(6.0).reshape(2, 3), "b": np.ones(2, np.float32)},
                     {"schema": 1, "model_type": int(ModelType.CUSTOM), "source": {"format": "safetensors"}})
    path = tmp_path / "raw.apr"
    apr.write_state(raw, path, compression="zstd", signing_key=SIGNING_KEY, password="pw")
    apr.validate_file(path)  # up to the ciphertext, and the embedded-key signature
    apr.validate_file(path, password="pw", verifying_key=SIGNING_KEY.public_key())  # decrypted, decompressed
    aprender.validate(path, password="pw")
    with pytest.raises(DecryptionFailed):
        apr.validate_file(path, password="wrong")
    with pytest.raises(SignatureInvalid):
        apr.validate_file(path, password="pw", verifying_key=Ed25519PrivateKey.generate().public_key())
    with pytest.raises(FormatError, match="has no 'model' object"):  # valid as a file, but no model to load
        apr.load_file(path, password="pw")
    plain = tmp_path / "plain.apr"
    apr.write_state(raw, plain)
    apr.validate_file(plain)
    data = bytearray(plain.read_bytes())
    data[apr.inspect_file(plain).tensors[0].offset] ^= 1
    plain.write_bytes(data)
    with pytest.raises(ChecksumMismatch, match="footer CRC32"):
        apr.validate_file(plain)
    # a model node that is there but broken is still rebuilt, and fails
    apr.write_state(ModelState(raw.tensors, {**raw.meta, "model": "LinearRegression"}), plain)
    with pytest.raises(FormatError):
        apr.validate_file(plain)


def test_generic_api_dispatches_to_apr_and_safetensors(tmp_path: Path) -> None:
    model = StandardScaler().fit(iris()[0])
    for suffix in (".apr", ".safetensors"):
        path = tmp_path / f"scaler{suffix}"
        aprender.save(model, path)
        aprender.validate(path)
        info = aprender.inspect(path)
        assert info.format == suffix[1:] and info.model_type == ModelType.SCALER
        assert info.class_key == "aprender.preprocessing.StandardScaler"
        assert {t.name for t in info.tensors} == set(to_state(model).tensors)
        assert np.array_equal(aprender.load(path).mean_, model.mean_)
    assert aprender.load(tmp_path / "scaler.apr", mmap=True).mean_.flags.writeable is True


def test_safetensors_inspect_of_a_foreign_file(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    path = tmp_path / "w.safetensors"
    save_file({"b": np.ones(3, np.float16), "a": np.zeros((2, 2), np.int32)}, path, metadata={"k": "v"})
    info = aprender.inspect(path)
    assert info.model_type is None and info.metadata == {} and info.extra["other_metadata"] == {"k": "v"}
    assert [(t.name, t.dtype, t.shape, t.nbytes) for t in info.tensors] == [
        ("a", "int32", (2, 2), 16), ("b", "float16", (3,), 6)]
    assert path.read_bytes()[info.tensors[1].offset : info.tensors[1].offset + 6] == np.ones(3, np.float16).tobytes()


def test_mixin_options_and_keys(tmp_path: Path) -> None:
    model = _small_model()
    path = tmp_path / "m.apr"
    model.save_apr(path, compression="lz4", name="mixin", signing_key=SIGNING_KEY)
    assert apr.inspect_file(path).metadata["name"] == "mixin"
    loaded = LinearRegression.load_apr(path, verifying_key=SIGNING_KEY.public_key())
    assert np.array_equal(loaded.coef_, model.coef_)


if __name__ == "__main__":  # regenerate the golden file: python tests/test_apr.py
    DATA.mkdir(exist_ok=True)
    state, options = golden_state()
    GOLDEN.write_bytes(apr.state_to_bytes(state, options))
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes)")


def test_the_fast_crc_is_zlibs_crc32() -> None:
    """ISA-L's CRC32 (the fast extra) and zlib's give the same checksums: files do not depend on it."""
    import zlib

    from aprender.format._crc import crc32

    data = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8)
    for start in (0, 0xDEADBEEF):
        assert crc32(memoryview(data), start) == zlib.crc32(memoryview(data), start)
        assert crc32(memoryview(data)[7:], start) == zlib.crc32(memoryview(data)[7:], start)
