"""Text vectorizers, encoders, scalers and imputers: layout, exact roundtrips, hostile files."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import safetensors.numpy as official
from cases_pipelines import CORPUS, categorical, texts, with_missing
from sklearn import feature_extraction as sk_fe
from sklearn import preprocessing as sk_pre
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from state_edit import find, hostile
from zoo import assert_identical_outputs, diabetes, iris

import aprender
from aprender.codec import ModelType, from_state, to_state
from aprender.exceptions import ModelTypeMismatch, UnsupportedTypeError, UntrustedFunctionError
from aprender.feature_extraction.text import CountVectorizer, TfidfVectorizer
from aprender.impute import SimpleImputer
from aprender.preprocessing import LabelEncoder, MinMaxScaler, OneHotEncoder


def _roundtrip(model, tmp_path, expected=None):
    path = tmp_path / "model.safetensors"
    aprender.save(model, path)
    return aprender.load(path, expected), path


def _meta(path) -> dict:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(json.loads(raw[8 : 8 + n])["__metadata__"]["aprender"])


# -- text vectorizers ---------------------------------------------------------------


def test_tfidf_layout_idf_tensor_and_vocabulary_in_metadata(tmp_path) -> None:
    vec = TfidfVectorizer().fit(CORPUS)
    loaded, path = _roundtrip(vec, tmp_path)
    tensors = official.load_file(str(path))
    assert list(tensors) == ["idf"]
    assert tensors["idf"].dtype == np.float64 and np.array_equal(tensors["idf"], vec.idf_)
    meta = _meta(path)
    assert meta["model_type"] == ModelType.TFIDF
    attrs = meta["model"]["attrs"]
    assert attrs["vocabulary_"] == list(vec.get_feature_names_out())  # terms in column order
    assert "_stop_words_id" not in attrs  # a process-local id() is never written
    assert loaded.vocabulary_ == vec.vocabulary_
    assert np.array_equal(loaded.idf_, vec.idf_)


def test_count_vectorizer_has_no_tensors_and_model_type(tmp_path) -> None:
    vec = CountVectorizer(ngram_range=(1, 2)).fit(CORPUS)
    loaded, path = _roundtrip(vec, tmp_path, ModelType.COUNT_VECTORIZER)
    assert _meta(path)["model_type"] == ModelType.COUNT_VECTORIZER
    assert official.load_file(str(path)) == {}
    assert type(loaded) is CountVectorizer and loaded.vocabulary_ == vec.vocabulary_
    assert_identical_outputs(vec, loaded, texts())
    assert np.array_equal(loaded.get_feature_names_out(), vec.get_feature_names_out())


@pytest.mark.parametrize("params", [
    {"vocabulary": ["oven", "rocket", "sun"]},
    {"vocabulary": {"sun": 0, "oven": 2, "rocket": 1}},
    {"stop_words": ["the", "and"], "lowercase": False, "token_pattern": r"(?u)\b\w+\b"},
    {"max_features": 7, "norm": None, "smooth_idf": False, "dtype": np.float32},
])
def test_tfidf_parameter_variants_roundtrip_exactly(params, tmp_path) -> None:
    vec = TfidfVectorizer(**params).fit(CORPUS)
    loaded, _ = _roundtrip(vec, tmp_path)
    assert loaded.get_params() == vec.get_params()
    assert loaded.vocabulary_ == vec.vocabulary_ and loaded.fixed_vocabulary_ == vec.fixed_vocabulary_
    assert_identical_outputs(vec, loaded, texts())


def test_tfidf_keeps_the_fit_time_transformer_settings(tmp_path) -> None:
    # set_params after fit leaves sklearn's inner transformer as fitted: so must a reload.
    vec = TfidfVectorizer().fit(CORPUS).set_params(norm="l1")
    loaded, _ = _roundtrip(vec, tmp_path)
    assert loaded.norm == "l1" and loaded._tfidf.norm == "l2"
    assert_identical_outputs(vec, loaded, texts())


def test_plain_sklearn_tfidf_loads_as_aprender_when_asked(tmp_path) -> None:
    vec = sk_fe.text.TfidfVectorizer().fit(CORPUS)
    path = tmp_path / "sk.safetensors"
    aprender.save(vec, path)
    assert type(aprender.load(path)) is sk_fe.text.TfidfVectorizer
    loaded = TfidfVectorizer.load_safetensors(path)
    assert type(loaded) is TfidfVectorizer
    assert_identical_outputs(vec, loaded, texts())
    with pytest.raises(ModelTypeMismatch, match="expected CountVectorizer"):
        CountVectorizer.load_safetensors(path)


def test_loaded_vectorizer_refits(tmp_path) -> None:
    vec = TfidfVectorizer().fit(CORPUS[:8])
    loaded, _ = _roundtrip(vec, tmp_path)
    refit, fresh = loaded.fit(CORPUS), TfidfVectorizer().fit(CORPUS)
    assert refit.vocabulary_ == fresh.vocabulary_ and np.array_equal(refit.idf_, fresh.idf_)


def test_builtin_method_tokenizer_is_stored_by_name_and_loads_only_when_trusted() -> None:
    vec = CountVectorizer(tokenizer=str.split, token_pattern=None).fit(CORPUS)
    state = to_state(vec)
    assert state.meta["model"]["params"]["tokenizer"] == {"__t__": "function", "name": "builtins.str.split"}
    with pytest.raises(UntrustedFunctionError, match="'tokenizer'"):
        from_state(state)
    loaded = from_state(state, trusted=[str.split])
    assert loaded.tokenizer is str.split and (loaded.transform(CORPUS) != vec.transform(CORPUS)).nnz == 0


def test_lambda_tokenizer_is_refused_with_its_path() -> None:
    vec = CountVectorizer(tokenizer=lambda doc: doc.split(), token_pattern=None).fit(CORPUS)
    with pytest.raises(UnsupportedTypeError, match="'tokenizer'"):
        to_state(vec)


@pytest.mark.parametrize("cls", [CountVectorizer, TfidfVectorizer, LabelEncoder])
def test_text_and_label_estimators_follow_the_sklearn_api(cls) -> None:
    # sklearn's check_estimator skips estimators whose input is not a 2-D array
    # (text documents, label vectors): the API contract is checked here instead.
    X = CORPUS if cls is not LabelEncoder else np.array(["b", "a", "c", "a"])
    est = cls()
    with pytest.raises(NotFittedError):
        est.transform(X)
    assert est.fit(X) is est
    twin = clone(est)
    assert twin.get_params() == est.get_params() and not hasattr(twin, "vocabulary_")
    assert type(twin) is cls and twin.set_params(**est.get_params()) is twin
    with pytest.raises(NotFittedError):
        to_state(cls())


# -- encoders, scalers, imputers -----------------------------------------------------


def test_label_encoder_inverse_transform_and_dtypes(tmp_path) -> None:
    labels = np.array(["setosa", "versicolor", "virginica"])[iris()[1]]
    enc = LabelEncoder().fit(labels)
    loaded, path = _roundtrip(enc, tmp_path, ModelType.ENCODER)
    assert loaded.classes_.dtype == enc.classes_.dtype
    assert np.array_equal(loaded.inverse_transform([2, 0, 1]), enc.inverse_transform([2, 0, 1]))
    assert official.load_file(str(path)) == {}  # string labels live in metadata
    ints = LabelEncoder().fit(iris()[1] * 10)
    loaded, path = _roundtrip(ints, tmp_path)
    assert official.load_file(str(path))["classes_"].dtype == ints.classes_.dtype
    assert np.array_equal(loaded.inverse_transform([0, 2]), ints.inverse_transform([0, 2]))


def test_one_hot_encoder_inverse_and_feature_names(tmp_path) -> None:
    enc = OneHotEncoder(drop="if_binary", handle_unknown="ignore").fit(categorical())
    loaded, _ = _roundtrip(enc, tmp_path)
    codes = enc.transform(categorical())
    assert np.array_equal(loaded.inverse_transform(codes), enc.inverse_transform(codes))
    assert np.array_equal(loaded.get_feature_names_out(["size", "shape"]), enc.get_feature_names_out(["size", "shape"]))
    unknown = np.array([["huge", "long"]], dtype=object)
    with pytest.warns(UserWarning, match="unknown categories"):
        assert np.array_equal(loaded.transform(unknown).toarray(), enc.transform(unknown).toarray())


def test_numeric_categories_are_tensors(tmp_path) -> None:
    enc = sk_pre.OneHotEncoder().fit(np.round(iris()[0][:, :2]))
    _, path = _roundtrip(enc, tmp_path)
    tensors = official.load_file(str(path))
    assert sorted(tensors) == ["categories_.0", "categories_.1"]
    assert np.array_equal(tensors["categories_.1"], enc.categories_[1])


def test_min_max_scaler_inverse_transform(tmp_path) -> None:
    X, _ = diabetes()
    scaler = MinMaxScaler(feature_range=(-2, 3)).fit(X)
    loaded, path = _roundtrip(scaler, tmp_path, ModelType.SCALER)
    assert sorted(official.load_file(str(path))) == ["data_max_", "data_min_", "data_range_", "min_", "scale_"]
    assert np.array_equal(loaded.inverse_transform(X), scaler.inverse_transform(X))


def test_simple_imputer_keeps_nan_marker_and_dtypes(tmp_path) -> None:
    imp = SimpleImputer(strategy="median", add_indicator=True).fit(with_missing(iris()[0]))
    loaded, path = _roundtrip(imp, tmp_path, ModelType.IMPUTER)
    assert np.isnan(loaded.missing_values) and loaded._fit_dtype == imp._fit_dtype
    assert sorted(official.load_file(str(path))) == ["indicator_.features_", "statistics_"]
    X = with_missing(iris()[0][::-1])
    assert np.array_equal(loaded.transform(X), imp.transform(X))


def test_wrong_family_is_refused(tmp_path) -> None:
    path = tmp_path / "scaler.safetensors"
    aprender.save(MinMaxScaler().fit(iris()[0]), path)
    with pytest.raises(ModelTypeMismatch, match="expected ENCODER"):
        aprender.load(path, ModelType.ENCODER)


# -- hostile files -------------------------------------------------------------------


def _tfidf():
    return TfidfVectorizer().fit(CORPUS)


def test_idf_shorter_than_the_vocabulary(tmp_path) -> None:
    def edit(meta, tensors):
        tensors["idf"] = tensors["idf"][:-1].copy()

    vec = _tfidf()
    n = len(vec.vocabulary_)
    assert f"'idf' has {n - 1} values but the vocabulary has {n} terms" in str(hostile(vec, edit, tmp_path))


def test_idf_tensor_missing(tmp_path) -> None:
    def edit(meta, tensors):
        del meta["model"]["attrs"]["idf"], tensors["idf"]

    assert "uses idf but the tensor 'idf' is missing" in str(hostile(_tfidf(), edit, tmp_path))


def test_vocabulary_term_twice(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["vocabulary_"][1] = meta["model"]["attrs"]["vocabulary_"][0]

    assert "'vocabulary_' lists a term twice" in str(hostile(CountVectorizer().fit(CORPUS), edit, tmp_path))


@pytest.mark.parametrize(("analyzer", "ngram_range", "term", "allowed"), [
    ("char", (2, 4), "a" * 100_000, "2 to 4"),  # one term as wide as a page: inverse_transform's arrays widen with it
    ("char", (2, 4), "a", "2 to 4"),
    ("char_wb", (3, 5), "abcdef", "1 to 5"),
])
def test_character_vocabulary_term_the_analyzer_cannot_make(analyzer, ngram_range, term, allowed, tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["vocabulary_"][0] = term

    model = TfidfVectorizer(analyzer=analyzer, ngram_range=ngram_range).fit(CORPUS)
    assert f"only makes terms of {allowed} characters" in str(hostile(model, edit, tmp_path))


@pytest.mark.parametrize("analyzer", ["char", "char_wb"])
def test_character_vocabularies_of_every_length_load(analyzer, tmp_path) -> None:
    for ngram_range in [(1, 1), (2, 4), (5, 5)]:
        model = CountVectorizer(analyzer=analyzer, ngram_range=ngram_range).fit([*CORPUS, "a", "i x"])
        assert _roundtrip(model, tmp_path)[0].vocabulary_ == model.vocabulary_


def test_a_fitted_vocabulary_claiming_to_be_given(tmp_path) -> None:  # which would skip the term lengths
    def edit(meta, tensors):
        meta["model"]["attrs"]["fixed_vocabulary_"] = True

    model = CountVectorizer(analyzer="char").fit(CORPUS)
    assert "'fixed_vocabulary_' disagrees with the 'vocabulary' parameter" in str(hostile(model, edit, tmp_path))


def test_a_given_vocabulary_of_long_terms_loads(tmp_path) -> None:  # the user's terms, not the analyzer's
    model = CountVectorizer(analyzer="char", ngram_range=(1, 2), vocabulary=["a" * 50, "b"]).fit(CORPUS)
    assert _roundtrip(model, tmp_path)[0].vocabulary_ == model.vocabulary_


def test_vocabulary_with_out_of_range_indices(tmp_path) -> None:
    def edit(meta, tensors):  # a term -> index map pointing past the idf vector
        terms = meta["model"]["attrs"]["vocabulary_"]
        meta["model"]["attrs"]["vocabulary_"] = {"__t__": "dict", "items": [[t, i + 100] for i, t in enumerate(terms)]}

    assert "'vocabulary_' must be a list of terms" in str(hostile(_tfidf(), edit, tmp_path))


def test_inner_transformer_size_disagrees(tmp_path) -> None:
    def edit(meta, tensors):
        find(meta, "TfidfTransformer")["attrs"]["n_features_in_"] = 3

    assert "'_tfidf' was fitted on 3 features" in str(hostile(_tfidf(), edit, tmp_path))


@pytest.mark.parametrize(("pattern", "message"), [
    ("(a)(b)", "at most one capturing group"),
    ("([a-z]", "not a valid regular expression"),
])
def test_token_pattern_checked_at_load(pattern, message, tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["params"]["token_pattern"] = pattern

    assert message in str(hostile(CountVectorizer().fit(CORPUS), edit, tmp_path))


def test_one_hot_categories_for_too_few_features(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["categories_"].pop()

    error = hostile(OneHotEncoder().fit(categorical()), edit, tmp_path)
    assert "'categories_' must hold one entry per feature (2)" in str(error)


def test_one_hot_output_width_inconsistent_with_categories(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["_n_features_outs"][0] -= 1

    error = hostile(OneHotEncoder().fit(categorical()), edit, tmp_path)
    assert "'_n_features_outs' is [3, 3], categories_ give [4, 3]" in str(error)


def test_one_hot_numeric_categories_unsorted(tmp_path) -> None:
    def edit(meta, tensors):
        tensors["categories_.0"] = tensors["categories_.0"][::-1].copy()

    error = hostile(OneHotEncoder().fit(np.round(iris()[0][:, :2])), edit, tmp_path)
    assert "'categories_.0' must be sorted and free of duplicates" in str(error)


def test_one_hot_drop_index_out_of_range(tmp_path) -> None:
    def edit(meta, tensors):
        for name in ("drop_idx_", "_drop_idx_after_grouping"):
            meta["model"]["attrs"][name]["v"][1] = 9

    error = hostile(OneHotEncoder(drop="first").fit(categorical()), edit, tmp_path)
    assert "'_drop_idx_after_grouping' is not what drop='first' and categories_ give" in str(error)


def _grouped_encoder(drop: str | None) -> OneHotEncoder:
    """Feature 0 has categories a..e with c, d and e infrequent: 5 categories, 3 after grouping."""
    X = np.array([["a"] * 6 + ["b"] * 6 + ["c", "d", "e"]], dtype=object).T
    return OneHotEncoder(min_frequency=3, drop=drop, handle_unknown="infrequent_if_exist").fit(X)


@pytest.mark.parametrize("drop", ["first", "if_binary", None])
@pytest.mark.parametrize("name", ["_drop_idx_after_grouping", "drop_idx_"])
def test_one_hot_drop_index_checked_against_the_grouped_count(drop, name, tmp_path) -> None:
    """A drop index inside the 5 fitted categories but past the 3 grouped ones is derived again, not bounded."""
    def edit(meta, tensors):
        attrs = meta["model"]["attrs"]
        attrs[name] = {"__t__": "objarray", "shape": [1], "v": [4]}

    error = hostile(_grouped_encoder(drop), edit, tmp_path)
    assert f"'{name}' is not what drop=" in str(error)


def test_one_hot_grouped_encoder_roundtrips(tmp_path) -> None:
    enc = _grouped_encoder("first")
    path = tmp_path / "enc.safetensors"
    aprender.save(enc, path)
    X = np.array([["a"], ["c"], ["e"], ["b"]], dtype=object)
    assert (aprender.load(path).transform(X) != enc.transform(X)).nnz == 0


def test_one_hot_infrequent_mapping_out_of_range(tmp_path) -> None:
    def edit(meta, tensors):
        tensors["_default_to_infrequent_mappings.0"] = tensors["_default_to_infrequent_mappings.0"] + 5

    enc = OneHotEncoder(min_frequency=5, handle_unknown="infrequent_if_exist").fit(categorical())
    error = hostile(enc, edit, tmp_path)
    assert "'_default_to_infrequent_mappings.0' is not the grouping that '_infrequent_indices.0' gives" in str(error)


def test_label_encoder_classes_unsorted(tmp_path) -> None:
    def edit(meta, tensors):
        tensors["classes_"] = np.array([2, 0, 1])

    error = hostile(LabelEncoder().fit(iris()[1]), edit, tmp_path)
    assert "'classes_' must be sorted and free of duplicates" in str(error)


def test_min_max_scaler_wrong_width(tmp_path) -> None:
    def edit(meta, tensors):
        tensors["scale_"] = tensors["scale_"][:2].copy()

    error = hostile(MinMaxScaler().fit(iris()[0]), edit, tmp_path)
    assert "'scale_' has shape (2,); axis 0 must be 4" in str(error)


def test_imputer_fit_dtype_not_allowed(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["_fit_dtype"]["v"] = "V16"

    error = hostile(SimpleImputer().fit(with_missing(iris()[0])), edit, tmp_path)
    assert "dtype 'V16' is not allowed" in str(error)


def test_missing_indicator_feature_out_of_range(tmp_path) -> None:
    def edit(meta, tensors):
        tensors["indicator_.features_"] = np.array([0, 9])

    error = hostile(SimpleImputer(add_indicator=True).fit(with_missing(iris()[0])), edit, tmp_path)
    assert "'features_' must be distinct column indices in [0, 4)" in str(error)


def test_imputer_statistics_not_castable_to_fill_dtype(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["statistics_"] = {"__t__": "objarray", "shape": [4], "v": ["a", "b", "c", "d"]}
        del tensors["statistics_"]

    error = hostile(SimpleImputer().fit(with_missing(iris()[0])), edit, tmp_path)
    assert "'statistics_' cannot be cast to the fill dtype float64" in str(error)


def test_imputer_statistics_wrong_length(tmp_path) -> None:
    def edit(meta, tensors):
        tensors["statistics_"] = np.zeros(7)

    error = hostile(SimpleImputer().fit(with_missing(iris()[0])), edit, tmp_path)
    assert "'statistics_' has shape (7,)" in str(error)
