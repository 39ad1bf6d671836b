"""Zoo cases for aprender's own models, NgramLm and ContentRecommender, with their texts.

The zoo compares ``score_samples`` (NgramLm: log-probability of each document) and
``predict`` / ``transform`` (ContentRecommender: best item, similarity to every item)
after each roundtrip. Both models take raw text, so scikit-learn's checks that fit
on generated numeric arrays cannot run on them: ``TEXT_INPUT_EXPECTED_FAILURES``
names those checks for tests/test_estimator_checks.py, and
tests/test_own_models_contract.py checks the same contracts on text.
"""

from __future__ import annotations

from zoo import Case

from aprender.recommend import ContentRecommender
from aprender.text import NgramLm

#: A tiny training corpus: one sentence per document.
CORPUS = [
    "The cat sat on the mat.",
    "The dog sat on the log.",
    "The cat chased the dog.",
    "The dog chased the ball.",
    "A cat likes warm milk.",
    "A dog likes a long walk.",
    "The bird sang in the tree.",
    "The bird flew over the tree.",
    "The cat watched the bird in the tree.",
    "My dog sleeps on the sofa.",
    "My cat sleeps on the bed.",
    "The children played in the park.",
    "The children fed the ducks in the park.",
    "We walked the dog in the park.",
    "It rained all day in the city.",
    "The sun came out after the rain.",
    "She reads a book every night.",
    "He reads the news every morning.",
    "The train left the station at noon.",
    "The old man fed the birds.",
]

#: Text to score: in-domain sentences, reordered words and unknown words.
HELD_OUT = [
    "The cat sat on the log.",
    "The dog sleeps on the mat.",
    "A bird likes the tree.",
    "log the on sat cat the",
    "Quantum chromodynamics is hard.",
    "",
]

#: A small catalogue: id -> description.
CATALOGUE = {
    "pasta-carbonara": "Italian pasta with eggs, cheese, pancetta and black pepper",
    "pasta-pesto": "Italian pasta with basil pesto, pine nuts and parmesan cheese",
    "pizza-margherita": "Italian pizza with tomato, mozzarella cheese and basil",
    "green-curry": "Thai green curry with chicken, coconut milk and basil",
    "red-curry": "Thai red curry with beef, coconut milk and chili",
    "pad-thai": "Thai fried rice noodles with shrimp, peanuts and lime",
    "miso-soup": "Japanese miso soup with tofu and seaweed",
    "ramen": "Japanese ramen noodle soup with pork and egg",
    "sushi": "Japanese sushi rice with raw fish and seaweed",
    "guacamole": "Mexican avocado dip with lime, chili and cilantro",
    "tacos": "Mexican corn tortillas with beef, salsa and cilantro",
    "brownies": "Chocolate brownies with walnuts",
    "chocolate-cake": "Rich chocolate layer cake with cream",
    "cheesecake": "Baked cheesecake with a biscuit base and cream cheese",
}

QUERIES = [
    "cheese pasta",
    "coconut curry with basil",
    "noodle soup",
    "chocolate dessert",
    "spicy beef",
    "nothing in common here",
]


def _fit_lm(est: NgramLm) -> tuple[NgramLm, list[str]]:
    return est.fit(CORPUS), HELD_OUT + CORPUS[:3]


def _recommender_with_added_items() -> tuple[ContentRecommender, list[str]]:
    texts = list(CATALOGUE.values())
    rec = ContentRecommender(ngram_range=(1, 2), stop_words="english", sublinear_tf=True)
    rec.fit(texts[:10], item_ids=list(range(100, 110)))
    return rec.add_items(texts[10:]), QUERIES


CASES = [
    Case("NgramLm-kneser-ney", lambda: _fit_lm(NgramLm(n=3))),
    Case("NgramLm-add-k", lambda: _fit_lm(NgramLm(n=2, smoothing="add_k", k=0.5))),
    Case("NgramLm-no-boundaries", lambda: _fit_lm(NgramLm(n=4, boundaries=False, min_count=2, discount=0.5))),
    Case("ContentRecommender", lambda: (
        ContentRecommender().fit(list(CATALOGUE.values()), item_ids=list(CATALOGUE)), QUERIES)),
    Case("ContentRecommender-added-items", _recommender_with_added_items),
]

_TEXT_INPUT = "takes raw text documents; this check fits on generated numeric arrays"
_NUMERIC_CHECKS = (
    "check_complex_data",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag",
    "check_estimators_dtypes",
    "check_estimators_empty_data_messages",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
)
_TRANSFORMER_CHECKS = (
    "check_transformer_data_not_an_array",
    "check_transformer_general",
    "check_transformer_preserve_dtypes",
)

#: sklearn checks that cannot apply to a model of text documents (by name, with the reason).
TEXT_INPUT_EXPECTED_FAILURES: dict[type, dict[str, str]] = {
    NgramLm: dict.fromkeys(_NUMERIC_CHECKS, _TEXT_INPUT),
    ContentRecommender: {
        **dict.fromkeys(_NUMERIC_CHECKS + _TRANSFORMER_CHECKS, _TEXT_INPUT),
        "check_fit_score_takes_y": _TEXT_INPUT + "; and fit's second argument is item_ids, not y",
    },
}
