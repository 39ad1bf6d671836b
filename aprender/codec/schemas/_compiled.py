"""The reviewed audit: allow-listed classes whose fitted state reaches compiled code, and what guards it.

Each entry names an allow-listed class (its stable key), the fitted attributes that reach
Cython, C, C++ or libsvm from an inference or incremental-training method (predict,
predict_proba, decision_function, transform, inverse_transform, score_samples,
kneighbors, partial_fit, or a ``warm_start`` fit), the compiled consumer, and the check
that guards them. ``guard`` says how:

- ``"schema"``: the class's family schema validates those attributes against each other
  and against ``n_features_in_`` / the class and output counts before the estimator is
  built (the module is named in ``check``);
- ``"handler"``: the value is rebuilt by a named handler of ``aprender.codec.handlers``
  from checked fields; the class itself may be stored with the generic spec;
- ``"refused"``: a fitted instance is refused on save and on load (no class is, today).

``NESTED`` lists classes whose own arrays stay in NumPy but which hold an estimator that
reaches compiled code (that estimator is decoded, and checked, under its own entry).

tests/test_compiled_audit.py fails when a class listed with ``"schema"`` is stored with the
generic spec, when a key is not allow-listed, and when an allow-listed class of a compiled
family (neighbors, libsvm, SGD, trees, forests, NMF, k-means) is missing here;
tools/gen_threat_model.py writes this table into docs/threat-model.md.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["COMPILED", "NESTED", "Reach"]


class Reach(NamedTuple):
    """What of one class reaches compiled code, and what guards it."""

    attributes: str
    consumer: str
    guard: str  # "schema", "handler" or "refused"
    check: str  # the module (and function) that does it


_TREE = Reach("`tree_` node arrays (children, feature, threshold, value)", "`sklearn.tree._tree`", "schema",
              "`schemas/tree.py`, `trees/_sklearn_tree.py`, `trees/_structure.py`: children inside the node "
              "count, acyclic, features below `n_features_in_`, values against `n_outputs_`/`n_classes_`")
_FOREST = Reach("every tree's `tree_`", "`sklearn.tree._tree`", "schema",
                "`schemas/forests.py`: packed trees checked tree by tree as for a decision tree")
_GB = Reach("`estimators_` trees, stage array", "`sklearn.ensemble._gradient_boosting.predict_stages`", "schema",
            "`schemas/boosting.py`: one tree per stage and class, each checked as a decision tree")
_HGB = Reach("`_predictors` node records, `_bin_mapper` thresholds, categorical bitsets",
             "`sklearn.ensemble._hist_gradient_boosting._predictor`", "schema",
             "`schemas/_hgb.py`: node, feature, bin and bitset indices checked; predictors rebuilt")
_TREE_ENSEMBLE = Reach("`estimators_` trees, `estimators_features_`", "`sklearn.tree._tree`", "schema",
                       "`schemas/bagging.py`: trees checked, feature subsets inside `[0, n_features_in_)`")
_LIBSVM = Reach("`support_`, `support_vectors_`, `_n_support`, `_dual_coef_`, `_intercept_`, `_probA`/`_probB`",
                "`sklearn.svm._libsvm`, `_libsvm_sparse`", "schema",
                "`schemas/svm.py` `check_svc`/`check_svr`: support indices inside the training rows, "
                "`_n_support` one count per class summing to the vectors, every array's shape and dtype exact")
_NEIGHBORS = Reach("`_fit_X`, `n_samples_fit_`, `_tree`, `_fit_method`, metric",
                   "pairwise-distance reductions (`ArgKmin`, `RadiusNeighbors`), `KDTree`/`BallTree`", "schema",
                   "`schemas/neighbors.py`: `_fit_X` is `n_samples_fit_` x `n_features_in_`, `_fit_method` and "
                   "metric from fixed lists; the search tree's arrays (`schemas/_binary_tree.py`): the node layout "
                   "the constructor derives from the sample count and leaf size, `idx_array` a permutation of the "
                   "rows, finite bounds and radii, KD boxes ordered and nested; its data is `_fit_X`")
_NEIGHBORS_CLASSIFIER = Reach(
    "as NearestNeighbors, and `_y` class indices", "`ArgKminClassMode` / `RadiusNeighborsClassMode` (votes indexed "
    "by `_y`)", "schema", "`schemas/neighbors.py` `check_neighbors_classifier`: as NearestNeighbors, and `_y` "
    "one row per sample with every index inside its output's `classes_`")
_NEIGHBORS_REGRESSOR = Reach("as NearestNeighbors, and `_y`", _NEIGHBORS.consumer, "schema",
                             "`schemas/neighbors.py` `check_neighbors_regressor`: as NearestNeighbors, and `_y` "
                             "one row per training sample")
_SGD = Reach("`coef_`, `intercept_`/`offset_`, `_standard_coef`, `_average_coef`, `_standard_intercept`, "
             "`_average_intercept`", "`sklearn.linear_model._sgd_fast._plain_sgd` (partial_fit, warm_start fit)",
             "schema", "`schemas/sgd.py`: every weight array one row per class (one for two classes) by "
             "`n_features_in_`, every intercept array one per row")
_KMEANS = Reach("`cluster_centers_`, `_counts`", "`sklearn.cluster._k_means_lloyd`, `_k_means_minibatch`", "schema",
                "`schemas/cluster.py` `check_kmeans`: centres `n_clusters` x `n_features_in_`, one count per centre")
_NMF = Reach("`components_`, `_n_components`", "`sklearn.decomposition._cdnmf_fast` (transform, cd solver)", "schema",
             "`schemas/decomposition.py` `check_nmf`: `components_` is `_n_components` = `n_components_` rows by "
             "`n_features_in_`")
_CATBOOST = Reach("`_object`: symmetric trees (split kinds, features, border indices, depths), float-feature borders "
                  "and NaN treatments, categorical features' columns and one-hot values, CTRs (type, combination, "
                  "priors, borders) and their hash tables (uint64 keys, counts), leaf values and weights, scale and "
                  "bias, loss, class labels, training record",
                  "CatBoost's C++ model and evaluator (`_catboost`), loaded from JSON that aprender writes", "schema",
                  "`handlers/catboost_booster.py`, `schemas/_oblivious.py` and `schemas/_catboost_ctrs.py` (every "
                  "rule of each `RULES`; strings by table) before CatBoost sees anything; "
                  "`schemas/catboost_models.py`: counts against the model, loss against the estimator's role")
_XGBOOST = Reach("`_Booster` (every tree's node arrays, categorical splits, category recorder, objective, counts)",
                 "XGBoost's C++ loader and predictor (`Booster.load_model`, `inplace_predict`, `pred_leaf`)", "schema",
                 "`handlers/xgboost_booster.py` with `schemas/_xgb_structure.py` `check_booster`: children inside "
                 "each tree, acyclic, one parent each; split features below `num_feature`; finite conditions, "
                 "leaves and base score; categories increasing and below each feature's category count; tree "
                 "count whole rounds of outputs x parallel trees; objective and setting strings from tables; the "
                 "booster is rebuilt from UBJSON aprender writes; `schemas/xgboost_models.py`: the estimator's class "
                 "count and objective agree with it")
_LIGHTGBM = Reach("`_Booster`: every tree's node arrays, categorical bitsets, objective, feature infos, "
                  "`pandas_categorical`; the estimator's keyword arguments (LightGBM's predict config)",
                  "LightGBM's C++ model parser and predictor (`lightgbm.Booster(model_str=...)`)", "schema",
                  "`handlers/lightgbm_booster.py`, `schemas/_lgbm_checks.py` (the rule table below: children "
                  "acyclic and each node and leaf reached once, features below the width and of the split's kind, "
                  "finite values, bitsets within the category count, tree count per class), then LightGBM parses "
                  "only text aprender writes; `schemas/_lgbm_params.py`: every parameter on a table")
#: class key -> what reaches compiled code and what guards it.
COMPILED: dict[str, Reach] = {
    "catboost.core.CatBoostClassifier": _CATBOOST,
    "catboost.core.CatBoostRanker": _CATBOOST,
    "catboost.core.CatBoostRegressor": _CATBOOST,
    "lightgbm.sklearn.LGBMClassifier": _LIGHTGBM,
    "lightgbm.sklearn.LGBMRegressor": _LIGHTGBM,
    "lightgbm.sklearn.LGBMRanker": _LIGHTGBM,
    "sklearn.tree.DecisionTreeClassifier": _TREE,
    "sklearn.tree.DecisionTreeRegressor": _TREE,
    "sklearn.tree.ExtraTreeClassifier": _TREE,
    "sklearn.tree.ExtraTreeRegressor": _TREE,
    "sklearn.ensemble.RandomForestClassifier": _FOREST,
    "sklearn.ensemble.RandomForestRegressor": _FOREST,
    "sklearn.ensemble.ExtraTreesClassifier": _FOREST,
    "sklearn.ensemble.ExtraTreesRegressor": _FOREST,
    "sklearn.ensemble.RandomTreesEmbedding": _FOREST,
    "sklearn.ensemble.GradientBoostingClassifier": _GB,
    "sklearn.ensemble.GradientBoostingRegressor": _GB,
    "sklearn.ensemble.gradient_boosting.HistGradientBoostingClassifier": _HGB,
    "sklearn.ensemble.gradient_boosting.HistGradientBoostingRegressor": _HGB,
    "xgboost.sklearn.XGBClassifier": _XGBOOST,
    "xgboost.sklearn.XGBRFClassifier": _XGBOOST,
    "xgboost.sklearn.XGBRFRegressor": _XGBOOST,
    "xgboost.sklearn.XGBRanker": _XGBOOST,
    "xgboost.sklearn.XGBRegressor": _XGBOOST,
    "sklearn.ensemble.AdaBoostClassifier": _TREE_ENSEMBLE,
    "sklearn.ensemble.AdaBoostRegressor": _TREE_ENSEMBLE,
    "sklearn.ensemble.BaggingClassifier": _TREE_ENSEMBLE,
    "sklearn.ensemble.BaggingRegressor": _TREE_ENSEMBLE,
    "sklearn.ensemble.IsolationForest": _TREE_ENSEMBLE._replace(
        attributes="`estimators_` trees, `estimators_features_`, per-node path lengths"),
    "sklearn.svm.SVC": _LIBSVM,
    "sklearn.svm.SVR": _LIBSVM,
    "sklearn.svm.NuSVC": _LIBSVM,
    "sklearn.svm.NuSVR": _LIBSVM,
    "sklearn.svm.OneClassSVM": _LIBSVM._replace(check=_LIBSVM.check + "; one `offset_`"),
    "sklearn.neighbors.KNeighborsClassifier": _NEIGHBORS_CLASSIFIER,
    "sklearn.neighbors.RadiusNeighborsClassifier": _NEIGHBORS_CLASSIFIER,
    "sklearn.neighbors.KNeighborsRegressor": _NEIGHBORS_REGRESSOR,
    "sklearn.neighbors.RadiusNeighborsRegressor": _NEIGHBORS_REGRESSOR,
    "sklearn.neighbors.NearestNeighbors": _NEIGHBORS,
    "sklearn.neighbors.KNeighborsTransformer": _NEIGHBORS._replace(
        check=_NEIGHBORS.check + "; the graph width `_n_features_out` is `n_samples_fit_`"),
    "sklearn.neighbors.RadiusNeighborsTransformer": _NEIGHBORS._replace(
        check=_NEIGHBORS.check + "; the graph width `_n_features_out` is `n_samples_fit_`"),
    "sklearn.neighbors.LocalOutlierFactor": _NEIGHBORS._replace(
        check=_NEIGHBORS.check + "; `n_neighbors_` at most `n_samples_fit_`, `_distances_fit_X_`, `_lrd` one row "
                                 "per training sample"),
    "sklearn.neighbors.KernelDensity": Reach(
        "`tree_` (KDTree/BallTree: its data, sample weights and node arrays)", "`sklearn.neighbors._binary_tree`",
        "schema",
        "`handlers/binary_tree.py` checks the data (finite, 2-d), leaf size, metric (fixed list) and weights, then the "
        "tree's arrays as a neighbors estimator's (`schemas/_binary_tree.py`: the constructor's node layout, "
        "`idx_array` a permutation of the rows, finite bounds and radii, KD boxes ordered and nested) and restores "
        "it by its `__setstate__`; an older file without the arrays has its tree rebuilt; "
        "`schemas/neighbors.py` `check_kernel_density`: `n_features_in_` columns, positive bandwidth"),
    "sklearn.linear_model.SGDClassifier": _SGD,
    "sklearn.linear_model.SGDRegressor": _SGD,
    "sklearn.linear_model.SGDOneClassSVM": _SGD,
    "sklearn.linear_model.Perceptron": _SGD,
    "sklearn.linear_model.PassiveAggressiveClassifier": _SGD,
    "sklearn.linear_model.PassiveAggressiveRegressor": _SGD,
    "sklearn.cluster.KMeans": _KMEANS,
    "sklearn.cluster.MiniBatchKMeans": _KMEANS,
    "sklearn.cluster.hdbscan.HDBSCAN": Reach(
        "`_single_linkage_tree_` merges", "`sklearn.cluster._hdbscan._tree.labelling_at_cut` (union-find)", "schema",
        "`schemas/cluster.py` `check_hdbscan`: row `i` of a tree over `n` points names ids in `[0, n + i)`; "
        "`handlers/records.py` rebuilds the record array"),
    "sklearn.cluster.Birch": Reach(
        "`subcluster_centers_`, `_subcluster_norms` (precomputed norms), `subcluster_labels_`; the CF-tree "
        "(`root_`, `dummy_leaf_`: nodes' preallocated centroid tables, subclusters, leaf chain)",
        "pairwise-distance reductions (`ArgKmin` with `Y_norm_squared`); `partial_fit` writes the tables in place",
        "schema", "`schemas/birch.py` `check_birch`: centres `n_features_in_` wide, one finite norm and label per "
        "centre; the tree stored as flat arrays, every child a node numbered after its own and each node reached "
        "once, leaves exactly the childless nodes and the leaf chain a permutation of them, 1 to `branching_factor` "
        "subclusters per node, every value finite; rebuilt with scikit-learn's `_CFNode`/`append_subcluster`"),
    "sklearn.cluster.BisectingKMeans": Reach(
        "`_bisecting_tree` centres, `_X_mean`, `cluster_centers_`",
        "`sklearn.cluster._k_means_lloyd` (`_labels_inertia_threadpool_limit`, per tree level in predict)", "schema",
        "`schemas/bisecting.py` `check_bisecting_kmeans`: the tree stored as flat arrays, `2 n_clusters - 1` nodes, "
        "two children or none, each node reached once, leaves labelled `0 .. n_clusters - 1` once each; every "
        "centre finite, `n_features_in_` wide and of the model's dtype; rebuilt without recursion"),
    "sklearn.cluster.FeatureAgglomeration": Reach(
        "`labels_`", "`np.bincount` (transform allocates one slot per cluster id)", "schema",
        "`schemas/cluster.py` `check_feature_agglomeration`: one id per feature, inside `[0, n_clusters_)`"),
    "sklearn.decomposition.NMF": _NMF,
    "sklearn.decomposition.MiniBatchNMF": _NMF,
    "sklearn.decomposition.LatentDirichletAllocation": Reach(
        "`components_`, `exp_dirichlet_component_`", "`sklearn.decomposition._online_lda_fast` (transform, "
        "partial_fit)", "schema", "`schemas/decomposition.py` `check_lda`: both `n_components` x `n_features_in_`"),
    "sklearn.feature_extraction.DictVectorizer": Reach(
        "`vocabulary_`, `feature_names_`", "SciPy `csr_matrix(...).toarray()` (indices not checked on build)",
        "schema", "`schemas/index_maps.py` `check_dict_vectorizer`: `vocabulary_[feature_names_[i]] == i` for "
        "every column and nothing else (a permutation of the columns)"),
    "sklearn.preprocessing.MultiLabelBinarizer": Reach(
        "`_cached_dict`, `classes_`", "SciPy `csr_matrix(...).toarray()` (indices not checked on build)", "schema",
        "`schemas/index_maps.py` `check_multilabel_binarizer`: `_cached_dict` numbers `classes_` exactly"),
    "sklearn.feature_extraction.text.CountVectorizer": Reach(
        "`vocabulary_`", "SciPy sparse construction", "schema",
        "`schemas/text.py`: stored as the list of distinct terms in column order; the dict is rebuilt from it"),
    "sklearn.feature_extraction.text.TfidfVectorizer": Reach(
        "`vocabulary_`, `idf_`", "SciPy sparse construction", "schema",
        "`schemas/text.py`: vocabulary rebuilt from its terms; one `idf_` per term"),
    "sklearn.preprocessing.OneHotEncoder": Reach(
        "`categories_`, `_n_features_outs`, infrequent mappings, `drop_idx_`, `_drop_idx_after_grouping`",
        "SciPy `csr_matrix` construction", "schema",
        "`schemas/preprocessing.py` `check_one_hot_encoder`: every derived index (the infrequent grouping, "
        "both drop indices, the output widths) computed again from `categories_`, `_infrequent_indices` and "
        "`drop` with scikit-learn's own code, and compared; none is merely bounded, since the two drop indices "
        "count different sets (the fitted and the grouped categories)"),
    "sklearn.preprocessing.PolynomialFeatures": Reach(
        "`_min_degree`, `_max_degree`, `n_output_features_`, `_n_out_full`",
        "`sklearn.preprocessing._csr_polynomial_expansion` (sparse input); the dense output allocation", "schema",
        "`schemas/preprocessing.py` `check_polynomial_features`: degrees follow `degree`, both widths "
        "recounted from `n_features_in_`, at most `MAX_FEATURES`"),
    "sklearn.impute.KNNImputer": Reach(
        "`_fit_X`, `_mask_fit_X`, `_valid_mask`", "pairwise distances (`nan_euclidean`)", "schema",
        "`schemas/impute.py` `check_knn_imputer`: `_fit_X` and its mask `n_samples` x `n_features_in_`, one "
        "valid flag per feature"),
    "sklearn.isotonic.IsotonicRegression": Reach(
        "`f_` (`interp1d`)", "SciPy interpolation", "handler",
        "`handlers/interpolate.py` `interp1d`: `x` 1-d and non-decreasing, as long as `y` along its axis; rebuilt by "
        "the constructor"),
    "sklearn.preprocessing.SplineTransformer": Reach(
        "`bsplines_` (`BSpline`), `n_features_out_`", "SciPy `_bspl`; the output allocation", "schema",
        "`handlers/interpolate.py` `bspline`: degree bounded, 1-d knots, axis inside `c`; the constructor checks "
        "sorted knots and enough coefficients; `schemas/preprocessing.py` `check_spline_transformer`: one "
        "spline per feature, one width, `n_features_out_` recounted"),
}

#: class key -> (attribute, allow-listed class key of the estimator it holds, which reaches compiled code).
NESTED: dict[str, tuple[str, str]] = {
    "sklearn.manifold.Isomap": ("nbrs_", "sklearn.neighbors.NearestNeighbors"),
    "sklearn.manifold.LocallyLinearEmbedding": ("nbrs_", "sklearn.neighbors.NearestNeighbors"),
    "sklearn.semi_supervised.LabelPropagation": ("nn_fit", "sklearn.neighbors.NearestNeighbors"),
    "sklearn.semi_supervised.LabelSpreading": ("nn_fit", "sklearn.neighbors.NearestNeighbors"),
}
