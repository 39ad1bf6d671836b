"""Bounds on every size a file can state, shared by the codec and every format reader.

A file is read by code that trusts nothing in it. Whatever a header or a metadata
tree says -- a shape, a count, a string -- is checked against these limits before it
is used, so that no claim can make numpy refuse an array (more than 64 dimensions,
a size past ``intp``), make Python build a huge integer or string, or decide how much
time and memory a load costs.
"""

from __future__ import annotations

import math

from aprender.exceptions import FormatError

__all__ = ["LAYER_WIDTHS", "MAX_CLASSES", "MAX_ELEMENTS", "MAX_FEATURES", "MAX_FIT_DIMENSION", "MAX_INFERENCE_COUNT",
           "MAX_INFERENCE_COUNT_OF", "MAX_INT", "MAX_NESTED_ESTIMATORS", "MAX_UNBACKED_NAMES", "MAX_NDIM", "MIN_INT",
           "MAX_OUTPUTS", "MAX_WORK_COUNT", "checked_shape"]

#: Most dimensions a tensor may have in any format (.apr's index limit; numpy allows 64).
MAX_NDIM = 32
#: Most elements a shape may describe: 2**53 keeps every byte count (itemsize <= 8) inside int64.
MAX_ELEMENTS = 2**53
#: Range of integers accepted in a metadata tree: what int64 and uint64 can hold.
MIN_INT, MAX_INT = -(2**63), 2**64 - 1

# Counts a fitted estimator states about its input and output: scikit-learn allocates by them
# later (a tree's ``feature_importances_`` is ``n_features_in_`` doubles), so a small file must not
# claim huge ones. Every fitted estimator's state is checked against these in one place,
# ``aprender.codec._checks.check_sizes``, before its family's checks run. They are read at load
# time: to load a model wider than a default, raise the bound first, e.g.
# ``aprender._limits.MAX_FEATURES = 2**28``.

#: Most input features (``n_features_in_``) a loaded estimator may have (16,777,216).
MAX_FEATURES = 2**24
#: Most classes per output (``n_classes_``, ``len(classes_)``) a loaded estimator may have.
MAX_CLASSES = 2**24
#: Most outputs (``n_outputs_``) a loaded estimator may have.
MAX_OUTPUTS = 2**20


def checked_shape(shape: object, where: str, *, min_ndim: int = 0, min_dim: int = 0) -> tuple[int, ...]:
    """``shape`` as a tuple once it is a list of at most :data:`MAX_NDIM` bounded ints.

    Every dimension must be an ``int`` (not ``bool``) of at least ``min_dim``, and
    the product of the non-zero dimensions at most :data:`MAX_ELEMENTS`: numpy
    multiplies them even when another is zero, so ``[0, 2**62]`` is refused too.

    Examples
    --------
    >>> from aprender._limits import checked_shape
    >>> checked_shape([3, 4], "tensor 'w'")
    (3, 4)
    >>> checked_shape([0, 2**30, 2**30], "w")
    Traceback (most recent call last):
    ...
    aprender.exceptions.FormatError: w: shape [0, 1073741824, 1073741824] describes more than 2**53 elements
    """
    if (type(shape) is list or type(shape) is tuple) and min_ndim <= len(shape) <= MAX_NDIM:
        # The usual shape, every dimension a positive int: its product bounds each of them. Read on
        # every tensor of every load, so it is checked in a third of the loop below, which finds the rest.
        for d in shape:
            if type(d) is not int or d < min_dim:
                break
        else:
            if 0 < math.prod(shape) <= MAX_ELEMENTS:
                return tuple(shape)
    if not isinstance(shape, (list, tuple)) or not min_ndim <= len(shape) <= MAX_NDIM:
        raise FormatError(f"{where}: shape must be a list of {min_ndim} to {MAX_NDIM} dimensions, "
                          f"found {str(shape)[:80]}")
    total = 1
    for d in shape:
        if type(d) is not int or not min_dim <= d <= MAX_ELEMENTS:
            raise FormatError(f"{where}: invalid dimension {str(d)[:40]} in shape "
                              f"(each must be an int from {min_dim} to 2**53)")
        total *= max(d, 1)
        if total > MAX_ELEMENTS:
            raise FormatError(f"{where}: shape {str(list(shape))[:120]} describes more than 2**53 elements")
    return tuple(shape)

# Hyperparameters that count work (trees, iterations, components, steps: the ``sizes`` class of
# aprender/codec/_param_table.py) are bounded at load, so a small file cannot make a later
# ``transform`` or ``fit`` loop or allocate without end. Raise a bound before loading to accept more.

#: Largest count any ``sizes`` hyperparameter may hold (each element of a list of counts too).
MAX_WORK_COUNT = 2**24
#: ``sizes`` hyperparameters whose unbounded value ``inf`` is scikit-learn's default and costs
#: nothing unbounded: RANSAC's ``max_skips`` and ``stop_n_inliers`` (its loop is bounded by
#: ``max_trials``). The only float defaults of the table past the cap (tests/test_param_table.py).
UNBOUNDED_COUNTS = frozenset({"max_skips", "stop_n_inliers"})
#: Largest count of a ``sizes`` hyperparameter that every ``transform`` or ``predict`` call spends
#: (AdditiveChi2Sampler's ``sample_steps`` allocates an input-sized array per step): name -> bound.
MAX_INFERENCE_COUNT = {"sample_steps": 32, "max_iter_predict": 2**16, "transform_max_iter": 2**15,
                       "transform_n_nonzero_coefs": 2**20, "ngram_range": 32, "degree": 64, "patch_size": 32,
                       "max_doc_update_iter": 2**12, "n_targets": 2**12}
#: The same bound for a hyperparameter whose name other classes use only to fit: class name -> name -> bound.
#: NMF's ``transform`` reruns its solver with the fitted components held, for ``max_iter`` iterations.
MAX_INFERENCE_COUNT_OF = {"NMF": {"max_iter": 2**15}}
# Iterations a transform spends whatever the tolerance: ``tol=0`` (NMF, MiniBatchNMF) and
# ``mean_change_tol=0`` (LatentDirichletAllocation) are valid and turn the early exit off. At 2**24 a
# one-row transform of a 3 KB NMF or LDA file did not return in 30 s; measured per iteration on 20
# features, 5 components: NMF 17-50 us a call, MiniBatchNMF 68-110 us a call, LDA 15 us per document.
# At the bounds a one-row call takes about 1 s (NMF, MiniBatchNMF) and 60 ms per document (LDA);
# scikit-learn's defaults are 200 (``max_iter``, MiniBatchNMF's ``transform_max_iter``), 1000
# (DictionaryLearning's ``transform_max_iter``) and 100 (``max_doc_update_iter``). An unfitted
# GaussianProcessRegressor predicts from its prior with ``n_targets`` outputs, and its covariance
# with ``rows * rows * n_targets`` values: 2**24 asked 6.25 GiB for the means of 50 rows.
# A vectorizer's ``ngram_range`` (``(low, high)``) makes every n-gram of ``low`` to ``high`` tokens (or
# characters) at each position of each document: a document of L tokens costs about L * high strings of
# up to ``high`` tokens each. A 832-byte file with (1, 5000) spent over 40 s on a 9 KB document; a
# character analyzer at (1, 20000) reached 2.4 GB on 20,000 characters. Real ranges stop near 10.
# PolynomialCountSketch allocates ``rows * degree * n_components`` doubles at every transform (2**24 asked
# 25 GiB for 20 rows), PolynomialFeatures makes the products of up to ``degree`` features; kernels of
# degree past a few dozen are not used. PatchExtractor's ``patch_size`` (h, w) makes every transform return
# about h * w values per input pixel: (150, 150) asked 3.8 GiB for one 300x300 image.

#: Most feature names ``get_feature_names_out`` may make from a width no stored array carries. A stateless
#: transformer (Normalizer, FunctionTransformer, AdditiveChi2Sampler, a ColumnTransformer's input) stores its
#: width as one int, and names its features ``x0, x1, ...`` from it on every call, with no input to pay for
#: them: a 336-byte Normalizer file at ``n_features_in_ = 2**24`` made ``get_feature_names_out()`` take 17 s and
#: 1.4 GB (AdditiveChi2Sampler, three names per feature: a MemoryError at 2 GB). 2**21 names take 0.8 s and
#: 130 MB; a wider model stores arrays that wide (a scaler's ``mean_``), or ``feature_names_in_``, and loads.
MAX_UNBACKED_NAMES = 2**21

#: Most estimators a file may nest one inside another, the innermost included (aprender/codec/_nesting.py):
#: each level of meta-estimator multiplies the tag lookups of every call about threefold. Measured on chains of
#: Pipelines: 8 levels spend 0.1 s per ``transform``, 10 levels 0.7 s, 13 levels 30 s. Real models nest a
#: search, a stack or a pipeline, a ColumnTransformer, a pipeline and a transformer: 5 or 6.
MAX_NESTED_ESTIMATORS = 8

#: Largest value of a ``sizes`` hyperparameter that a fit turns into an array dimension beside the
#: input's own (each element of a list too): name -> bound. ``MAX_WORK_COUNT`` bounds how long a loop
#: runs; these size what a refit allocates, about the bound times the data's width in doubles.
#: Measured refits of a 20-row model at 2**24: RBFSampler asked 8 GiB for 64 features,
#: GaussianRandomProjection 25 GiB for 200, KBinsDiscretizer spent 16 s and 1.6 GB, SplineTransformer asked
#: 2 PiB (its design is quadratic in ``n_knots``), an MLP at (2**14, 2**14) 2 GiB per layer.
MAX_FIT_DIMENSION = {"n_components": 2**16, "n_bins": 2**16, "n_knots": 2**10, "hidden_layer_sizes": 2**12}
#: ``sizes`` hyperparameters that list the widths of consecutive layers: the weights a fit allocates are
#: the sum of neighbouring widths' products, at most ``MAX_WORK_COUNT`` (a file-sized list of 4,096-wide
#: layers would otherwise be 16M weights per layer).
LAYER_WIDTHS = frozenset({"hidden_layer_sizes"})

#: Largest magnitude of the regularization scales that libsvm and liblinear iterate with
#: (``C``, each of LogisticRegressionCV's ``Cs``, ``intercept_scaling``): name -> bound. Past
#: about 1e50-1e100 liblinear's dual solvers never return (measured on iris and a synthetic
#: problem: LinearSVC at C=1e100 and intercept_scaling=1e80, LogisticRegression(liblinear) at
#: C=1e100); scikit-learn's gallery searches C up to 1e10. libsvm's fit time grows with C below
#: the bound too (SVR at C=1e10 runs for minutes): a refit cost, like a count of work.
#: TSNE's ``early_exaggeration`` and ``learning_rate`` multiply into its float32 Barnes-Hut
#: positions: at 1e50 each, or 1e25 both, a refit crashes (SIGSEGV); 1e12 keeps their product far
#: inside float32, and every real learning rate (boosting's too) far below.
MAX_SOLVER_SCALE = {"C": 1e30, "Cs": 1e30, "intercept_scaling": 1e30, "early_exaggeration": 1e12,
                    "learning_rate": 1e12}
