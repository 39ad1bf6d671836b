"""What a crafted file can cost a load, and what a load promises afterwards.

- A small file cannot make a load allocate much more than its size: a compressed .apr
  data section expands at most ``MAX_DECOMPRESSED_RATIO`` times (plus 32 MiB) unless the
  caller opts in; SafeTensors and GGUF claims are bounded by the file.
- A load that checked a signature returns arrays later writes to the file cannot change.
- ``partial_fit`` of a memory-mapped model fails with an aprender error, not NumPy's.
- JSON nested arbitrarily deep in any format's metadata is a FormatError, never a
  RecursionError, and error messages never repr a nested value.

Peak memory is measured in a subprocess (``VmHWM``), never by timing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zstandard
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from peak_rss import peak_growths

import aprender
from aprender.codec import ModelState, canonical_json, parse_json, to_state
from aprender.codec import _state as codec_state
from aprender.codec._nodes import MAX_JSON_DEPTH, preview
from aprender.exceptions import FormatError, ReadOnlyModelError
from aprender.format import apr, gguf, safetensors
from aprender.format.apr import _load as apr_load
from aprender.format.apr import _write as apr_write
from aprender.format.apr._layout import Flags, Header, IndexEntry, align, pack_index
from aprender.linear_model import LinearRegression, SGDClassifier
from aprender.naive_bayes import MultinomialNB
from aprender.neural_network import MLPClassifier

SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
ROOT = Path(__file__).resolve().parents[1]
X = np.abs(np.random.default_rng(0).normal(size=(40, 3)))
Y = np.arange(40) % 2


def line(slope: float) -> LinearRegression:
    return LinearRegression().fit([[0.0], [1.0]], [1.0, 1.0 + slope])


def craft_apr(meta: dict, entries: list[IndexEntry], stored: bytes, flags: Flags) -> bytes:
    """An .apr file with valid CRCs from arbitrary pieces (as a forger builds one)."""
    import zlib

    meta_bytes = json.dumps(meta).encode()
    index = pack_index(entries)
    index_offset = 64 + align(len(meta_bytes))
    header = Header(flags, len(entries), len(meta_bytes), index_offset, index_offset + len(index))
    body = header.pack() + meta_bytes + bytes(align(len(meta_bytes)) - len(meta_bytes)) + index + stored
    return body + zlib.crc32(body).to_bytes(4, "little")


# -- decompression is bounded by default ---------------------------------------------------


def zstd_bomb(size: int) -> bytes:
    """A .apr whose index claims ``size`` bytes of float64, stored as one real zstd frame of zeros (RLE blocks)."""
    compressor = zstandard.ZstdCompressor(level=1).compressobj(size=size)
    chunk = bytes(1 << 22)
    frame = b"".join([*(compressor.compress(chunk) for _ in range(size // len(chunk))), compressor.flush()])
    meta = {**to_state(line(2.0)).meta, "compression": {"algorithm": "zstd", "level": 1}}
    return craft_apr(meta, [IndexEntry("coefficients", 3, (size // 8,), 0, size)], frame, Flags.ZSTD)


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bomb") / "bomb.apr"
    path.write_bytes(zstd_bomb(1 << 30))  # 1 GiB of zeros in about 33 KB
    return path


def test_the_bomb_is_a_real_zstd_frame_within_what_zstd_can_hold(bomb: Path) -> None:
    data = bomb.read_bytes()
    stored = data[apr.inspect_file(bomb).extra["data_offset"] : -4]
    assert len(data) < 40_000
    assert zstandard.get_frame_parameters(stored).content_size == 1 << 30
    assert len(stored) * 32768 > (1 << 30)  # so the format's own bound does not refuse it: the default cap must


def test_an_encrypted_bomb_is_refused_before_the_key_is_derived(monkeypatch: pytest.MonkeyPatch) -> None:
    from aprender.format.apr import _crypto

    monkeypatch.setitem(_crypto.ARGON2, "memory_cost", 64)
    monkeypatch.setitem(_crypto.ARGON2, "iterations", 1)
    data = apr.state_to_bytes(ModelState({"zeros": np.zeros(6 << 20)}, {}), compression="zstd", password="pw")
    with pytest.raises(FormatError, match="more than a load expands by default"):
        apr.state_from_bytes(data, password="wrong")  # not DecryptionFailed: refused first
    assert apr.state_from_bytes(data, password="pw", max_decompressed_ratio=None).tensors["zeros"].any() == False  # noqa: E712


@pytest.mark.parametrize("compression", ["zstd", "zstd-max"])
def test_a_trusted_file_past_the_cap_loads_with_the_opt_in(compression: str, tmp_path: Path) -> None:
    path = tmp_path / "zeros.apr"
    apr.write_state(ModelState({"zeros": np.zeros(6 << 20)}, {}), path, compression=compression)  # 48 MiB of zeros
    with pytest.raises(FormatError, match="more than a load expands by default"):
        apr.read_state(path)
    for ratio in (None, 1e6):
        assert apr.read_state(path, max_decompressed_ratio=ratio).tensors["zeros"].shape == (6 << 20,)
    with pytest.raises(FormatError, match=r"1000x the compressed bytes"):
        apr.read_state(path, max_decompressed_ratio=1000)


def test_compressible_models_load_under_the_default_cap() -> None:
    # 24 MB of zeros (ratio near 20000): the 32 MiB allowance takes any model of that size
    from aprender.preprocessing import StandardScaler

    scaler = StandardScaler().fit(np.zeros((2, 1_000_000)))
    loaded = apr.loads(apr.dumps(scaler, compression="zstd-max"))
    assert np.array_equal(loaded.scale_, scaler.scale_)


def test_cli_allow_large(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from aprender.cli import main

    path = tmp_path / "zeros.apr"
    apr.write_state(ModelState({"zeros": np.zeros(6 << 20)}, {}), path, compression="zstd")
    assert main(["validate", str(path)]) == 1
    assert "(CLI: --allow-large)" in capsys.readouterr().err
    assert main(["validate", str(path), "--allow-large"]) == 0


@pytest.mark.parametrize("bad", [0, -1, "10", True, float("nan")])
def test_the_ratio_option_is_checked(bad: Any) -> None:
    data = apr.dumps(line(2.0))
    with pytest.raises(ValueError, match="max_decompressed_ratio must be a positive number or None"):
        apr.loads(data, max_decompressed_ratio=bad)


def safetensors_claim(path: Path) -> Path:
    """A SafeTensors file whose header claims 2 GiB for a tensor of 8 stored bytes."""
    raw = safetensors.dumps(line(2.0))
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    header["coefficients"].update(shape=[1 << 28], data_offsets=[0, 1 << 31])
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + n :])
    return path


def gguf_claim(path: Path) -> Path:
    """A GGUF file whose tensor table claims 2 GiB of float64 for one tensor."""
    from gguf import GGUFReader

    gguf.save_file(line(2.0), path)
    tensor = next(t for t in GGUFReader(path).tensors if t.name == "coefficients")
    raw = bytearray(path.read_bytes())
    dims = tensor.field.offset + 8 + len(tensor.name) + 4  # name length, name, n_dims, then the dimensions
    raw[dims : dims + 8] = (1 << 28).to_bytes(8, "little")
    path.write_bytes(raw)
    return path


def test_what_a_small_file_claims_is_never_allocated(bomb: Path, tmp_path: Path) -> None:
    # one interpreter for every load: each is measured by how far it raises the peak RSS
    loads = {f"{bomb}?{i}": load.replace("path", repr(str(bomb))) for i, load in enumerate(
        ["apr.load(path)", "aprender.load(path)", "apr.read_state(path)", "aprender.validate(path)",
         "apr.load_from_bytes(open(path, 'rb').read())", "apr.load(path, verifying_key=None, password='x')"])}
    for claim in (safetensors_claim(tmp_path / "claim.safetensors"), gguf_claim(tmp_path / "claim.gguf")):
        loads[str(claim)] = f"aprender.load({str(claim)!r})"
        loads[f"{claim}?validate"] = f"aprender.validate({str(claim)!r})"
    results = peak_growths(loads)
    for key, result in results.items():
        name, ours, message = result["error"]
        assert (name, ours) == ("FormatError", True), (key, result)
        assert result["growth"] < 16 << 20, (key, result)  # each claimed 1 or 2 GiB
        if key.startswith(str(bomb)):
            assert "more than a load expands by default (256x the compressed bytes + 32 MiB)" in message
            assert "max_decompressed_ratio=None" in message


# -- verified means verified ----------------------------------------------------------------


@pytest.fixture
def tiny_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """Map files of every size (small files are read instead by default)."""
    monkeypatch.setattr(apr_load, "MMAP_MIN_BYTES", 0)


def overwrite_in_place(path: Path, data: bytes) -> None:
    with open(path, "r+b") as f:  # the same inode: a mapping of it sees the new bytes
        f.write(data)


@pytest.mark.parametrize("verified", ["verifying_key", "embedded key"])
def test_a_signature_checked_mmap_load_does_not_follow_later_writes(verified: str, tmp_path: Path,
                                                                    tiny_map: None) -> None:
    path = tmp_path / "signed.apr"
    apr.save_signed(line(2.0), path, SIGNING_KEY)
    other = apr.dumps(line(-7.0), signing_key=SIGNING_KEY)
    assert len(other) == path.stat().st_size
    keys = {"verifying_key": SIGNING_KEY.public_key()} if verified == "verifying_key" else {}
    model = apr.load_file(path, mmap=True, **keys)
    overwrite_in_place(path, other)
    assert model.predict([[1.0]]) == pytest.approx([3.0])
    assert apr.load_file(path, mmap=True, **keys).predict([[1.0]]) == pytest.approx([-6.0])  # the new file


def test_an_unsigned_mmap_load_follows_later_writes(tmp_path: Path, tiny_map: None) -> None:
    # what mmap=True promises and does not (docs/threat-model.md): the arrays are the file's pages
    path = tmp_path / "plain.apr"
    apr.save_file(line(2.0), path)
    model = apr.load_file(path, mmap=True)
    overwrite_in_place(path, apr.dumps(line(-7.0)))
    assert model.predict([[1.0]]) == pytest.approx([-6.0])


def test_served_signed_models_are_checked_against_the_scanned_key_at_load(tmp_path: Path) -> None:
    from aprender.serve import Policy, scan
    from aprender.serve._models import Limits, RepositoryError, load_version

    path = tmp_path / "m" / "1" / "model.apr"
    path.parent.mkdir(parents=True)
    apr.save_signed(line(2.0), path, SIGNING_KEY)
    trusted = SIGNING_KEY.public_key().public_bytes_raw()
    policy = Policy(True, (trusted,))
    version = scan([tmp_path], policy)["m"][1]
    assert (version.signature, version.mmap) == ("trusted", False)
    loaded = load_version(version, Limits(), policy)
    overwrite_in_place(path, apr.dumps(line(-7.0), signing_key=SIGNING_KEY))
    assert loaded.estimator.predict([[1.0]]) == pytest.approx([3.0])
    forger = Ed25519PrivateKey.generate()
    replacement = tmp_path / "new.apr"
    apr.save_signed(line(-7.0), replacement, forger)
    os.replace(replacement, path)  # swapped after the scan: the load must not take the forger's key
    with pytest.raises(RepositoryError, match="which is not a --trusted-key"):
        load_version(version, Limits(), policy)


# -- training a mapped model ----------------------------------------------------------------

_TRAINERS = {
    "MLPClassifier": lambda: MLPClassifier(max_iter=5, random_state=0),
    "MultinomialNB": MultinomialNB,
    "SGDClassifier": lambda: SGDClassifier(loss="log_loss", random_state=0),
}


@pytest.mark.parametrize("make", list(_TRAINERS.values()), ids=list(_TRAINERS))
def test_partial_fit_of_a_mapped_model_matches_a_plain_load_and_leaves_the_file(make: Any, tmp_path: Path,
                                                                                tiny_map: None) -> None:
    """A private map: partial_fit writes to this process's copies of the pages, bit for bit as after a plain load."""
    import hashlib

    path = tmp_path / "model.apr"
    apr.save_file(make().fit(X, Y), path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    mapped, plain = apr.load_file(path, mmap=True), apr.load_file(path)
    for model in (mapped, plain):
        model.partial_fit(X, Y)
        model.partial_fit(X[::-1], Y[::-1])
    assert np.array_equal(mapped.predict_proba(X), plain.predict_proba(X))
    assert not np.array_equal(mapped.predict_proba(X), apr.load_file(path).predict_proba(X))  # it did train
    mapped.set_params(**{name: mapped.get_params()[name] for name in ("alpha",)}).fit(X[::-1], Y[::-1])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("make", [_TRAINERS["MLPClassifier"], MultinomialNB], ids=["MLPClassifier", "MultinomialNB"])
def test_partial_fit_into_a_read_only_map_is_an_aprender_error(make: Any, tmp_path: Path, tiny_map: None,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A system that refuses a private writable map (a sealed memfd on an old kernel) gets a read-only one."""
    import mmap

    from aprender.format.apr import _read as apr_read

    real = mmap.mmap

    def no_private_maps(fileno: int, length: int, access: int = mmap.ACCESS_WRITE) -> mmap.mmap:
        if access == mmap.ACCESS_COPY:
            raise PermissionError("private writable maps refused")
        return real(fileno, length, access=access)

    monkeypatch.setattr(apr_read.mmap, "mmap", no_private_maps)
    path = tmp_path / "model.apr"
    apr.save_file(make().fit(X, Y), path)
    model = apr.load_file(path, mmap=True)
    before = model.predict_proba(X)
    with pytest.raises(ReadOnlyModelError, match="load it from its file, or from a bytearray") as info:
        model.partial_fit(X, Y)
    assert isinstance(info.value, ValueError)
    assert np.array_equal(model.predict_proba(X), before)
    writable = apr.load_file(path)
    writable.partial_fit(X, Y)  # the advice works
    assert not np.array_equal(writable.predict_proba(X), before)


def test_partial_fit_that_replaces_its_arrays_still_works_on_a_mapped_model(tmp_path: Path) -> None:
    path = tmp_path / "sgd.apr"
    apr.save_file(SGDClassifier(random_state=0).fit(X, Y), path)
    model = apr.load_file(path, mmap=True)
    model.partial_fit(X, Y)  # SGD writes its updated weights into new arrays
    saved = apr.load_file(path).coef_
    assert not np.array_equal(model.coef_, saved)
    assert np.array_equal(apr.load_file(path, mmap=True).coef_, saved)


# -- no RecursionError escapes -------------------------------------------------------------------


PLACEHOLDER = "__deep__"


def nested(depth: int, kind: str) -> str:
    opening, closing = {"list": ("[", "]"), "dict": ('{"a":', "}"), "mixed": ('[{"a":', "}]")}[kind]
    return opening * depth + "1" + closing * depth


def with_deep_json(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Make every writer put ``text`` where the metadata holds PLACEHOLDER (their own JSON would refuse it)."""
    def spliced(value: Any) -> str:
        return canonical_json(value).replace(json.dumps(PLACEHOLDER), text)

    for module in (apr_write, safetensors, gguf):
        monkeypatch.setattr(module, "canonical_json", spliced)


PLACES = {
    "schema": lambda meta: meta.__setitem__("schema", PLACEHOLDER),
    "class": lambda meta: meta["model"].__setitem__("class", PLACEHOLDER),
    "param": lambda meta: meta["model"]["params"].__setitem__("fit_intercept", PLACEHOLDER),
    "user": lambda meta: meta.__setitem__("user", {"note": PLACEHOLDER}),
}
#: GGUF stores the schema as an integer and the class as a plain string: JSON holds the rest.
GGUF_PLACES = ("param", "user")


def write(fmt: str, state: ModelState, path: Path) -> Path:
    {"apr": apr.write_state, "safetensors": safetensors.write_state, "gguf": gguf.write_state}[fmt](state, path)
    return path


@pytest.mark.parametrize("fmt", ["apr", "safetensors", "gguf"])
@pytest.mark.parametrize(("depth", "kind"), [(10_000, "list"), (1000, "list"), (500, "mixed"), (1020, "dict")])
def test_deeply_nested_metadata_is_a_format_error(fmt: str, depth: int, kind: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with_deep_json(monkeypatch, nested(depth, kind))
    base = to_state(line(2.0))
    for place, edit in PLACES.items():
        if fmt == "gguf" and place not in GGUF_PLACES:
            continue
        meta = json.loads(json.dumps(base.meta))
        edit(meta)
        path = write(fmt, ModelState(base.tensors, meta), tmp_path / f"{place}.{fmt}")
        for verb in (aprender.load, aprender.inspect, aprender.validate):
            if verb is aprender.inspect and place not in ("schema", "param"):
                continue  # inspect parses the metadata as a whole, once: one place shows it
            with pytest.raises(FormatError, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
                verb(path)


@pytest.mark.parametrize("fast", [True, False])
def test_parse_json_bounds_depth_on_both_parsers(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fast:
        monkeypatch.setattr(codec_state, "_orjson", None)
    assert parse_json(nested(MAX_JSON_DEPTH, "list"), "x") is not None
    for depth in (MAX_JSON_DEPTH + 1, 1000, 100_000):
        with pytest.raises(FormatError, match=f"x is not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels"):
            parse_json(nested(depth, "list").encode(), "x")
    wide = "[" + ",".join(["[[1]]"] * 5000) + "]"  # many brackets, little depth
    assert len(parse_json(wide, "x")) == 5000


def test_the_deepest_value_the_codec_writes_reads_back() -> None:
    from aprender.preprocessing import FunctionTransformer

    node: Any = 1
    for _ in range(62):  # the codec's own limit (MAX_DEPTH = 64) is nearly reached
        node = (node,)
    model = FunctionTransformer(kw_args={"a": node}).fit(np.zeros((2, 2)))
    assert apr.loads(apr.dumps(model)).kw_args == {"a": node}


def test_preview_is_bounded() -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    assert preview(deep) == "a list of 1 items"
    assert preview({"k": deep}) == "a dict of 1 keys"
    assert preview("x" * 10_000, 5) == "'xxxxx'..."
    assert preview([0, 2**31, "a", None, 1.5]) == "[0, 2147483648, 'a', None, 1.5]"
    assert preview(2**5000) == "an int of 5001 bits"
    assert preview(np.float64) == "a value of type type"


def test_error_messages_show_a_preview_of_a_value_read_from_the_file() -> None:
    base = to_state(line(2.0))
    meta = json.loads(json.dumps(base.meta))
    meta["schema"] = [[[1]]] * 3
    with pytest.raises(FormatError, match="metadata 'schema' must be 1, found a list of 3 items"):
        apr.loads(apr.state_to_bytes(ModelState(base.tensors, meta)))
