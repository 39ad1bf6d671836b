"""ContentRecommender: sensible recommendations, exact cosine scores, add_items,
SafeTensors roundtrips and hostile files."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from cases_own_models import CATALOGUE, QUERIES
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from aprender.codec import ModelState, ModelType, to_state
from aprender.exceptions import FormatError
from aprender.format import safetensors
from aprender.recommend import ContentRecommender

TEXTS, IDS = list(CATALOGUE.values()), list(CATALOGUE)


@pytest.fixture(scope="module")
def rec() -> ContentRecommender:
    return ContentRecommender().fit(TEXTS, item_ids=IDS)


# -- behaviour ---------------------------------------------------------------------


@pytest.mark.parametrize("item, best", [
    ("pasta-carbonara", "pasta-pesto"), ("green-curry", "red-curry"), ("ramen", "miso-soup"),
    ("guacamole", "tacos"), ("brownies", "chocolate-cake"),
])
def test_recommendations_are_sensible(rec, item, best) -> None:
    assert rec.recommend(item, k=1)[0][0] == best


@pytest.mark.parametrize("query, best", [
    ("cheese pasta", {"pasta-carbonara", "pasta-pesto"}), ("coconut curry with basil", {"green-curry", "red-curry"}),
    ("noodle soup", {"ramen", "miso-soup"}), ("chocolate dessert", {"brownies", "chocolate-cake"}),
])
def test_text_queries_find_the_matching_items(rec, query, best) -> None:
    assert {item for item, _ in rec.recommend_for_text(query, k=2)} == best


def test_scores_are_the_cosine_similarities_of_sklearn_tfidf(rec) -> None:
    vectors = TfidfVectorizer().fit_transform(TEXTS)
    expected = cosine_similarity(vectors)
    for row, item in enumerate(IDS):
        recommended = rec.recommend(item, k=len(IDS))
        assert item not in [i for i, _ in recommended]
        scores = [s for _, s in recommended]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        for other, score in recommended:
            assert score == pytest.approx(expected[row, IDS.index(other)], rel=1e-12)
        others = np.delete(expected[row], row)
        assert len(recommended) == np.count_nonzero(others > 1e-15)


def test_transform_and_predict(rec) -> None:
    vectorizer = TfidfVectorizer().fit(TEXTS)
    expected = cosine_similarity(vectorizer.transform(QUERIES), vectorizer.transform(TEXTS))
    np.testing.assert_allclose(rec.transform(QUERIES), expected, rtol=1e-12, atol=1e-15)
    assert rec.predict(QUERIES).tolist() == [IDS[i] for i in expected.argmax(axis=1)]


def test_k_and_no_common_term(rec) -> None:
    assert len(rec.recommend("pasta-pesto", k=2)) == 2
    assert rec.recommend_for_text("nothing in common here") == []
    with pytest.raises(ValueError, match="k must be a positive int"):
        rec.recommend("ramen", k=0)
    with pytest.raises(KeyError, match="unknown item id 'lasagne'"):
        rec.recommend("lasagne")
    with pytest.raises(TypeError, match="text must be a str"):
        rec.recommend_for_text(["noodle"])


def test_default_ids_and_tfidf_options() -> None:
    rec = ContentRecommender(stop_words="english", ngram_range=(1, 2), max_features=20).fit(TEXTS)
    assert rec.item_ids_.tolist() == list(range(len(TEXTS)))
    assert rec.item_matrix_.shape == (len(TEXTS), 20) and sp.isspmatrix_csr(rec.item_matrix_)
    assert "with" not in rec.vectorizer_.vocabulary_


def test_item_ids_are_checked() -> None:
    with pytest.raises(ValueError, match="'ramen' appears more than once"):
        ContentRecommender().fit(TEXTS, item_ids=[*IDS[:-1], "ramen"])
    with pytest.raises(ValueError, match="got 2 item ids"):
        ContentRecommender().fit(TEXTS, item_ids=[1, 2])
    with pytest.raises(ValueError, match="all integers or all strings"):
        ContentRecommender().fit(TEXTS, item_ids=np.linspace(0, 1, len(TEXTS)))
    with pytest.raises(ValueError, match="string object received"):
        ContentRecommender().fit("one text")


@pytest.mark.parametrize("call", [
    lambda r: r.recommend(0), lambda r: r.recommend_for_text("a"), lambda r: r.transform(["a"]),
    lambda r: r.predict(["a"]), lambda r: r.add_items(["a"]),
])
def test_inference_before_fit_raises(call) -> None:
    with pytest.raises(NotFittedError):
        call(ContentRecommender())


# -- add_items -----------------------------------------------------------------------


def test_add_items_keeps_the_vocabulary_and_idf() -> None:
    rec = ContentRecommender().fit(TEXTS[:8])
    vocabulary, idf = dict(rec.vectorizer_.vocabulary_), rec.vectorizer_.idf_.copy()
    rec.add_items(TEXTS[8:])
    assert rec.vectorizer_.vocabulary_ == vocabulary and np.array_equal(rec.vectorizer_.idf_, idf)
    assert rec.item_ids_.tolist() == list(range(len(TEXTS)))
    expected = rec.vectorizer_.transform(TEXTS).toarray()
    assert np.array_equal(rec.item_matrix_.toarray(), expected)
    # "sushi" (item 8) shares "japanese", "soup" and "seaweed" with the original miso soup (item 6).
    assert rec.recommend(6, k=1)[0][0] == 8


def test_add_items_ids() -> None:
    rec = ContentRecommender().fit(TEXTS[:3], item_ids=IDS[:3])
    with pytest.raises(ValueError, match="pass item_ids"):
        rec.add_items(["more pasta"])
    with pytest.raises(ValueError, match="'pasta-pesto' is already in the catalogue"):
        rec.add_items(["more pasta"], item_ids=["pasta-pesto"])
    with pytest.raises(ValueError, match="new item ids are int64"):
        rec.add_items(["more pasta"], item_ids=[7])
    rec.add_items(["baked pasta with cheese"], item_ids=["pasta-bake"])
    assert rec.recommend_for_text("pasta bake", k=1)[0][0] == "pasta-bake"


# -- storage ---------------------------------------------------------------------------


def test_state_layout(rec) -> None:
    state = to_state(rec)
    assert state.model_type == ModelType.CONTENT_RECOMMENDER
    assert set(state.tensors) == {"item_matrix_.data", "item_matrix_.indices", "item_matrix_.indptr", "vectorizer_.idf"}
    attrs = state.meta["model"]["attrs"]
    assert attrs["item_ids_"]["v"] == IDS
    assert attrs["vectorizer_"]["class"] == "sklearn.feature_extraction.text.TfidfVectorizer"


@pytest.mark.parametrize("ids", [IDS, list(range(500, 500 + len(IDS)))], ids=["str-ids", "int-ids"])
def test_safetensors_roundtrip_is_identical(ids, tmp_path) -> None:
    model = ContentRecommender(sublinear_tf=True).fit(TEXTS, item_ids=ids)
    path = tmp_path / "rec.safetensors"
    model.save_safetensors(path)
    loaded = ContentRecommender.load_safetensors(path)
    assert loaded.item_ids_.dtype == model.item_ids_.dtype
    for item in ids:
        assert loaded.recommend(item) == model.recommend(item)
    for query in QUERIES:
        assert loaded.recommend_for_text(query) == model.recommend_for_text(query)
    assert np.array_equal(loaded.transform(QUERIES), model.transform(QUERIES))
    assert safetensors.dumps(loaded) == path.read_bytes()
    new_id = "new" if isinstance(ids[0], str) else 9999
    loaded.add_items(["spicy noodle soup"], item_ids=[new_id])
    model.add_items(["spicy noodle soup"], item_ids=[new_id])
    assert loaded.recommend(new_id) == model.recommend(new_id)


# -- hostile files -----------------------------------------------------------------------


def _tamper(model: ContentRecommender, edit) -> bytes:
    state = to_state(model)
    tensors = {k: v.copy() for k, v in state.tensors.items()}
    edit(tensors, state.meta["model"])
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=state.meta))


def _attrs(edit):
    return lambda tensors, model: edit(model["attrs"])


def _shape(rows: int, cols: int):
    return _attrs(lambda a: a["item_matrix_"].__setitem__("shape", [rows, cols]))


def _drop_last_id(attrs) -> None:
    ids = attrs["item_ids_"]
    ids.update(v=ids["v"][:-1], shape=[len(ids["v"]) - 1])


HOSTILE = [
    ("indptr decreasing", lambda t, m: t["item_matrix_.indptr"].__setitem__(1, 10**6),
     r"item_matrix_.*indptr must start at 0 and never decrease"),
    ("column index past the vocabulary", lambda t, m: t["item_matrix_.indices"].__setitem__(0, 10**6),
     r"item_matrix_.*sparse indices must lie in"),
    ("more columns than idf values", _shape(14, 200), r"'item_matrix_' has shape \(14, 200\), expected \(14 items, "),
    ("more rows than item ids", _attrs(_drop_last_id), r"'item_matrix_' has shape \(14, \d+\), expected \(13 items"),
    ("duplicate item ids", _attrs(lambda a: a["item_ids_"]["v"].__setitem__(1, a["item_ids_"]["v"][0])),
     r"'item_ids_' lists an item twice"),
    ("item ids not a list of ids", _attrs(lambda a: a.__setitem__("item_ids_", 3)), r"'item_ids_' must be a 1-d array"),
    ("norm is not l2", _attrs(lambda a: a["vectorizer_"]["params"].__setitem__("norm", "l1")),
     r"'vectorizer_' must L2-normalise rows"),
    ("vectorizer replaced", _attrs(lambda a: a.__setitem__("vectorizer_", "tfidf")),
     r"'vectorizer_' must be a TfidfVectorizer, found str"),
    ("dense matrix", _attrs(lambda a: a.__setitem__("item_matrix_", 0.5)), r"'item_matrix_' must be a CSR matrix"),
    ("idf shorter than the vocabulary", lambda t, m: t.__setitem__("vectorizer_.idf", t["vectorizer_.idf"][:-1]),
     r"vectorizer_.*'idf' has \d+ values but the vocabulary has"),
]


@pytest.mark.parametrize("edit, message", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_files_raise_format_error(rec, edit, message, tmp_path) -> None:
    data = _tamper(rec, edit)
    with pytest.raises(FormatError, match=message):
        safetensors.loads(data)
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=message):
        ContentRecommender.load_safetensors(path)
