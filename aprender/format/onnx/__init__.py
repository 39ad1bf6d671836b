"""Estimator -> ONNX, for ONNX Runtime. Export only.

skl2onnx converts the scikit-learn-backed estimators (aprender's subclasses are
registered with it under their parent's converter, lazily, see
``_onnx_registry``); aprender's own estimators bring converters through
:func:`register_converter`. Every exported model:

- passes ``onnx.checker.check_model(full_check=True)``,
- takes one input ``"X"`` (``[None, n_features]``) unless a DataFrame sample asks
  for one input per column,
- returns labels plus a plain probability tensor for classifiers (no ZipMap),
- carries aprender's metadata (``aprender.*`` ``metadata_props``) and names the
  class in ``doc_string``.

docs/onnx.md lists input and output names per estimator kind, the options, the
metadata keys and what cannot be exported and why.

Examples
--------
>>> import numpy as np
>>> import onnxruntime as ort
>>> from aprender.linear_model import LogisticRegression
>>> from aprender.format.onnx import input_feed, to_onnx
>>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
>>> clf = LogisticRegression().fit(X, [0, 0, 1, 1])
>>> onx = to_onnx(clf)
>>> [o.name for o in onx.graph.output]
['label', 'probabilities']
>>> sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
>>> sess.run(["label"], input_feed(onx, X))[0].tolist()
[0, 0, 1, 1]
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

try:  # the optional extra: fail here, once, with the command that fixes it
    import onnx

    # skl2onnx imports all of scikit-learn (about a second): found here, imported by the export that uses it.
    if importlib.util.find_spec("skl2onnx") is None:
        raise ModuleNotFoundError("No module named 'skl2onnx'", name="skl2onnx")
except ImportError as exc:
    raise ImportError(
        f"ONNX support needs the optional ONNX packages ({exc.name} is missing): pip install 'aprender[onnx]'"
    ) from exc

from aprender._warn import deprecated_alias
from aprender.exceptions import AprenderError, UnsupportedExportError
from aprender.format._formats import model_type_keyword
from aprender.format._io import existing_file, write_atomic
from aprender.format.onnx._converters import nested, register_converter, sync
from aprender.format.onnx._double import array_intercepts, needs_double
from aprender.format.onnx._dtype_choice import choose_dtype
from aprender.format.onnx._exact_trees import exact_trees
from aprender.format.onnx._frame_probe import probe_frame, read_columns
from aprender.format.onnx._gaps import check_exportable
from aprender.format.onnx._inputs import FLOAT_DTYPES, initial_types, input_feed
from aprender.format.onnx._inspect import inspect_file, load_tensors, validate_file
from aprender.format.onnx._kernels import runnable_kernels
from aprender.format.onnx._links import apply_inverse_links
from aprender.format.onnx._options import CAPABILITIES, ExportOptions
from aprender.format.onnx._precision import thresholds_after_floats, unicode_tokens, warn_float_before_trees
from aprender.format.onnx._selectors import predicting
from aprender.format.onnx._tree_ensemble5 import double_ensembles
from aprender.format.onnx._verify import parity_json, verify_export

__all__ = [
    "CAPABILITIES",
    "EXPORT_ONLY",
    "ExportOptions",
    "dumps",
    "input_feed",
    "inspect_file",
    "load_file",
    "load_tensors",
    "loads",
    "read_state",
    "register_converter",
    "save_file",
    "state_from_bytes",
    "state_to_bytes",
    "to_onnx",
    "validate_file",
    "write_state",
]

#: Why ONNX files cannot be loaded back (the message of load/load_file).
EXPORT_ONLY = (
    "ONNX is an export-only format in aprender: a graph of ONNX operators cannot be turned back into "
    "a scikit-learn estimator. Run it with onnxruntime.InferenceSession, and keep a .apr, .safetensors "
    "or .gguf copy of the model to load it in Python"
)

_TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble")
_MISSING_TYPE = re.compile(r"<class '([\w.]+)'>")


def _default_opset(model: Any, target_opset: Any) -> Any:
    """skl2onnx's default opsets, except where one of its converters needs an older ai.onnx.ml.

    skl2onnx 1.20's IsolationForest converter builds ``LabelEncoder`` nodes that its
    operator classes have up to ai.onnx.ml version 3 only, and fails with the version 4
    that the installed onnx makes the default ("version 4 of domain 'ai.onnx.ml' not
    supported yet"); onnxmltools' booster converters write their tree nodes at the newest
    ai.onnx.ml version, which skl2onnx then refuses the same way. A caller's own
    ``target_opset`` is used as given.
    """
    from sklearn.ensemble import IsolationForest

    from aprender.format.onnx._boosters import is_booster

    if target_opset is not None or not any(isinstance(est, IsolationForest) or is_booster(est)
                                           for est in nested(model)):
        return target_opset
    from skl2onnx import get_latest_tested_opset_version

    return {"": get_latest_tested_opset_version(), "ai.onnx.ml": 3}


def _final_estimator(model: Any) -> Any:
    """The estimator whose converter options apply: a Pipeline's last step, a search's best estimator."""
    from sklearn.model_selection._search import BaseSearchCV
    from sklearn.pipeline import Pipeline

    while True:
        if isinstance(model, Pipeline):
            model = model.steps[-1][1]
        elif isinstance(model, BaseSearchCV) and hasattr(model, "best_estimator_"):
            model = model.best_estimator_  # skl2onnx passes a search's options on to it
        else:
            return model


def _accepts_option(model: Any, option: str) -> bool:
    """The converter of ``model`` (of a Pipeline's last step) declares ``option``."""
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from skl2onnx.common._registration import get_converter

    alias = sklearn_operator_name_map.get(type(_final_estimator(model)))
    if alias is None:
        return False
    return option in (get_converter(alias).get_allowed_options() or {})


def _without_zipmap(model: Any) -> list[Any]:
    """Classifiers inside ``model`` whose converter has no ``zipmap`` option (LinearSVC).

    skl2onnx gives every classifier step of a Pipeline ``zipmap=True`` unless the step has
    options of its own, and LinearSVC's converter then fails with "Option 'zipmap' not in
    [...]"; an empty option set of their own keeps them out of that default.
    """
    from sklearn.base import is_classifier

    from aprender.format.onnx._probe import fitted_parts

    return [est for est in fitted_parts(model)
            if est is not model and is_classifier(est) and not _accepts_option(est, "zipmap")
            and not hasattr(est, "steps") and not hasattr(est, "best_estimator_")]


def _converter_options(model: Any, options: Mapping[Any, Any] | None) -> dict[Any, Any] | None:
    """skl2onnx options: the caller's, plus ``zipmap=False`` for classifiers unless given."""
    given = dict(options or {})
    if not _accepts_option(model, "zipmap"):
        if any(isinstance(k, str) for k in given):
            return given
        return {**{id(est): {} for est in _without_zipmap(model)}, **given} or None
    if all(isinstance(k, str) for k in given):
        return {"zipmap": False, **given}
    # Keyed by estimator class or id(): skl2onnx does not mix those with names.
    if not any(isinstance(v, Mapping) and "zipmap" in v for v in given.values()):
        given[id(model)] = {"zipmap": False, **given.get(id(model), {})}
    return given


def _no_converter(model: Any, missing: str) -> UnsupportedExportError:
    hint = (
        "aprender's own estimators need a converter: see aprender.format.onnx.register_converter()"
        if missing.startswith("aprender.")
        else "skl2onnx has no converter for this class"
    )
    return UnsupportedExportError(
        f"cannot export {type(model).__name__} to ONNX: no ONNX converter for {missing} ({hint})"
    )


def _require_converter(model: Any) -> None:
    """Refuse a model whose own class has no converter before its input is looked at.

    Otherwise an input skl2onnx could never take (MultiLabelBinarizer's label lists,
    PatchExtractor's images) fails first, with a message about the input. Parts of a
    model (Pipeline steps) are checked by skl2onnx itself.
    """
    from skl2onnx._supported_operators import sklearn_operator_name_map

    cls = type(model)
    if cls not in sklearn_operator_name_map:
        raise _no_converter(model, f"{cls.__module__}.{cls.__qualname__}")


def _unsupported(model: Any, exc: Exception) -> UnsupportedExportError:
    """Turn a skl2onnx failure into an error naming the estimator and what is missing."""
    from skl2onnx.common.exceptions import MissingConverter, MissingShapeCalculator

    name = type(model).__name__
    text = str(exc).strip()
    if isinstance(exc, (MissingShapeCalculator, MissingConverter)):
        found = _MISSING_TYPE.search(text)
        return _no_converter(model, found.group(1) if found else text.splitlines()[0])
    if "Expected an int, got a boolean" in text:
        import google.protobuf

        text += (
            f" (protobuf {google.protobuf.__version__}: skl2onnx writes boolean attributes that protobuf 7 "
            "rejects; install the onnx extra, which pins protobuf<7)"
        )
    if "scipy.sparse" in text:
        text += " (the model keeps scipy.sparse fitted data, which skl2onnx cannot embed: fit it on a dense array)"
    return UnsupportedExportError(f"skl2onnx cannot convert {name} to ONNX: {type(exc).__name__}: {text}")


def _convert(model: Any, types: list[tuple[str, Any]], target_opset: Any, options: Any) -> onnx.ModelProto:
    import warnings

    import skl2onnx

    try:
        with warnings.catch_warnings():
            # skl2onnx's tree converters write boolean ints attributes; protobuf 6 warns (the pinned
            # extra), protobuf 7 raises, which _unsupported() explains. The user cannot act on the warning.
            warnings.filterwarnings("ignore", "Field onnx.AttributeProto.ints: Expected an int", DeprecationWarning)
            return skl2onnx.to_onnx(model, initial_types=types, target_opset=target_opset, options=options)
    except AprenderError:
        raise  # a converter of aprender's own estimators already said what is wrong
    except NameError as exc:  # skl2onnx's "Option 'x' not in [...] for class 'Y'"
        raise ValueError(f"invalid ONNX conversion option: {exc}") from exc
    except Exception as exc:
        raise _unsupported(model, exc) from exc


def _restore_input_names(onx: onnx.ModelProto, types: list[tuple[str, Any]]) -> None:
    """Give the graph inputs the names they were asked for: the DataFrame's column names.

    skl2onnx replaces characters outside ``[A-Za-z0-9_]`` in input names (``income.k`` becomes
    ``income_k``, ``home city`` becomes ``home_city``), and then nothing maps a DataFrame's
    columns to the graph's inputs. ONNX names are any strings; the inputs are renamed back,
    with every node input that reads them.
    """
    inputs = list(onx.graph.input)
    if len(inputs) != len(types):
        return
    renamed = {inp.name: name for inp, (name, _) in zip(inputs, types, strict=True) if inp.name != name}
    if not renamed:
        return
    taken = {i.name for i in inputs} | {o for node in onx.graph.node for o in node.output}
    if any(name in taken for name in renamed.values()):  # an original name already names another value
        return
    for inp in inputs:
        inp.name = renamed.get(inp.name, inp.name)
    for node in onx.graph.node:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]


def _double_trees(onx: onnx.ModelProto) -> list[str]:
    """The tree operators of a graph that read double inputs (a Cast to float before them is exact)."""
    trees = [node for node in onx.graph.node if node.op_type in _TREE_OPS]
    if not trees:
        return []
    try:
        inferred = onnx.shape_inference.infer_shapes(onx).graph
    except Exception:  # no types to read: every tree counts as reading doubles
        return sorted({node.op_type for node in trees})
    types = {v.name: v.type.tensor_type.elem_type for v in [*inferred.input, *inferred.value_info]}
    return sorted({node.op_type for node in trees
                   if types.get(node.input[0]) != onnx.TensorProto.FLOAT and not _double_thresholds(node)})


def _double_thresholds(node: onnx.NodeProto) -> bool:
    """A tree node whose thresholds are doubles (LightGBM's export): it compares double inputs exactly."""
    return any(a.name in ("nodes_values_as_tensor", "nodes_splits") and a.t.data_type == onnx.TensorProto.DOUBLE
               for a in node.attribute)


def _check(onx: onnx.ModelProto, model: Any, dtype: np.dtype) -> None:

    name = type(model).__name__
    trees = _double_trees(onx) if dtype == np.float64 else []
    if trees:
        raise UnsupportedExportError(
            f"cannot export {name} to ONNX with dtype=float64: its {', '.join(trees)} nodes compare double "
            "inputs with float32 thresholds, so predictions would differ from the model's. Use dtype=np.float32."
        )
    try:
        onnx.checker.check_model(onx, full_check=True)
    except Exception as exc:  # ValidationError, InferenceError: the graph is unusable
        raise UnsupportedExportError(
            f"skl2onnx produced an invalid ONNX graph for {name} (dtype={dtype.name}): {exc}"
        ) from exc


def _check_runtime(onx: onnx.ModelProto, model: Any) -> None:
    """Refuse a float64 graph that the installed ONNX Runtime has no double kernels for.

    Only a missing kernel is a property of the graph; other session failures (a
    StringNormalizer locale that this machine lacks) depend on where it runs.
    """
    try:
        import onnxruntime as ort
    except ImportError:  # nothing to check against; the ONNX checker has passed
        return
    quiet = ort.SessionOptions()
    quiet.log_severity_level = 4  # the exception below says it; no duplicate log line
    try:
        ort.InferenceSession(onx.SerializeToString(), quiet, providers=["CPUExecutionProvider"])
    except ort.capi.onnxruntime_pybind11_state.NotImplemented as exc:
        raise UnsupportedExportError(
            f"cannot export {type(model).__name__} to ONNX with dtype=float64: ONNX Runtime {ort.__version__} "
            f"has no double kernel for an operator of the graph ({str(exc).strip()}). Use dtype=np.float32."
        ) from exc
    except Exception:  # e.g. a locale missing on this machine: not a property of the graph
        return


def _own_converters() -> None:
    """Register the converters of aprender's own estimators (once: imports are cached).

    They import the estimator families and scikit-learn, so they load with the first
    export, not with this package: ``apr inspect m.onnx`` reads bytes and needs neither.
    """
    from aprender.format.onnx import (  # noqa: F401
        _decision_double,
        _exact_trees,
        _iforest,
        _kbins,
        _lda,
        _moe,
        _ovr,
        _polynomial,
        _power,
        _selectors,
        _string_missing,
        _svc,
        _svr,
        _threshold,
    )
    from aprender.format.onnx._boosters import register_installed

    register_installed()  # XGBoost, LightGBM, CatBoost: those whose library a model may come from
    _exact_trees.register()  # scikit-learn's trees: double thresholds where the graph reads doubles
    _string_missing.register()  # after _exact_trees: it wraps the SimpleImputer converter that one wraps
    _decision_double.register()  # LinearSVC, RidgeClassifier: their decision values in a double graph
    _selectors.register()  # feature selectors: the selected columns, whichever they are
    _iforest.register()  # IsolationForest: scikit-learn's float32 decisions, its float64 scores


def _double_reason(model: Any) -> str | None:
    """Why ``dtype=None`` exports ``model`` in double from the start, or None (then float32 first)."""
    parts = nested(model)
    if exact_trees(parts):
        return "scikit-learn trees: their exact graph compares double thresholds"
    return needs_double(model) or thresholds_after_floats(parts)


def to_onnx(
    model: Any,
    X: Any = None,
    *,
    target_opset: int | Mapping[str, int] | None = None,
    dtype: Any = None,
    options: Mapping[Any, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    verify: bool = True,
    tolerance: float | Mapping[str, float] | None = None,
) -> onnx.ModelProto:
    """Convert a fitted estimator to an ``onnx.ModelProto`` for ONNX Runtime.

    Parameters
    ----------
    model : estimator
        A fitted aprender estimator, scikit-learn estimator or Pipeline.
    X : array-like or DataFrame, optional
        A few rows of input. Needed when the input is not ``n_features_in_`` numbers
        (texts, strings, integers), unless the model reads a DataFrame through a
        ColumnTransformer: its fitted encoders, vectorizers and scalers then say each
        column's type, and one input per column is made from them. Otherwise, without
        it, the input is ``"X"`` of shape ``[None, n_features_in_]``.
    target_opset : int or dict, optional
        ONNX opset (``{"": 21, "ai.onnx.ml": 3}`` per domain); skl2onnx's latest
        tested opset by default.
    dtype : {None, numpy.float32, numpy.float64}, default=None
        Element type of float inputs and outputs. float64 gives tighter parity where
        the converter supports doubles. ``None``: float64 for a model holding
        scikit-learn trees (their exact graph: double thresholds and leaves, the
        preprocessing in double) and for models whose values float32 cannot hold
        (PolynomialFeatures, Gaussian processes, KernelPCA: ``_double.NEEDS_DOUBLE``)
        or whose boosters or Binarizer read a float transform, falling back
        to float32 where the model has no double graph; float32 otherwise.
        ``numpy.float32`` keeps a tree model's compact float32 graph.
    options : dict, optional
        skl2onnx converter options, e.g. ``{"zipmap": True}`` to get ZipMap
        probabilities back, ``{"raw_scores": True}``, or per step
        ``{"clf__raw_scores": True}``. Classifiers get ``zipmap=False`` unless set.
    metadata : dict, optional
        JSON-able user metadata, stored as ``aprender.user`` in ``metadata_props``.
    verify : bool, default=True
        Run the graph in ONNX Runtime on probe rows (``X``, else rows made from the
        fitted state) and compare with the estimator: labels exact, floats within
        rtol 1e-4 / atol 1e-5 for float32 graphs, 1e-9 / 1e-10 for double graphs, eps32
        for scikit-learn's trees in double (docs/onnx.md lists the measured exceptions). The result is stored as
        ``aprender.parity`` in ``metadata_props``. ``False`` writes the graph unverified.
    tolerance : float or dict, optional
        A looser tolerance the caller accepts: a float for both ``rtol`` and ``atol``, or
        ``{"rtol": ..., "atol": ..., "labels": fraction of labels allowed to differ}``.

    Returns
    -------
    onnx.ModelProto

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the model is not fitted.
    UnsupportedExportError
        If the model (or a part of it) has no ONNX converter or no ONNX graph; the
        message names the estimator and what is missing.
    ExportParityError
        If ``verify`` and the graph disagrees with the estimator beyond the tolerance;
        the message gives the output, the difference, the rows and what to do.

    Examples
    --------
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format.onnx import to_onnx
    >>> onx = to_onnx(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
    >>> onx.graph.input[0].name, onx.graph.output[0].name
    ('X', 'variable')
    >>> {p.key: p.value for p in onx.metadata_props}["aprender.class"]
    'aprender.linear_model.LinearRegression'
    """
    from sklearn.utils.validation import check_is_fitted

    # the metadata writer needs the codec's encoder; reading an .onnx file does not
    from aprender.format.onnx._meta import doc_string, model_props

    if dtype is None:
        return choose_dtype(lambda exact: to_onnx(model, X, target_opset=target_opset, dtype=exact, options=options,
                                                  metadata=metadata, verify=verify, tolerance=tolerance),
                            _double_reason(model))
    dtype = np.dtype(dtype)
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype must be numpy.float32 or numpy.float64, got {dtype}")
    check_is_fitted(model)
    _own_converters()
    check_exportable(model)
    sync()
    _require_converter(model)
    props = model_props(model, metadata)
    opset = _default_opset(model, target_opset)
    # a DataFrame model fed through a ColumnTransformer gets its per-column inputs from its fitted state
    sample = probe_frame(model) if X is None else X
    types = initial_types(model, sample, dtype)
    read = read_columns(sample)
    if read is not None:
        types = [t for t in types if t[0] in read]
    graph_model = predicting(model)  # a final RFE answers its predictions, not its selected columns
    if dtype == np.float64:
        graph_model = array_intercepts(graph_model)
    onx = _convert(graph_model, types, opset, _converter_options(graph_model, options))
    _restore_input_names(onx, types)
    apply_inverse_links(onx, graph_model)
    runnable_kernels(onx)
    parts = nested(model)
    ml_opset = opset.get("ai.onnx.ml", 5) if isinstance(opset, Mapping) else 5  # a caller's target is kept
    if dtype == np.float64 and exact_trees(parts) and ml_opset >= 5:  # scikit-learn's tree regressors: double
        onx = double_ensembles(onx)
    unicode_tokens(onx, [e for e in parts if hasattr(e, "token_pattern") and hasattr(e, "vocabulary_")])
    _sort_opsets(onx)
    _check(onx, model, dtype)
    if dtype == np.float32:
        warn_float_before_trees(onx, parts, type(model).__name__)
    if dtype == np.float64:
        _check_runtime(onx, model)
    parity = verify_export(onx, model, X, tolerance, options, parts) if verify else {"verified": False,
                                                                             "reason": "verify=False"}
    onnx.helper.set_model_props(onx, {**props, "aprender.parity": parity_json(
        {**parity, "dtype": {"chosen": dtype.name, "reason": "asked by the caller"}})})
    onx.doc_string = doc_string(model, props["aprender.class"])
    return onx


def _sort_opsets(onx: onnx.ModelProto) -> None:
    """Order the model's opset imports by domain: skl2onnx gathers them in a set, so their order,
    and the file's bytes, followed the interpreter's hash seed."""
    opsets = sorted((op.domain, op.version) for op in onx.opset_import)
    del onx.opset_import[:]
    onx.opset_import.extend(onnx.helper.make_opsetid(domain, version) for domain, version in opsets)


def dumps(model: Any, X: Any = None, **options: Any) -> bytes:
    """Serialize :func:`to_onnx`'s model to bytes.

    Examples
    --------
    >>> import onnx
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import onnx as apr_onnx
    >>> data = apr_onnx.dumps(StandardScaler().fit([[0.0], [2.0]]))
    >>> onnx.load_from_string(data).graph.output[0].name
    'variable'
    """
    return to_onnx(model, X, **options).SerializeToString()


#: The older name of :func:`dumps` (``save`` takes a path at the top level: one meaning per verb).
save = deprecated_alias(dumps, "aprender.format.onnx.save", "dumps (bytes) or save_file (a path)")


def save_file(model: Any, path: str | os.PathLike, X: Any = None, **options: Any) -> None:
    """Write :func:`to_onnx`'s model to ``path`` atomically.

    ``aprender.save(model, "model.onnx", X=..., dtype=...)`` calls this.

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import Ridge
    >>> path = os.path.join(tempfile.mkdtemp(), "ridge.onnx")
    >>> aprender.save(Ridge().fit([[0.0], [1.0]], [0.0, 1.0]), path)
    >>> os.path.getsize(path) > 0
    True
    """
    write_atomic(path, [dumps(model, X, **options)])


def _model_of(state: Any) -> Any:
    from aprender.codec import from_state
    from aprender.format.quantize import dequantize, is_quantized

    return from_state(dequantize(state) if is_quantized(state) else state)


def state_to_bytes(state: Any, X: Any = None, **options: Any) -> bytes:
    """The ONNX graph of the model a :class:`~aprender.codec.ModelState` holds (rebuilt, then converted)."""
    return dumps(_model_of(state), X, **options)


def write_state(state: Any, path: str | os.PathLike, X: Any = None, **options: Any) -> None:
    """Write the ONNX graph of the model ``state`` holds to ``path`` atomically."""
    save_file(_model_of(state), path, X, **options)


@model_type_keyword
def loads(data: bytes | bytearray | memoryview, model_type: Any = None, **options: Any) -> NoReturn:
    """Always raises :class:`UnsupportedExportError`: ONNX is export-only."""
    raise UnsupportedExportError(f"cannot load a model from ONNX bytes: {EXPORT_ONLY}.")


#: The older name of :func:`loads`.
load = deprecated_alias(loads, "aprender.format.onnx.load", "loads (bytes) or load_file (a path)")


def state_from_bytes(data: bytes | bytearray | memoryview, **options: Any) -> NoReturn:
    """Always raises :class:`UnsupportedExportError`: an ONNX graph holds no ModelState."""
    raise UnsupportedExportError(f"cannot read a model state from ONNX bytes: {EXPORT_ONLY}.")


def read_state(path: str | os.PathLike, **options: Any) -> NoReturn:
    """Always raises :class:`UnsupportedExportError`: an ONNX graph holds no ModelState."""
    p = existing_file(path)
    raise UnsupportedExportError(f"cannot read a model state from '{p}': {EXPORT_ONLY}.")


@model_type_keyword
def load_file(path: str | os.PathLike, model_type: Any = None, **options: Any) -> NoReturn:
    """Always raises :class:`UnsupportedExportError`: ONNX is export-only.

    ``aprender.load("model.onnx")`` lands here. A missing file raises
    :class:`FileNotFoundError` first.

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.exceptions import UnsupportedExportError
    >>> from aprender.linear_model import Ridge
    >>> path = os.path.join(tempfile.mkdtemp(), "ridge.onnx")
    >>> aprender.save(Ridge().fit([[0.0], [1.0]], [0.0, 1.0]), path)
    >>> try:
    ...     aprender.load(path)
    ... except UnsupportedExportError as exc:
    ...     print("export-only" in str(exc))
    True
    """
    p = existing_file(path)
    raise UnsupportedExportError(f"cannot load '{p}': {EXPORT_ONLY}.")
