"""scikit-learn's trees in ONNX with double thresholds and leaves, deciding as scikit-learn does (private).

scikit-learn computes a Pipeline's preprocessing in float64; its trees (decision trees,
random and extra forests, gradient boosting) cast their input to float32 and compare it
with float64 thresholds; histogram gradient boosting compares the float64 input with
float64 thresholds. skl2onnx 1.20 builds float32 tree attributes, and its double
variant declares double outputs that ai.onnx.ml opset 3's tree operators do not produce
(the graph fails type inference). The converters of these classes are wrapped
(:func:`register`) so that, when the tree operator reads a double input:

- its thresholds, leaf and base values are double tensors (``nodes_values_as_tensor``,
  ``class_weights_as_tensor``, ``target_weights_as_tensor``, ``base_values_as_tensor``;
  ai.onnx.ml opset 3), the thresholds being the trees' own float64 values;
- the input of a ``tree_`` model goes through ``Cast`` to float and back to double, the
  float32 rounding scikit-learn applies, so every row takes scikit-learn's branch;
- the operator's float32 scores are cast to the double the rest of the graph computes in
  (a regressor's operator then becomes ai.onnx.ml 5's double ``TreeEnsemble``, ``_tree_ensemble5``).

In either precision, a node's missing values go the way scikit-learn sends them
(``tree_.missing_go_to_left``; skl2onnx sends every NaN right). SimpleImputer on double
input replaces missing values with ``Where`` and its double statistics (ai.onnx.ml's
``Imputer`` holds float32 values, and ONNX Runtime has no double kernel for it).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from aprender.exceptions import UnsupportedExportError
from aprender.format.onnx._boosters import double_attributes
from aprender.format.onnx._converters import wrap_registered

__all__ = ["exact_trees", "register"]

#: scikit-learn estimators whose trees are exported exact in a double graph.
_FLOAT32_READERS = ("DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier", "ExtraTreeRegressor",
                    "RandomForestClassifier",
                    "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor",
                    "GradientBoostingClassifier", "GradientBoostingRegressor")
_FLOAT64_READERS = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")
_TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor")
_registered = False


def _sklearn_trees() -> dict[type, bool]:
    """The scikit-learn tree classes, each with whether it rounds its input to float32."""
    from sklearn import ensemble, tree

    return {getattr(ensemble if hasattr(ensemble, name) else tree, name): name in _FLOAT32_READERS
            for name in _FLOAT32_READERS + _FLOAT64_READERS}


def exact_trees(estimators: list[Any]) -> bool:
    """Any of ``estimators`` is a scikit-learn tree model (or a subclass): its exact graph is double.

    IsolationForest's converter is its own (``_iforest``), exact in a double graph too.
    """
    from sklearn.ensemble import IsolationForest

    classes = (*_sklearn_trees(), IsolationForest)
    return any(isinstance(est, classes) for est in estimators)


def register() -> None:
    """Wrap skl2onnx's converters of the tree classes and of SimpleImputer (once)."""
    global _registered
    if _registered:
        return
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from sklearn.impute import SimpleImputer

    for cls, rounds in _sklearn_trees().items():
        _wrap(sklearn_operator_name_map[cls], rounds, tree=True)
    _wrap(sklearn_operator_name_map[SimpleImputer], False, tree=False)
    _bypass_threshold_search()
    _registered = True


def _wrap(alias: str, rounds: bool, tree: bool) -> None:
    def wrap(original: Any) -> Any:
        def converter(scope: Any, operator: Any, container: Any) -> None:
            exact = _Exact(scope, operator, container, rounds)
            if tree and exact.double:
                # Below ai.onnx.ml 3, skl2onnx's tree converters round thresholds and leaf values to float32
                # before building the node; at 3 they keep the float64 values (made double tensors in add_node).
                with _thresholds_kept():
                    original._fct(scope, operator, exact, op_version=3)
            else:
                original(scope, operator, exact)

        return converter

    wrap_registered(alias, wrap)


#: Set while a tree converter of this module runs, in this thread only.
_keeping = threading.local()


def _bypass_threshold_search() -> None:
    """Wrap skl2onnx's threshold search (once) so that :func:`_thresholds_kept` can skip it.

    The wrapper calls the search unless this thread is inside :func:`_thresholds_kept`, so an
    export in another thread keeps skl2onnx's behaviour.
    """
    from skl2onnx.common import tree_ensemble

    search = tree_ensemble.sklearn_threshold

    def threshold(value: Any, dtype: Any, mode: Any) -> Any:
        return np.float64(value) if getattr(_keeping, "on", False) else search(value, dtype, mode)

    tree_ensemble.sklearn_threshold = threshold


@contextlib.contextmanager
def _thresholds_kept() -> Iterator[None]:
    """skl2onnx's double-mode threshold search, skipped while a tree converter runs.

    Its search for the double that float32 rounding switches at never ends for an infinite
    threshold (scikit-learn's split of the missing values from all the others), and the
    node's thresholds are replaced by the trees' own float64 values (:func:`_thresholds`)
    anyway: the value it would find is never used.
    """
    _keeping.on = True
    try:
        yield
    finally:
        _keeping.on = False


def _tree_structures(model: Any) -> list[Any]:
    """The ``tree_`` of each tree of ``model`` in skl2onnx's ``nodes_treeids`` order ([] for other models)."""
    if hasattr(model, "tree_"):
        return [model.tree_]
    members = getattr(model, "estimators_", None)
    if members is None or getattr(model, "_predictors", None) is not None:
        return []
    return [est.tree_ for est in np.ravel(np.asarray(members, dtype=object)) if hasattr(est, "tree_")]


class _Exact:
    """The converter's container, with tree nodes made to decide as scikit-learn does."""

    def __init__(self, scope: Any, operator: Any, container: Any, rounds: bool) -> None:
        from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

        self._scope = scope
        self._container = container
        self._model = operator.raw_operator
        self._rounds = rounds
        self.double = bool(operator.inputs) and isinstance(operator.inputs[0].type, DoubleTensorType)
        if self.double:  # skl2onnx declares a binary forest's probabilities float32 even in a double graph
            for output in operator.outputs:
                if isinstance(output.type, FloatTensorType):
                    output.type = DoubleTensorType(output.type.shape)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._container, name)

    def add_node(self, op_type: str, inputs: Any, outputs: Any, *args: Any, **attrs: Any) -> Any:
        if op_type == "Imputer" and self.double and self._impute(inputs, outputs, attrs):
            return None
        if op_type not in _TREE_OPS:
            return self._container.add_node(op_type, inputs, outputs, *args, **attrs)
        outputs = list([outputs] if isinstance(outputs, str) else outputs)
        if op_type != "TreeEnsembleClassifier" or not _averaged_votes(attrs):
            return self._add_tree(op_type, inputs, outputs, *args, **attrs)
        label, outputs[0] = outputs[0], self._scope.get_unique_variable_name("tree_label")
        node = self._add_tree(op_type, inputs, outputs, *args, **attrs)
        self._first_maximum(attrs, outputs[1], label)
        return node

    def _first_maximum(self, attrs: dict[str, Any], scores: str, label: str) -> None:
        """``label``: the class of the first largest score, scikit-learn's ``argmax`` of ``predict_proba``.

        The operator's own label broke ties otherwise: an ExtraTreesClassifier(30) whose votes
        for two classes were 13 and 13 got the second class from ONNX Runtime, the first from
        scikit-learn (1 row of 5,000 new rows of a DataFrame pipeline).
        """
        from onnx import TensorProto

        strings = "classlabels_strings" in attrs
        classes = list(attrs["classlabels_strings"] if strings else attrs["classlabels_int64s"])
        table = self._scope.get_unique_variable_name("tree_classes")
        self._container.add_initializer(table, TensorProto.STRING if strings else TensorProto.INT64, [len(classes)],
                                        [_bytes(c) for c in classes] if strings else classes)
        best = self._scope.get_unique_variable_name("tree_best")
        self._container.add_node("ArgMax", [scores], [best], axis=1, keepdims=0,
                                 name=self._scope.get_unique_operator_name("ArgMax"))
        self._container.add_node("Gather", [table, best], [label], axis=0,
                                 name=self._scope.get_unique_operator_name("Gather"))

    def _add_tree(self, op_type: str, inputs: Any, outputs: list[Any], *args: Any, **attrs: Any) -> Any:
        trees = _tree_structures(self._model)
        if trees:
            attrs["nodes_missing_value_tracks_true"] = _missing_left(attrs, trees)
        if not self.double:
            return self._container.add_node(op_type, inputs, outputs, *args, **attrs)
        if self._container.target_opset_any_domain("ai.onnx.ml") < 3:
            raise UnsupportedExportError(
                f"cannot export {type(self._model).__name__} to ONNX with double trees: their double thresholds "
                "need ai.onnx.ml opset 3 or later (target_opset={'ai.onnx.ml': 3}), or export with dtype=numpy.float32")
        if trees:
            attrs["nodes_values"] = _thresholds(attrs, trees)
        if self._rounds:
            inputs = [self._round_trip(name) for name in ([inputs] if isinstance(inputs, str) else inputs)]
        outputs = list(outputs)
        scores = len(outputs) - 1  # TreeEnsembleClassifier: (label, scores); TreeEnsembleRegressor: (scores,)
        declared, outputs[scores] = outputs[scores], self._scope.get_unique_variable_name("tree_scores")
        attrs["op_version"] = 3
        node = self._container.add_node(op_type, inputs, outputs, *args, **double_attributes(attrs))
        # ai.onnx.ml opset 3's tree operators always return float32 scores
        self._container.add_node("Cast", [outputs[scores]], [declared], to=_DOUBLE,
                                 name=self._scope.get_unique_operator_name("CastToDouble"))
        return node

    def _round_trip(self, name: str) -> str:
        """``name`` cast to float32 and back: the values scikit-learn's trees compare."""
        single = self._scope.get_unique_variable_name(f"{name}_float32")
        again = self._scope.get_unique_variable_name(f"{name}_as_read")
        self._container.add_node("Cast", [name], [single], to=_FLOAT, name=self._scope.get_unique_operator_name("Cast"))
        self._container.add_node("Cast", [single], [again], to=_DOUBLE,
                                 name=self._scope.get_unique_operator_name("Cast"))
        return again

    def _impute(self, inputs: Any, outputs: Any, attrs: dict[str, Any]) -> bool:
        """SimpleImputer in double with ``Where``; False where the statistics hold NaN (dropped columns)."""
        statistics = np.asarray(getattr(self._model, "statistics_", [np.nan]), dtype=np.float64)
        if np.isnan(statistics).any() or "replaced_value_float" not in attrs:
            return False
        source = inputs if isinstance(inputs, str) else inputs[0]
        missing = self._scope.get_unique_variable_name("missing")
        fill = self._scope.get_unique_variable_name("statistics")
        self._container.add_initializer(fill, _DOUBLE, [len(statistics)], statistics.tolist())
        marker = float(attrs["replaced_value_float"])
        if np.isnan(marker):
            self._container.add_node("IsNaN", [source], [missing], name=self._scope.get_unique_operator_name("IsNaN"))
        else:
            value = self._scope.get_unique_variable_name("missing_value")
            self._container.add_initializer(value, _DOUBLE, [], [marker])
            self._container.add_node("Equal", [source, value], [missing],
                                     name=self._scope.get_unique_operator_name("Equal"))
        self._container.add_node("Where", [missing, fill, source], outputs if isinstance(outputs, list) else [outputs],
                                 name=self._scope.get_unique_operator_name("Where"))
        return True


_FLOAT, _DOUBLE = 1, 11  # onnx.TensorProto element types


def _node_table(attrs: dict[str, Any], trees: list[Any]) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray]:
    tree_ids = np.asarray(attrs["nodes_treeids"], dtype=np.intp)
    node_ids = np.asarray(attrs["nodes_nodeids"], dtype=np.intp)
    branch = np.asarray([str(m) != "LEAF" for m in attrs["nodes_modes"]])
    return trees, tree_ids, node_ids, branch


def _missing_left(attrs: dict[str, Any], trees: list[Any]) -> list[int]:
    """Per node: 1 where scikit-learn sends a missing value left (the ``true`` branch of ``BRANCH_LEQ``)."""
    trees, tree_ids, node_ids, branch = _node_table(attrs, trees)
    return [int(bool(trees[t].missing_go_to_left[n])) if b and hasattr(trees[t], "missing_go_to_left") else 0
            for t, n, b in zip(tree_ids, node_ids, branch, strict=True)]


def _thresholds(attrs: dict[str, Any], trees: list[Any]) -> list[float]:
    """The trees' own float64 thresholds (skl2onnx moves them to match its float32 comparison)."""
    trees, tree_ids, node_ids, branch = _node_table(attrs, trees)
    return [float(trees[t].threshold[n]) if b else 0.0 for t, n, b in zip(tree_ids, node_ids, branch, strict=True)]


def _averaged_votes(attrs: dict[str, Any]) -> bool:
    """Whether a classifier operator's scores are one column per class, ``predict_proba`` before normalizing.

    So for forests and decision trees; gradient boosting's scores are margins (one column for
    two classes), its labels left to the operator.
    """
    classes = attrs.get("classlabels_strings", attrs.get("classlabels_int64s", ()))
    post = attrs.get("post_transform", "NONE")
    return len(classes) >= 2 and post in ("NONE", b"NONE") and len(set(attrs.get("class_ids", ()))) == len(classes)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")
