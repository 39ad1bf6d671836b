"""Fields of the wrong JSON type, unbounded integers and shapes: each refused with a FormatError.

These are the reproductions of a fuzz campaign (issue 14): before the decoder checked
every node against the declaration of its fields, each of them escaped as a
``TypeError``, ``ValueError`` or ``OverflowError``.
"""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest
from state_edit import hostile
from zoo import iris

import aprender
from aprender.codec import ModelState, to_state
from aprender.codec.handlers import Handler, register_handler
from aprender.ensemble import HistGradientBoostingClassifier
from aprender.exceptions import FormatError
from aprender.format import apr, gguf, safetensors
from aprender.format.quantize import quantize
from aprender.linear_model import LogisticRegression


@cache
def _logistic() -> LogisticRegression:
    return LogisticRegression(max_iter=500).fit(*iris())


@cache
def _hgb() -> HistGradientBoostingClassifier:
    X, y = iris()
    return HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(X, y)


def _attrs(meta: dict) -> dict:
    return meta["model"]["attrs"]


def _tensor_nodes(node: Any) -> list[dict]:
    if isinstance(node, dict):
        if node.get("__t__") == "tensor":
            return [node]
        return [n for v in node.values() for n in _tensor_nodes(v)]
    if isinstance(node, list):
        return [n for v in node for n in _tensor_nodes(v)]
    return []


def _set_tensor_field(field: str, value: Any) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        _tensor_nodes(meta["model"])[0][field] = value
    return edit


def _find_tag(node: Any, tag: str) -> dict:
    if isinstance(node, dict):
        if node.get("__t__") == tag:
            return node
        for value in node.values():
            found = _find_tag(value, tag)
            if found is not None:
                return found
    elif isinstance(node, list):
        for value in node:
            found = _find_tag(value, tag)
            if found is not None:
                return found
    return None


def _nested_dicts(levels: int) -> dict:
    node: dict = {"__t__": "dict", "items": [["leaf", 1]]}
    for _ in range(levels):
        node = {"__t__": "dict", "items": [["k", node]]}
    return node


def _repeated_key_over_tensor(meta: dict, tensors: dict) -> None:
    # The later value of a repeated key wins, so the tensor the first one names is never read.
    tensors["extra"] = np.zeros(2)
    meta["model"]["params"]["class_weight"] = {"__t__": "dict", "items": [
        ["a", {"__t__": "tensor", "name": "extra"}], ["a", 1.0]]}


LOGISTIC_EDITS = {
    "scalar-dtype-list": (lambda m, t: _attrs(m).__setitem__(
        "n_features_in_", {"__t__": "scalar", "dtype": [], "v": 5}), "'scalar' field 'dtype' must be str"),
    "type-v-list": (lambda m, t: m["model"]["params"].__setitem__(
        "class_weight", {"__t__": "type", "v": []}), "'type' field 'v' must be str"),
    "float-v-list": (lambda m, t: m["model"]["params"].__setitem__(
        "C", {"__t__": "float", "v": []}), "'float' field 'v' must be str"),
    "tensor-dtype-dict": (_set_tensor_field("dtype", {}), "'tensor' field 'dtype' must be str or null"),
    "tensor-scalar-dict": (_set_tensor_field("scalar", {}), "'tensor' field 'scalar' must be str or null"),
    "tensor-name-dict": (_set_tensor_field("name", {}), "'tensor' field 'name' must be str"),
    "tensor-unknown-field": (_set_tensor_field("extra", 1), "'tensor' node has an unknown field 'extra'"),
    "estimator-params-list": (lambda m, t: m["model"].__setitem__("params", ["x"]),
                              "'estimator' field 'params' must be dict"),
    "estimator-no-attrs": (lambda m, t: m["model"].pop("attrs"), "'estimator' node lacks its field 'attrs'"),
    "huge-int-param": (lambda m, t: m["model"]["params"].__setitem__("max_iter", 2**70),
                       "outside the int64/uint64 range"),
    "huge-int-nested": (lambda m, t: m["model"]["params"].__setitem__(
        "class_weight", {"__t__": "dict", "items": [[1, -(2**64)]]}), "outside the int64/uint64 range"),
    "dict-item-not-pair": (lambda m, t: m["model"]["params"].__setitem__(
        "class_weight", {"__t__": "dict", "items": [[0, 1.0], [1]]}), "needs 'items' as a list of [key, value] pairs"),
    "dict-unhashable-key": (lambda m, t: m["model"]["params"].__setitem__(
        "class_weight", {"__t__": "dict", "items": [[[0], 1.0]]}), "unhashable dict key of type list"),
    "dict-tensor-twice": (lambda m, t: m["model"]["params"].__setitem__(
        "class_weight", {"__t__": "dict", "items": [[0, _tensor_nodes(m["model"])[0]]]}), "is referenced twice"),
    "dict-repeated-key-drops-tensor": (_repeated_key_over_tensor, "tensor 'extra' is not referenced"),
    "dict-too-deep": (lambda m, t: m["model"]["params"].__setitem__(
        "class_weight", _nested_dicts(70)), "values nested deeper than 64 levels"),
    "strarray-shape-huge": (lambda m, t: _attrs(m).__setitem__(
        "feature_names_in_", {"__t__": "strarray", "dtype": "<U1", "shape": [0, 2**62], "v": []}),
        "invalid dimension"),
    "strarray-255-dims": (lambda m, t: _attrs(m).__setitem__(
        "feature_names_in_", {"__t__": "strarray", "dtype": "<U1", "shape": [1] * 255, "v": ["a"]}),
        "shape must be a list of 0 to 32 dimensions"),
}


@pytest.mark.parametrize("name", sorted(LOGISTIC_EDITS))
def test_mistyped_codec_fields_are_format_errors(name: str, tmp_path) -> None:
    edit, message = LOGISTIC_EDITS[name]
    assert message in str(hostile(_logistic(), edit, tmp_path))


def _loss_class_dict(meta: dict, tensors: dict) -> None:
    _find_tag(meta["model"], "sklearn_loss")["class"] = {"a": 1}


def _bit_generator_list(meta: dict, tensors: dict) -> None:
    _find_tag(meta["model"], "numpy_generator")["bit_generator"] = ["PCG64"]


def _loss_unknown_field(meta: dict, tensors: dict) -> None:
    _find_tag(meta["model"], "sklearn_loss")["callback"] = "os.system"


@pytest.mark.parametrize(("edit", "message"), [
    (_loss_class_dict, "'sklearn_loss' field 'class' must be str, found dict"),
    (_bit_generator_list, "'numpy_generator' field 'bit_generator' must be str, found list"),
    (_loss_unknown_field, "'sklearn_loss' node has an unknown field 'callback'"),
], ids=["loss-class-dict", "bit-generator-list", "loss-unknown-field"])
def test_mistyped_handler_fields_are_format_errors(edit, message, tmp_path) -> None:
    if _find_tag(to_state(_hgb()).meta["model"], "numpy_generator") is None and edit is _bit_generator_list:
        state = to_state(_hgb())
        assert "numpy_generator" in json.dumps(state.meta)  # the HGB model must carry its rng
    assert message in str(hostile(_hgb(), edit, tmp_path))


def test_a_handler_must_declare_its_fields() -> None:
    with pytest.raises(TypeError):
        Handler("undeclared", (complex,), lambda v, e, p: {}, lambda n, d, p: None)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="must declare its node fields"):
        register_handler(Handler("undeclared", (complex,), lambda v, e, p: {}, lambda n, d, p: None, {}))


def _quantized_apr(edit: Callable[[dict], None], tmp_path) -> FormatError:
    from aprender.cluster import KMeans

    km = KMeans(n_clusters=2, n_init=1, random_state=0).fit(np.random.default_rng(0).normal(size=(50, 40)))
    state = quantize(to_state(km), "q8_0")
    meta = copy.deepcopy(state.meta)
    edit(meta)
    path = tmp_path / "q.gguf"
    path.write_bytes(gguf.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))
    with pytest.raises(FormatError) as info:
        aprender.load(path)
    return info.value


def _record(meta: dict) -> dict:
    return next(iter(meta["quantization"]["tensors"].values()))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda m: _record(m).__setitem__("dtype", ["float64"]), "invalid original dtype"),
    (lambda m: _record(m).__setitem__("shape", [2, 10**4000]), "invalid dimension"),
    (lambda m: _record(m).__setitem__("shape", [1] * 40), "dimensions"),
    (lambda m: _tensor_nodes(m["model"])[0].__setitem__("name", {"a": 1}), "is not referenced"),
], ids=["dtype-list", "shape-4000-digits", "shape-40-dims", "tensor-name-dict"])
def test_hostile_quantization_records(edit, message, tmp_path) -> None:
    assert message in str(_quantized_apr(edit, tmp_path))


@pytest.mark.parametrize(("old", "new", "message"), [
    (b'"type":"q8_0"', b'"type":["q8"]', "needs a known 'type'"),
    (b'"dtype":"float64","shape"', b'"dtype":["float"],"shape"', "invalid original dtype"),
], ids=["type-list", "original-dtype-list"])
def test_hostile_quantization_records_in_apr(old: bytes, new: bytes, message: str, tmp_path) -> None:
    """Same-length edits of the metadata, footer CRC recomputed: only the record checks can catch them."""
    import zlib

    from aprender.cluster import KMeans

    km = KMeans(n_clusters=2, n_init=1, random_state=0).fit(np.random.default_rng(0).normal(size=(50, 40)))
    raw = apr.dumps(km, quantize="q8_0")
    assert raw.count(old) == 1 and len(old) == len(new)
    raw = raw.replace(old, new)
    raw = raw[:-4] + zlib.crc32(raw[:-4]).to_bytes(4, "little")
    path = tmp_path / "q.apr"
    path.write_bytes(raw)
    with pytest.raises(FormatError, match=message):
        aprender.load(path)


def _safetensors_with_header(header: dict, data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def test_safetensors_tensor_of_255_dimensions(tmp_path) -> None:
    path = tmp_path / "deep.safetensors"
    path.write_bytes(_safetensors_with_header(
        {"w": {"dtype": "F64", "shape": [1] * 255, "data_offsets": [0, 8]}}, b"\0" * 8))
    with pytest.raises(FormatError, match="shape must be a list of 0 to 32 dimensions"):
        safetensors.load_tensors(path)


def test_safetensors_empty_tensor_of_huge_shape(tmp_path) -> None:
    path = tmp_path / "huge.safetensors"
    path.write_bytes(_safetensors_with_header({"w": {"dtype": "F64", "shape": [0, 2**62], "data_offsets": [0, 0]}},
                                              b""))
    with pytest.raises(FormatError, match="invalid dimension"):
        safetensors.load_tensors(path)


def test_apr_index_entry_of_shape_0_by_2_62(tmp_path) -> None:
    """An empty tensor whose other dimension numpy cannot allocate: refused from the index."""
    import zlib

    from aprender.format.apr._layout import parse_header

    state = to_state(_logistic())
    tensors = {**state.tensors, "zz_empty": np.zeros((0, 3))}
    raw = bytearray(apr.state_to_bytes(ModelState(tensors=tensors, meta=state.meta)))
    header = parse_header(bytes(raw[:64]), len(raw), "test")
    index = bytes(raw[header.tensor_index_offset:header.data_offset])
    name = b"zz_empty"
    at = index.index(struct.pack("<H", len(name)) + name) + 2 + len(name) + 2  # past dtype code and ndim
    assert struct.unpack_from("<QQ", raw, header.tensor_index_offset + at) == (0, 3)
    struct.pack_into("<Q", raw, header.tensor_index_offset + at + 8, 2**62)
    raw[-4:] = zlib.crc32(bytes(raw[:-4])).to_bytes(4, "little")
    path = tmp_path / "huge.apr"
    path.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="invalid dimension"):
        aprender.load(path)


@pytest.mark.parametrize("where", ["load", "inspect"])
def test_gguf_quantization_record_of_huge_integers(where: str, tmp_path) -> None:
    from aprender.cluster import KMeans

    km = KMeans(n_clusters=2, n_init=1, random_state=0).fit(np.random.default_rng(0).normal(size=(50, 40)))
    state = quantize(to_state(km), "q8_0")
    meta = copy.deepcopy(state.meta)
    _record(meta)["shape"] = [2, int("9" * 4000)]
    path = tmp_path / "q.gguf"
    path.write_bytes(gguf.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))
    with pytest.raises(FormatError, match="invalid dimension"):
        aprender.load(path) if where == "load" else gguf.inspect_file(path)


def test_the_declarations_match_what_the_encoder_writes() -> None:
    """Every tagged node of real models passes the field check (no false refusals)."""
    from aprender.codec import handlers
    from aprender.codec._decode import BUILTIN_FIELDS, check_fields

    def walk(node: Any) -> int:
        count = 0
        if isinstance(node, dict):
            tag = node.get("__t__")
            if tag is not None:
                fields = BUILTIN_FIELDS[tag] if tag in BUILTIN_FIELDS else handlers.for_tag(tag).fields
                check_fields(node, tag, fields, "model")
                count += 1
            count += sum(walk(v) for v in node.values())
        elif isinstance(node, list):
            count += sum(walk(v) for v in node)
        return count

    assert walk(to_state(_hgb()).meta["model"]) > 10
    assert walk(to_state(_logistic()).meta["model"]) > 3
    assert walk(to_state(_zoo("KMeans")).meta["model"]) > 3  # its _n_threads is an "n_threads" node


# -- costs a header sets ---------------------------------------------------------------


def _encrypted_with(monkeypatch, tmp_path, **cost: int):
    from aprender.format.apr import _crypto

    for name, value in cost.items():
        monkeypatch.setitem(_crypto.ARGON2, name, value)
    path = tmp_path / "costly.apr"
    apr.save_encrypted(_logistic(), path, "pw")
    monkeypatch.undo()
    return path


@pytest.mark.parametrize(("cost", "message"), [
    ({"memory_cost": 1 << 17}, "memory_cost=131072, above this reader's limit of 65536"),
    ({"iterations": 4, "memory_cost": 64}, "iterations=4, above this reader's limit of 3"),
    ({"lanes": 8, "memory_cost": 64}, "lanes=8, above this reader's limit of 4"),
], ids=["memory", "iterations", "lanes"])
def test_argon2_costs_above_the_default_limits_need_an_opt_in(cost, message, monkeypatch, tmp_path) -> None:
    path = _encrypted_with(monkeypatch, tmp_path, **cost)
    with pytest.raises(FormatError, match=message):
        apr.load_encrypted(path, "pw")
    with apr.kdf_limits(memory_cost=1 << 17, iterations=4, lanes=8):
        loaded = apr.load_encrypted(path, "pw")
    np.testing.assert_array_equal(loaded.coef_, _logistic().coef_)
    with pytest.raises(FormatError, match="above this reader's limit"):  # the opt-in ends with the block
        apr.load_encrypted(path, "pw")


def test_kdf_limits_cannot_exceed_the_hard_bounds() -> None:
    with pytest.raises(ValueError, match="memory_cost must be an int in"), apr.kdf_limits(
            memory_cost=1 << 22, iterations=2, lanes=1):
        pass


def test_zstd_window_above_the_limit_is_refused(monkeypatch, tmp_path) -> None:
    import zstandard

    from aprender.format.apr import _compress

    def wide_window(data, algorithm, level):
        params = zstandard.ZstdCompressionParameters.from_level(3, window_log=26, write_content_size=0)
        stream = zstandard.ZstdCompressor(compression_params=params).compressobj()  # size unknown: the window stays
        return stream.compress(data) + stream.flush()

    monkeypatch.setattr(_compress, "compress", wide_window)  # the writer imports it when it compresses
    path = tmp_path / "wide.apr"
    apr.save_file(_logistic(), path, compression="zstd")
    monkeypatch.undo()
    with pytest.raises(FormatError, match="Frame requires too much memory"):
        aprender.load(path)


# -- fitted-state completeness: what predict needs is checked at load ------------------


def _zoo(prefix: str) -> Any:
    from zoo import CASES

    return next(c for c in CASES if c.id.startswith(prefix)).make()[0]


def _drop(name: str) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        ref = _attrs(meta).pop(name)
        if isinstance(ref, dict) and ref.get("__t__") == "tensor":
            tensors.pop(ref["name"])
    return edit


def _swap(a: str, b: str, where: Callable[[dict], dict] = _attrs) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        attrs = where(meta)
        attrs[a], attrs[b] = attrs[b], attrs[a]
    return edit


def _expert0(meta: dict) -> dict:
    return _attrs(meta)["experts_"][0]["attrs"]


def _drop_expert_intercept(meta: dict, tensors: dict) -> None:
    tensors.pop(_expert0(meta).pop("intercept_")["name"])


def _drop_tree_attr(name: str) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        packed = dict(_attrs(meta)["estimators_"]["items"])
        items = packed["attrs"]["items"]
        assert any(k == name for k, _ in items)
        packed["attrs"]["items"] = [[k, v] for k, v in items if k != name]
    return edit


@pytest.mark.parametrize(("model", "edit", "message"), [
    ("LogisticRegression-strings", _drop("intercept_"), "fitted attribute 'intercept_' is missing"),
    ("LogisticRegression-strings", _swap("intercept_", "classes_"), "'intercept_' is <U10"),
    ("MixtureOfExpertsClassifier", _drop_expert_intercept, "at 'experts_.0': fitted attribute 'intercept_' is missing"),
    ("MixtureOfExpertsClassifier", _swap("coef_", "intercept_", _expert0), "'coef_' must have 2 dimensions"),
    ("RandomForestClassifier", _drop_tree_attr("n_outputs_"), "fitted attribute 'n_outputs_' is missing"),
    ("RandomForestClassifier", _drop_tree_attr("max_features_"), "fitted attribute 'max_features_' is missing"),
    ("DecisionTreeClassifier", _drop("n_outputs_"), "fitted attribute 'n_outputs_' is missing"),
    ("HistGradientBoostingClassifier", _drop("_preprocessor"), "fitted attribute '_preprocessor' is missing"),
], ids=["lr-no-intercept", "lr-intercept-classes-swapped", "moe-expert-no-intercept", "moe-expert-arrays-swapped",
        "forest-trees-no-n_outputs", "forest-trees-no-max_features", "tree-no-n_outputs", "hgb-no-preprocessor"])
def test_incomplete_fitted_state_fails_at_load(model: str, edit, message: str, tmp_path) -> None:
    assert message in str(hostile(_zoo(model), edit, tmp_path))


def test_remembered_hyperparameters_never_excuse_other_values() -> None:
    """Parameter sets that passed are remembered (a Pipeline's with its steps' fitted arrays);
    a file with other values, at any level, has them checked again."""
    from aprender.codec import _decode
    from aprender.pipeline import make_pipeline
    from aprender.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(*iris())
    state = to_state(pipe)
    for _ in range(2):
        safetensors.loads(safetensors.state_to_bytes(state))
    assert any(key[0].__name__ == "Pipeline" for key in _decode._VALID_PARAMS)

    def edited(edit: Callable[[dict], None]) -> bytes:
        meta = copy.deepcopy(state.meta)
        edit(meta["model"]["params"])
        return safetensors.state_to_bytes(ModelState(dict(state.tensors), meta))

    def nested_c(params: dict) -> None:
        params["steps"][1]["v"][1]["params"]["C"] = -1.0

    def outer_verbose(params: dict) -> None:
        params["verbose"] = "loud"

    with pytest.raises(FormatError, match=r"invalid hyperparameters for .*LogisticRegression.*'C'"):
        safetensors.loads(edited(nested_c))
    with pytest.raises(FormatError, match=r"invalid hyperparameters for .*Pipeline.*'verbose'"):
        safetensors.loads(edited(outer_verbose))


def test_remembered_hyperparameters_keep_their_json_types() -> None:
    """``1``, ``1.0`` and ``true`` compare equal in Python but are distinct values in a file:
    a remembered ``max_iter: 100`` does not excuse ``max_iter: 100.0``, which scikit-learn refuses."""
    model = LogisticRegression(max_iter=100).fit(*iris())
    state = to_state(model)
    for _ in range(2):
        safetensors.loads(safetensors.state_to_bytes(state))
    meta = copy.deepcopy(state.meta)
    meta["model"]["params"]["max_iter"] = 100.0
    with pytest.raises(FormatError, match=r"invalid hyperparameters for .*LogisticRegression.*'max_iter'"):
        safetensors.loads(safetensors.state_to_bytes(ModelState(dict(state.tensors), meta)))
