"""IsolationForest in ONNX, deciding and scoring as scikit-learn does (private).

scikit-learn's ``score_samples`` rounds the input to float32, finds each tree's leaf by
comparing it with float64 thresholds, and sums per leaf, in float64, the leaf's depth plus
the average path length of its training samples, minus one (``_decision_path_lengths`` and
``_average_path_length_per_tree``); the score is ``-2 ** (-depths / denominator)``.
skl2onnx 1.20's converter computes the same in the graph's type, but with ``Gather``,
``LabelEncoder`` and arithmetic per tree that it cannot build for a double input ("Conflicted
constraint 'T'"), so a model with a scaler before the forest could only be exported in float32,
where the scaler's float32 values near a threshold take the other branch (measured: 11 of
7,446 rows at the thresholds labelled otherwise, decision values 0.024 off).

This converter replaces skl2onnx's (:func:`register`):

- the input is cast to float32, the rounding scikit-learn applies;
- one ``TreeEnsembleRegressor`` holds every tree, each writing its leaf's index into its own
  column; a threshold is the largest float32 not above the float64 one, so a float32 value
  goes left exactly when scikit-learn sends it left, and a missing value goes where
  ``tree_.missing_go_to_left`` says;
- the leaf indices pick each leaf's float64 term from one table (``Gather``), summed in
  double (``ReduceSum``), then scored as scikit-learn scores; ``label`` is -1 where the
  decision value is negative, else 1.

In a double graph the outputs are doubles computed as scikit-learn computes them (only the
summation order differs); a float32 graph casts its double scores to float32 at the end.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.exceptions import UnsupportedExportError

__all__ = ["forest_terms", "register"]

_ALIAS = "SklearnIsolationForest"
_FLOAT, _DOUBLE, _INT64 = 1, 11, 7  # onnx.TensorProto element types
#: Leaf indices travel as float32 tree outputs: exact below 2**24.
_MAX_NODES = 2**24
_registered = False


def register() -> None:
    """Replace skl2onnx's IsolationForest converter and shape calculator (its parser stays), once."""
    global _registered
    if _registered:
        return
    from skl2onnx.common._registration import get_converter, register_converter, register_shape_calculator

    register_converter(_ALIAS, _convert, overwrite=True, options=get_converter(_ALIAS).get_allowed_options())
    register_shape_calculator(_ALIAS, _shapes, overwrite=True)
    _registered = True


def _shapes(operator: Any) -> None:
    """label ``[N, 1]`` int64, scores (and score_samples, an option skl2onnx left unshaped) ``[N, 1]``."""
    from skl2onnx.common.data_types import Int64TensorType

    n = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = Int64TensorType([n, 1])
    for output in operator.outputs[1:]:
        output.type.shape = [n, 1]


def _round_down(thresholds: np.ndarray) -> np.ndarray:
    """The largest float32 not above each float64 threshold: ``x <= t`` exactly when ``x <= result`` for float32 x."""
    single = thresholds.astype(np.float32)
    above = single.astype(np.float64) > thresholds
    single[above] = np.nextafter(single[above], np.float32(-np.inf))
    return single


def forest_terms(forest: Any) -> tuple[dict[str, Any], np.ndarray]:
    """The ``TreeEnsembleRegressor`` attributes (leaf index per tree) and the float64 term of every node."""
    subsample = forest._max_features != forest.n_features_in_  # as score_samples decides
    attrs: dict[str, list[Any]] = {key: [] for key in (
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes", "nodes_truenodeids",
        "nodes_falsenodeids", "nodes_missing_value_tracks_true", "target_treeids", "target_nodeids", "target_ids",
        "target_weights")}
    terms, offset = [], 0
    for t, (est, features) in enumerate(zip(forest.estimators_, forest.estimators_features_, strict=True)):
        tree = est.tree_
        nodes = np.arange(tree.node_count)
        leaf = tree.children_left == -1
        feature = np.where(leaf, 0, tree.feature)
        feature = np.asarray(features)[feature] if subsample else feature
        attrs["nodes_treeids"] += [t] * tree.node_count
        attrs["nodes_nodeids"] += nodes.tolist()
        attrs["nodes_featureids"] += feature.astype(np.int64).tolist()
        attrs["nodes_values"] += np.where(leaf, 0.0, _round_down(tree.threshold)).tolist()
        attrs["nodes_modes"] += ["LEAF" if is_leaf else "BRANCH_LEQ" for is_leaf in leaf]
        attrs["nodes_truenodeids"] += np.where(leaf, 0, tree.children_left).tolist()
        attrs["nodes_falsenodeids"] += np.where(leaf, 0, tree.children_right).tolist()
        attrs["nodes_missing_value_tracks_true"] += np.where(leaf, 0, tree.missing_go_to_left).astype(int).tolist()
        attrs["target_treeids"] += [t] * int(leaf.sum())
        attrs["target_nodeids"] += nodes[leaf].tolist()
        attrs["target_ids"] += [t] * int(leaf.sum())
        attrs["target_weights"] += (offset + nodes[leaf]).astype(np.float64).tolist()
        # the expression score_samples adds up, per node, in float64
        terms.append(forest._decision_path_lengths[t] + forest._average_path_length_per_tree[t] - 1.0)
        offset += tree.node_count
    if offset >= _MAX_NODES:
        raise UnsupportedExportError(
            f"cannot export IsolationForest to ONNX: its {offset} tree nodes are more than the graph can index "
            f"exactly through float32 tree outputs ({_MAX_NODES}); use fewer trees or a smaller max_samples")
    return attrs, np.concatenate(terms).astype(np.float64)


def _convert(scope: Any, operator: Any, container: Any) -> None:
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType
    from sklearn.ensemble._iforest import _average_path_length

    forest = operator.raw_operator
    double = isinstance(operator.inputs[0].type, DoubleTensorType)
    name = scope.get_unique_variable_name
    op = scope.get_unique_operator_name

    def constant(value: Any, dtype: int, shape: list[int] | None = None) -> str:
        tensor = name("iforest_const")
        values = np.ravel(value).tolist()
        container.add_initializer(tensor, dtype, [len(values)] if shape is None else shape, values)
        return tensor

    def node(op_type: str, inputs: list[str], output: str | None = None, **attrs: Any) -> str:
        output = output or name(f"iforest_{op_type.lower()}")
        container.add_node(op_type, inputs, [output], name=op(op_type), **attrs)
        return output

    x = operator.inputs[0].full_name
    if not isinstance(operator.inputs[0].type, FloatTensorType):  # scikit-learn's trees read float32
        x = node("Cast", [x], to=_FLOAT)
    attrs, terms = forest_terms(forest)
    ml = container.target_opset_any_domain("ai.onnx.ml")
    leaves = node("TreeEnsembleRegressor", [x], op_domain="ai.onnx.ml", op_version=3 if ml >= 3 else 1,
                  n_targets=len(forest.estimators_), aggregate_function="SUM", post_transform="NONE", **attrs)
    index = node("Cast", [leaves], to=_INT64)
    per_tree = node("Gather", [constant(terms, _DOUBLE), index], axis=0)
    if container.target_opset >= 13:
        depths = node("ReduceSum", [per_tree, constant([1], _INT64)], keepdims=1)
    else:
        depths = node("ReduceSum", [per_tree], axes=[1], keepdims=1)
    denominator = len(forest.estimators_) * float(_average_path_length([forest._max_samples])[0])
    if denominator != 0:
        ratio = node("Div", [depths, constant(denominator, _DOUBLE, [])])
    else:  # one training sample: scikit-learn sets the ratio to 1
        ratio = node("Add", [node("Mul", [depths, constant(0.0, _DOUBLE, [])]), constant(1.0, _DOUBLE, [])])
    score_samples = node("Neg", [node("Pow", [constant(2.0, _DOUBLE, []), node("Neg", [ratio])])])
    decision = node("Sub", [score_samples, constant(forest.offset_, _DOUBLE, [])])
    outlier = node("Less", [decision, constant(0.0, _DOUBLE, [])])
    node("Where", [outlier, constant(-1, _INT64, []), constant(1, _INT64, [])], operator.outputs[0].full_name)
    wanted = [(decision, operator.outputs[1].full_name)]
    if len(operator.outputs) > 2:  # the score_samples option
        wanted.append((score_samples, operator.outputs[2].full_name))
    for value, output in wanted:
        node("Identity" if double else "Cast", [value], output, **({} if double else {"to": _FLOAT}))
