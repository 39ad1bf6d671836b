"""Agreements between the fitted attributes of one estimator: a count and the array it counts.

A fitted estimator often stores a value twice: as an array (``classes_``, ``bin_edges_``,
``categories_``) and as a number or index derived from it (``n_classes_``, ``n_bins_``,
``_missing_indices``). Each is valid alone, and the family schemas bound each alone
(``check_sizes`` caps ``n_classes_`` at ``MAX_CLASSES``); but scikit-learn sizes work by
one and indexes the other. ``DummyClassifier.predict_proba`` allocates ``n_samples x
n_classes_`` and Bagging's ``predict_proba`` the same per member: a 736-byte file
claiming ``n_classes_ = 2**24`` beside three classes asked 3.75 GiB for 30 rows. A chain's
``order_`` that repeats an index leaves a slot of ``np.empty_like`` unwritten in
``predict``, whose heap contents then index the predictions.

:data:`AGREEMENTS` holds one rule per such pair, applied by attribute name to every fitted
estimator, generic or not (the decoder runs :func:`check_agreements` after ``check_sizes`` and
the family's own schema, whose messages say more): a rule applies wherever all its attributes are stored, so a new class
that stores the pair is covered unseen. tests/test_agreements.py breaks each rule with a
crafted file, and checks the rules hold on real fits of every class that stores the pair;
tools/gen_threat_model.py writes the table into docs/threat-model.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import preview

__all__ = ["AGREEMENTS", "COPIES", "Agreement", "Copy", "check_agreements"]


class Agreement(NamedTuple):
    """A rule between fitted attributes, applied wherever all of ``attributes`` are stored."""

    name: str
    attributes: tuple[str, ...]
    says: str
    check: Callable[[Mapping[str, Any], Mapping[str, Any], str], None]  # (hyperparameters, attributes, path)


def _integer(value: Any) -> int | None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)


def _label_sets(classes: Any) -> list[np.ndarray] | None:
    """Each output's labels: one 1-d array, or a list of them (multi-output); None for another layout."""
    if isinstance(classes, np.ndarray) and classes.ndim == 1:
        return None if any(isinstance(c, np.ndarray) for c in classes.tolist()) else [classes]
    if isinstance(classes, list) and all(isinstance(c, np.ndarray) and c.ndim == 1 for c in classes):
        return classes
    return None


def _class_counts(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    labels, stated = _label_sets(attrs["classes_"]), attrs["n_classes_"]
    if labels is None:
        return  # a layout of its own (a multilabel indicator): its family schema checks it
    counts = [c.shape[0] for c in labels]
    if isinstance(attrs["classes_"], list):
        found = [_integer(v) for v in stated] if isinstance(stated, (list, tuple, np.ndarray)) else None
        ok = found == counts
    else:
        ok = _integer(stated.item() if isinstance(stated, np.ndarray) and stated.size == 1 else stated) == counts[0]
    if not ok:
        held = counts if isinstance(attrs["classes_"], list) else counts[0]
        raise fail(path, f"'n_classes_' is {preview(stated)}, but 'classes_' holds {held} classes")


def _output_count(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    classes = attrs["classes_"]
    if isinstance(classes, list) and _integer(attrs["n_outputs_"]) != len(classes):
        raise fail(path, f"'n_outputs_' is {preview(attrs['n_outputs_'])}, but 'classes_' holds labels for "
                         f"{len(classes)} outputs")


def _permutation(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    order = attrs["order_"]
    values = order.tolist() if isinstance(order, np.ndarray) and order.ndim == 1 else order
    if not isinstance(values, list) or any(_integer(v) is None for v in values) \
            or sorted(int(v) for v in values) != list(range(len(values))):
        raise fail(path, f"'order_' must be a permutation of 0..n-1 (each output once), found {preview(order)}")


def _bin_edges(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    n_bins, edges = attrs["n_bins_"], attrs["bin_edges_"]
    edges = list(edges) if isinstance(edges, (list, np.ndarray)) else None
    if not isinstance(n_bins, np.ndarray) or n_bins.ndim != 1 or n_bins.dtype.kind not in "iu" \
            or edges is None or len(edges) != n_bins.shape[0] \
            or ("n_features_in_" in attrs and _integer(attrs["n_features_in_"]) != len(edges)):
        raise fail(path, "'n_bins_' and 'bin_edges_' must hold one entry per feature of 'n_features_in_'")
    for i, (count, edge) in enumerate(zip(n_bins.tolist(), edges, strict=True)):
        if not isinstance(edge, np.ndarray) or edge.ndim != 1 or edge.dtype.kind != "f" or edge.shape[0] != count + 1:
            raise fail(path, f"'bin_edges_.{i}' must be the {count + 1} edges of 'n_bins_.{i}' = {count} bins")
        if np.isnan(edge).any() or np.any(edge[1:] < edge[:-1]):
            raise fail(path, f"'bin_edges_.{i}' must be increasing numbers")


def _missing_indices(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    categories, stated = attrs["categories_"], attrs["_missing_indices"]
    derived = {}  # scikit-learn's own rule: a missing value sorts last among a feature's categories
    for i, cats in enumerate(categories if isinstance(categories, list) else ()):
        last = cats[-1] if isinstance(cats, np.ndarray) and cats.ndim == 1 and cats.size else None
        if isinstance(last, (float, np.floating)) and np.isnan(last):
            derived[i] = cats.shape[0] - 1
    if not isinstance(stated, dict) or {_integer(k): _integer(v) for k, v in stated.items()} != derived:
        raise fail(path, f"'_missing_indices' is {preview(stated)}, 'categories_' give {preview(derived)}")


def _encodings(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    categories, encodings = attrs["categories_"], attrs["encodings_"]
    classes = attrs.get("classes_")
    per_feature = len(classes) if attrs.get("target_type_") == "multiclass" and classes is not None else 1
    if not isinstance(categories, list) or not isinstance(encodings, list) \
            or len(encodings) != len(categories) * per_feature \
            or ("n_features_in_" in attrs and _integer(attrs["n_features_in_"]) != len(categories)):
        raise fail(path, f"'encodings_' must hold {per_feature} encoding(s) per feature of 'categories_', "
                         "one per feature of 'n_features_in_'")
    for e, encoding in enumerate(encodings):
        size = getattr(categories[e // per_feature], "shape", (None,))[0]
        if not isinstance(encoding, np.ndarray) or encoding.shape != (size,):
            raise fail(path, f"'encodings_.{e}' must be one value per category of feature {e // per_feature} ({size})")


def _best_index(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    results = attrs["cv_results_"]
    candidates = results.get("params") if isinstance(results, dict) else None
    index = _integer(attrs["best_index_"])
    if not isinstance(candidates, list) or index is None or not 0 <= index < len(candidates):
        found = len(candidates) if isinstance(candidates, list) else "no"
        raise fail(path, f"'best_index_' is {preview(attrs['best_index_'])}, "
                         f"but 'cv_results_' holds {found} candidates")


def _code_book(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    book, classes = attrs["code_book_"], attrs["classes_"]
    rows = classes.shape[0] if isinstance(classes, np.ndarray) and classes.ndim == 1 else None
    if not isinstance(book, np.ndarray) or book.ndim != 2 or book.shape[0] != rows:
        raise fail(path, f"'code_book_' must hold one code per class ({rows} rows), found shape "
                         f"{getattr(book, 'shape', None)}")


def _ranking(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    ranking, support, count = attrs["ranking_"], attrs["support_"], _integer(attrs["n_features_"])
    if not (isinstance(ranking, np.ndarray) and isinstance(support, np.ndarray) and ranking.ndim == 1
            and support.dtype.kind == "b" and support.shape == ranking.shape
            and np.array_equal(support, ranking == 1) and count == int(support.sum())):
        raise fail(path, "'support_' must be exactly the features of 'ranking_' 1, and 'n_features_' their count")


#: Where a fit takes its output width from: (attribute, axis) of an array, or an int attribute (axis None).
_WIDTH_SOURCES = (("components_", 0), ("cluster_centers_", 0), ("subcluster_centers_", 0), ("x_rotations_", 1),
                  ("x_weights_", 1), ("embedding_", 1), ("n_clusters_", None), ("n_samples_fit_", None),
                  ("_max_components", None), ("n_components_", None))


def _output_width(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    widths = set()
    for name, axis in _WIDTH_SOURCES:
        value = attrs.get(name)
        if axis is None and _integer(value) is not None:
            widths.add(_integer(value))
        elif axis is not None and isinstance(getattr(value, "shape", None), tuple) and len(value.shape) == 2:
            widths.add(value.shape[axis])
    if _integer(params.get("n_components")) is not None:  # kernel approximations, random projections
        widths.add(_integer(params["n_components"]))
    encoder = attrs.get("one_hot_encoder_")  # RandomTreesEmbedding: one column per leaf of every tree
    if isinstance(getattr(encoder, "_n_features_outs", None), list):
        widths.add(sum(encoder._n_features_outs))
    stated = attrs["_n_features_out"]
    # The random projections store the hyperparameter as given, "auto" included (scikit-learn's own quirk).
    if widths and _integer(stated) not in widths and not (type(stated) is str and stated == params.get("n_components")):
        raise fail(path, f"'_n_features_out' is {preview(stated)}, but the fitted state gives {sorted(widths)} "
                         "output columns")


def _clusters(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    labels, count = attrs["labels_"], _integer(attrs["n_clusters_"])
    if not isinstance(labels, np.ndarray) or labels.ndim != 1 or labels.dtype.kind not in "iu" \
            or count != np.unique(labels).size or (labels.size and (labels.min() < 0 or labels.max() >= count)):
        raise fail(path, f"'n_clusters_' is {preview(attrs['n_clusters_'])}, but 'labels_' must then number "
                         "each of that many clusters 0..n_clusters_-1")


def _per_feature(*names: str, ndim: int = 1) -> Callable[[Mapping[str, Any], Mapping[str, Any], str], None]:
    """Each of ``names`` (where an array) holds one value per input feature (along its last axis)."""
    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        n = _integer(attrs["n_features_in_"])
        for name in names:
            value = attrs.get(name)
            if value is not None and (not isinstance(value, np.ndarray) or value.ndim != ndim or value.shape[-1] != n):
                raise fail(path, f"'{name}' has shape {getattr(value, 'shape', None)}, one value per feature "
                                 f"of 'n_features_in_' ({n}) expected")
    return check


def _selection(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    support, n = attrs["support_"], _integer(attrs["n_features_in_"])
    if not isinstance(support, np.ndarray) or support.dtype.kind != "b" or support.shape != (n,) \
            or int(support.sum()) != _integer(attrs["n_features_to_select_"]):
        raise fail(path, f"'support_' must be a mask of the {n} input features selecting 'n_features_to_select_' "
                         f"({preview(attrs['n_features_to_select_'])}) of them")


#: Every agreement, in the order the decoder checks them.
AGREEMENTS: tuple[Agreement, ...] = (
    Agreement("class_count", ("classes_", "n_classes_"),
              "`n_classes_` is the length of `classes_` (one count per output for a list of label arrays): "
              "`predict_proba` allocates rows of `n_classes_` columns", _class_counts),
    Agreement("output_count", ("classes_", "n_outputs_"),
              "`n_outputs_` is the number of label arrays when `classes_` is a list (multi-output)", _output_count),
    Agreement("order", ("order_",),
              "`order_` is a permutation of `0..n-1`: `predict` inverts it into `np.empty_like`, and a repeated "
              "index leaves a slot of heap contents that then indexes the predictions", _permutation),
    Agreement("bins", ("n_bins_", "bin_edges_"),
              "`bin_edges_` holds `n_bins_ + 1` increasing edges per input feature: `transform` numbers bins by "
              "the edges, `inverse_transform` and the one-hot encoder by `n_bins_`", _bin_edges),
    Agreement("missing", ("_missing_indices", "categories_"),
              "`_missing_indices` names exactly the features whose categories end in NaN, at that index "
              "(scikit-learn's own derivation)", _missing_indices),
    Agreement("encodings", ("encodings_", "categories_"),
              "`encodings_` holds one array per feature (per class and feature for a multiclass target), "
              "each one value per category: `transform` indexes it by category code", _encodings),
    Agreement("feature_scores", ("scores_", "pvalues_", "n_features_in_"),
              "a univariate selector's `scores_` and `pvalues_` (or None) hold one value per input feature: "
              "the support mask is made from them, and nothing else ties `n_features_in_` (2**24 made "
              "`get_feature_names_out` spend 15 s and a gigabyte)", _per_feature("scores_", "pvalues_")),
    Agreement("selection", ("support_", "n_features_to_select_", "n_features_in_"),
              "a sequential selector's `support_` masks the `n_features_in_` inputs and selects "
              "`n_features_to_select_` of them", _selection),
    Agreement("feature_variances", ("variances_", "n_features_in_"),
              "`variances_` holds one value per input feature", _per_feature("variances_")),
    Agreement("feature_lambdas", ("lambdas_", "n_features_in_"),
              "PowerTransformer's `lambdas_` hold one value per input feature", _per_feature("lambdas_")),
    Agreement("feature_quantiles", ("quantiles_", "n_features_in_"),
              "QuantileTransformer's `quantiles_` hold one column per input feature",
              _per_feature("quantiles_", ndim=2)),
    Agreement("clusters", ("n_clusters_", "labels_"),
              "`labels_` numbers exactly `n_clusters_` clusters `0..n_clusters_-1` (the output width of "
              "FeatureAgglomeration)", _clusters),
    Agreement("output_width", ("_n_features_out",),
              "`_n_features_out` is a width the fitted state gives (rows of `components_` or of the centres, "
              "columns of `x_rotations_` or `embedding_`, `n_components_`, ...): `get_feature_names_out` makes "
              "one name per column, and 2**24 of them cost 13 s and a gigabyte", _output_width),
    Agreement("best_index", ("best_index_", "cv_results_"),
              "`best_index_` is a candidate of `cv_results_`", _best_index),
    Agreement("code_book", ("code_book_", "classes_"),
              "`code_book_` holds one row per class: `predict` indexes `classes_` by the nearest row", _code_book),
    Agreement("ranking", ("ranking_", "support_", "n_features_"),
              "`support_` is exactly the features ranked 1 and `n_features_` their count: `transform` selects by "
              "`support_`, the contract checks `estimator_` against it", _ranking),
)


class Copy(NamedTuple):
    """A fitted attribute that a fit derives from hyperparameters (and other attributes) and inference reads."""

    attribute: str
    needs: tuple[str, ...]  # the hyperparameters or fitted attributes it is derived from
    says: str
    derive: Callable[[Mapping[str, Any]], Any]  # from the hyperparameters and attributes, merged


def _beta_loss(values: Mapping[str, Any]) -> Any:
    from sklearn.decomposition._nmf import _beta_loss_to_float  # only for the classes that store one

    return _beta_loss_to_float(values["beta_loss"])


def _gamma(values: Mapping[str, Any]) -> float:
    """MiniBatchNMF's exponent for its multiplicative updates, as its ``_check_params`` sets it."""
    beta = values["_beta_loss"]
    return 1.0 / (2.0 - beta) if beta < 1 else 1.0 / (beta - 1.0) if beta > 2 else 1.0


#: Fitted copies of hyperparameters. The kind table bounds a hyperparameter (``max_iter`` is a
#: ``sizes`` count, at most 2**24), but inference reads the copy a fit made of it: a 1.7 KB
#: MiniBatchNMF file with ``tol=0`` and ``_transform_max_iter = 2**40`` made a 3-row
#: ``transform`` loop for ever. Each copy must be what a fit derives from what it is derived from.
COPIES: tuple[Copy, ...] = (
    Copy("_transform_max_iter", ("max_iter", "transform_max_iter"),
         "`transform_max_iter`, or `max_iter` when that is None: the iterations of every `transform`",
         lambda v: v["max_iter"] if v["transform_max_iter"] is None else v["transform_max_iter"]),
    Copy("_beta_loss", ("beta_loss",), "`beta_loss` as a number (scikit-learn's `_beta_loss_to_float`)",
         _beta_loss),
    Copy("_gamma", ("_beta_loss",), "the exponent `_beta_loss` gives the multiplicative updates", _gamma),
    Copy("_strategy", ("strategy",), "`strategy`: the branch every `predict` takes", lambda v: v["strategy"]),
)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _same(stored: Any, derived: Any) -> bool:
    """Equal, and of one kind: numbers of any width, or strings."""
    if _number(derived):
        return _number(stored) and bool(stored == derived)
    return type(stored) is type(derived) is str and stored == derived


def _check_copies(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    values = {**params, **attrs}
    for copy in COPIES:
        if copy.attribute in attrs and all(name in values for name in copy.needs):
            try:
                derived = copy.derive(values)
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                derived = None
            stored = attrs[copy.attribute]
            if derived is None or not _same(stored, derived):
                raise fail(path, f"'{copy.attribute}' is {preview(stored)}, but {', '.join(copy.needs)} give "
                                 f"{preview(derived)}")


def check_agreements(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Raise a ``FormatError`` naming ``path`` when stored attributes break a rule of :data:`AGREEMENTS`
    or a fitted copy of :data:`COPIES` is not what the hyperparameters give."""
    for rule in AGREEMENTS:
        if all(name in attrs for name in rule.attributes):
            rule.check(params, attrs, path)
    _check_copies(params, attrs, path)
