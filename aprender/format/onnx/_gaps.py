"""Which models have no faithful ONNX graph, and why: checked before skl2onnx converts anything.

Two kinds of gap: model families with no graph at all (:data:`UNSUPPORTED`), and
parameters under which skl2onnx's graph differs from scikit-learn's predictions
(each ``_*_gap`` names the difference, measured against ONNX Runtime).
"""

from __future__ import annotations

from typing import Any

from aprender.codec import ModelType
from aprender.exceptions import UnsupportedExportError, UnsupportedTypeError
from aprender.format.onnx._converters import nested, sync

__all__ = ["UNSUPPORTED", "check_exportable"]

#: Model families with no ONNX graph, and why. Checked before skl2onnx is involved.
UNSUPPORTED: dict[ModelType, str] = {
    ModelType.NGRAM_LM: (
        "an n-gram language model scores and generates variable-length token sequences by "
        "count-table lookups with backoff; ONNX has no operator set for that, and "
        "its predictions are not a function of a fixed-width numeric input"
    ),
    ModelType.CONTENT_RECOMMENDER: (
        "recommend() ranks stored items by similarity and returns item identifiers for a "
        "query item, which is a lookup into the fitted catalogue, not a graph over an input tensor"
    ),
}



def _svm_gap(est: Any) -> str | None:
    kernel = est.kernel
    if kernel != "precomputed" and not callable(kernel):
        return None
    what = "a precomputed kernel matrix" if kernel == "precomputed" else "a Python kernel function"
    return (
        f"kernel={kernel!r}: ONNX's SVM operators evaluate a built-in kernel against stored support "
        f"vectors, and {what} has no ONNX equivalent"
    )


def _text_gap(est: Any) -> str | None:
    # Measured against ONNX Runtime: both conversions run but give other numbers.
    ngram_range = getattr(est, "ngram_range", (1, 1))  # TfidfTransformer has none
    if getattr(est, "analyzer", "word") == "word" and ngram_range[1] > 1:
        return (
            f"ngram_range={ngram_range}: ONNX Runtime's TfIdfVectorizer misses the n-grams that "
            "scikit-learn forms across removed tokens (stop words, one-letter words), "
            "see onnxruntime issue 4201; use unigrams"
        )
    if getattr(est, "sublinear_tf", False):
        return "sublinear_tf=True: skl2onnx's 1 + log(tf) scaling does not reproduce scikit-learn's values"
    if hasattr(est, "token_pattern"):
        from aprender.format.onnx._precision import check_token_pattern

        return check_token_pattern(est)
    return None


def _knn_gap(est: Any) -> str | None:
    if est.weights == "uniform":
        return None
    return (
        f"weights={est.weights!r}: scikit-learn gives a query equal to a training row that row's target "
        "(zero distance), while skl2onnx's graph divides by the zero distance there"
    )


def _radius_gap(est: Any) -> str:
    # Measured with ONNX Runtime 1.32 / skl2onnx 1.20: the session fails on any query with
    # a training row outside the radius; with a radius covering every row it would run.
    return (
        "skl2onnx's radius-neighbours graph marks training rows outside the radius with index -1 and "
        "passes them to ArrayFeatureExtractor, which ONNX Runtime rejects ('index is out of range') for "
        "every query that does not have all training rows within the radius"
    )


def _imputer_gap(est: Any) -> str | None:
    if not est.add_indicator:
        return None
    return "add_indicator=True: skl2onnx drops the missing-value indicator columns from the output"


def _knn_imputer_gap(est: Any) -> str:
    # Measured with ONNX Runtime 1.32 / skl2onnx 1.20, 2,000 new rows each; its probe rows had passed.
    return ("skl2onnx's KNNImputer graph computes the nan-Euclidean distances in float32 only and takes other "
            "donors: on columns of scale 1e4, 130 of 2,000 rows with a missing value were imputed otherwise (up to "
            "1.2e5 off), and with 30% of values missing ONNX Runtime fails (GatherElements index out of range); "
            "impute with SimpleImputer, or keep the KNNImputer outside the exported model")


def _calibration_gap(est: Any) -> str | None:
    if est.method == "sigmoid":
        return None
    if est.method == "isotonic":
        # Measured with ONNX Runtime 1.32 / skl2onnx 1.20: every base estimator tried, 2 and 3 classes.
        return ("method='isotonic': skl2onnx's graph of the isotonic calibrators gives other probabilities than "
                "scikit-learn's (measured: up to 0.25 off, labels changed); method='sigmoid' exports with parity")
    return f"method={est.method!r}: skl2onnx converts method='sigmoid' and 'isotonic' only"


def _categorical_gap(est: Any) -> str | None:
    # Measured with ONNX Runtime 1.32 / skl2onnx 1.20: predictions 0.245 off, labels changed.
    categorical = getattr(est, "is_categorical_", None)
    if categorical is None or not categorical.any():
        return None
    return ("categorical_features: skl2onnx's graph compares the category codes with a numeric threshold where "
            "scikit-learn's splits test membership in a set of categories (measured: predictions 0.245 off, labels "
            "changed); encode the categories in the Pipeline (OneHotEncoder, OrdinalEncoder) instead")


def _parameter_gap(est: Any) -> str | None:
    """Why an otherwise convertible estimator cannot be converted faithfully with its parameters."""
    from sklearn import calibration, ensemble, feature_extraction, impute, model_selection, neighbors, svm

    # with the estimators: importing _threshold registers its converter, which needs scikit-learn
    from aprender.format.onnx._threshold import threshold_gap

    checks = (
        ((neighbors.RadiusNeighborsClassifier, neighbors.RadiusNeighborsRegressor), _radius_gap),
        ((model_selection.TunedThresholdClassifierCV, model_selection.FixedThresholdClassifier), threshold_gap),
        ((svm.SVC, svm.NuSVC, svm.SVR, svm.NuSVR, svm.OneClassSVM), _svm_gap),
        ((feature_extraction.text.CountVectorizer, feature_extraction.text.TfidfTransformer), _text_gap),
        ((neighbors.KNeighborsClassifier, neighbors.KNeighborsRegressor), _knn_gap),
        ((impute.SimpleImputer,), _imputer_gap),
        ((impute.KNNImputer,), _knn_imputer_gap),
        ((calibration.CalibratedClassifierCV,), _calibration_gap),
        ((ensemble.HistGradientBoostingClassifier, ensemble.HistGradientBoostingRegressor), _categorical_gap),
    )
    for classes, check in checks:
        if isinstance(est, classes):
            return check(est)
    from aprender.format.onnx._boosters import booster_gap

    return booster_gap(est)


def check_exportable(model: Any) -> None:
    """Raise :class:`UnsupportedExportError` for a model that has no ONNX graph."""
    from aprender.codec._registry import entry_for_class

    for est in nested(model):
        gap = _parameter_gap(est)
        if gap is not None:
            raise UnsupportedExportError(f"{type(est).__name__} cannot be exported to ONNX: {gap}.")
        try:
            model_type = entry_for_class(type(est)).spec.model_type
        except UnsupportedTypeError:  # not on the allow-list: skl2onnx decides
            continue
        reason = UNSUPPORTED.get(model_type)
        if reason is not None:
            raise UnsupportedExportError(
                f"{type(est).__name__} cannot be exported to ONNX: {reason}."
                f"{_exportable_parts(est)} Save it as .apr, .safetensors or .gguf instead."
            )


def _exportable_parts(est: Any) -> str:
    """Point at fitted sub-estimators that do convert (a recommender's TF-IDF vectorizer)."""
    from skl2onnx._supported_operators import sklearn_operator_name_map

    sync()
    parts = sorted(
        name for name, value in vars(est).items()
        if name.endswith("_") and type(value) in sklearn_operator_name_map and _parameter_gap(value) is None
    )
    if not parts:
        return ""
    listed = ", ".join(f"model.{name}" for name in parts)
    return f" Its fitted {listed} can be exported on its own with aprender.format.onnx.to_onnx()."
