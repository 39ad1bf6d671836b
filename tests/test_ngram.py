"""NgramLm: hand-checked add-k, Kneser-Ney against a from-the-definition reference,
proper distributions, generation, SafeTensors roundtrips and hostile files."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest
from cases_own_models import CORPUS, HELD_OUT
from sklearn.exceptions import NotFittedError

from aprender.codec import ModelState, ModelType, to_state
from aprender.exceptions import FormatError
from aprender.format import safetensors
from aprender.text import NgramLm

SETTINGS = [
    {"n": 1}, {"n": 2}, {"n": 3}, {"n": 4, "discount": 0.4},
    {"n": 3, "boundaries": False}, {"n": 3, "min_count": 2},
    {"n": 1, "smoothing": "add_k"}, {"n": 2, "smoothing": "add_k", "k": 0.5},
    {"n": 3, "smoothing": "add_k", "k": 2.0}, {"n": 2, "smoothing": "add_k", "boundaries": False},
]


@pytest.fixture(scope="module")
def lm() -> NgramLm:
    return NgramLm(n=3).fit(CORPUS)


# -- add-k: probabilities checked by hand -------------------------------------------


def test_add_k_bigram_probabilities_by_hand() -> None:
    # Outcomes: <unk>, </s>, a, b, c (5). After "a": b once, c once, 2 in all.
    lm = NgramLm(n=2, smoothing="add_k", k=1.0).fit(["a b", "a c"])
    assert lm.vocabulary_.tolist() == ["<unk>", "</s>", "<s>", "a", "b", "c"]
    assert dict(lm.predict_next("a", k=None)) == pytest.approx(
        {"b": 2 / 7, "c": 2 / 7, "<unk>": 1 / 7, "</s>": 1 / 7, "a": 1 / 7}, rel=1e-15
    )
    # <s> -> a (2 of 2), a -> b (1 of 2), b -> </s> (1 of 1)
    expected = math.log(3 / 7) + math.log(2 / 7) + math.log(2 / 6)
    assert lm.score_samples(["a b"])[0] == pytest.approx(expected, rel=1e-15)
    assert lm.score(["a b"]) == pytest.approx(expected / 3, rel=1e-15)
    assert lm.perplexity(["a b"]) == pytest.approx(math.exp(-expected / 3), rel=1e-15)


def test_add_k_uses_k_and_unseen_context_is_uniform() -> None:
    lm = NgramLm(n=2, smoothing="add_k", k=0.5).fit(["a b", "a c"])
    assert dict(lm.predict_next("a", k=None))["b"] == pytest.approx(1.5 / (2 + 0.5 * 5), rel=1e-15)
    # "zzz" is <unk>, a context never seen in training: every outcome gets 1/5.
    assert [p for _, p in lm.predict_next("zzz", k=None)] == pytest.approx([0.2] * 5, rel=1e-15)


def test_unknown_words_score_as_unk() -> None:
    lm = NgramLm(n=2, smoothing="add_k").fit(["a b"])
    assert lm.score_samples(["a qqq"])[0] == lm.score_samples(["a zzz"])[0]


# -- Kneser-Ney ------------------------------------------------------------------------


def _reference_kn(train: list[list[str]], n: int, D: float, boundaries: bool):
    """Interpolated Kneser-Ney written straight from its definition, on tuples and dicts."""
    frame = (lambda t: ["<s>", *t, "</s>"]) if boundaries else (lambda t: list(t))
    raw: Counter = Counter()
    for tokens in train:
        seq, first = frame(tokens), 1 if boundaries else 0
        for i in range(first, len(seq)):
            for m in range(1, min(n, i + 1) + 1):
                raw[tuple(seq[i - m + 1 : i + 1])] += 1
    left: Counter = Counter(gram[1:] for gram in raw if len(gram) > 1)

    def adjusted(gram: tuple) -> int:
        if len(gram) == n or gram[0] == "<s>":
            return raw[gram]
        return left[gram]

    vocab = {"<unk>"} | {t for tokens in train for t in frame(tokens)}
    outcomes = len(vocab - {"<s>"})

    def proba(w: str, h: tuple) -> float:
        lower = 1 / outcomes if not h else proba(w, h[1:])
        grams = [g for g in raw if len(g) == len(h) + 1 and g[:-1] == h]
        total = sum(adjusted(g) for g in grams)
        if total == 0:
            return lower if h else 1 / outcomes
        types = sum(adjusted(g) > 0 for g in grams)
        return max(adjusted((*h, w)) - D, 0) / total + D * types / total * lower

    def log_likelihood(tokens: list[str]) -> float:
        known = [t if t in vocab else "<unk>" for t in tokens]
        seq, first = frame(known), 1 if boundaries else 0
        return sum(math.log(proba(seq[i], tuple(seq[max(0, i - n + 1) : i]))) for i in range(first, len(seq)))

    return log_likelihood


@pytest.mark.parametrize("n, discount, boundaries", [(1, 0.75, True), (2, 0.75, True), (3, 0.75, True),
                                                     (4, 0.3, True), (3, 1.0, False)])
def test_kneser_ney_matches_reference(n, discount, boundaries) -> None:
    lm = NgramLm(n=n, discount=discount, boundaries=boundaries).fit(CORPUS)
    tokenize = re.compile(lm.token_pattern).findall
    reference = _reference_kn([tokenize(t.lower()) for t in CORPUS], n, discount, boundaries)
    texts = HELD_OUT + CORPUS[:4]
    expected = [reference(tokenize(t.lower())) for t in texts]
    np.testing.assert_allclose(lm.score_samples(texts), expected, rtol=1e-12)


def test_kneser_ney_continuation_counts() -> None:
    # "francisco" is as frequent as "glasses" but only ever follows "san": as a
    # continuation of an unseen context it must be much less likely.
    texts = ["san francisco"] * 4 + ["my glasses", "his glasses", "new glasses", "red glasses"]
    lm = NgramLm(n=2).fit(texts)
    after_unseen = dict(lm.predict_next("zebra", k=None))
    assert after_unseen["glasses"] > 2 * after_unseen["francisco"]
    assert lm.predict_next("san", k=1)[0][0] == "francisco"


def test_kneser_ney_in_domain_text_has_lower_perplexity(lm) -> None:
    in_domain = ["The cat sat on the log.", "The dog sleeps on the mat."]
    scrambled = ["log the on sat cat the", "mat the dog on sleeps"]
    assert lm.perplexity(in_domain) < lm.perplexity(scrambled) / 5
    assert lm.perplexity(in_domain) < NgramLm(n=3, smoothing="add_k").fit(CORPUS).perplexity(in_domain)


@pytest.mark.parametrize("params", SETTINGS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_every_context_gives_a_proper_distribution(params) -> None:
    lm = NgramLm(**params).fit(CORPUS)
    contexts = ["", "the", "the cat", "cat sat on the", "in the", "unknown words here", "the zzz", "."]
    for context in contexts:
        distribution = lm.predict_next(context, k=None)
        tokens = [t for t, _ in distribution]
        probabilities = np.array([p for _, p in distribution])
        assert sorted(tokens) == sorted(set(lm.vocabulary_) - {"<s>"})
        assert np.all(probabilities > 0)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)


def test_min_count_gives_unk_a_learned_probability() -> None:
    lm = NgramLm(n=2, min_count=2).fit(CORPUS)
    assert "ducks" not in lm.vocabulary_ and "the" in lm.vocabulary_
    plain = NgramLm(n=2).fit(CORPUS)
    assert dict(lm.predict_next("the", k=None))["<unk>"] > 10 * dict(plain.predict_next("the", k=None))["<unk>"]


# -- tokenizer and inputs -----------------------------------------------------------------


def test_tokenizer_options() -> None:
    assert "The" in NgramLm(lowercase=False).fit(["The cat."]).vocabulary_
    assert NgramLm(token_pattern=r"\S+").fit(["Hi, you!"]).vocabulary_.tolist()[3:] == ["hi,", "you!"]
    assert NgramLm(boundaries=False).fit(["a b"]).vocabulary_.tolist() == ["<unk>", "a", "b"]
    with pytest.raises(ValueError, match="not a valid regular expression"):
        NgramLm(token_pattern="(").fit(["a"])


def test_fit_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="string object received"):
        NgramLm().fit("the cat sat")
    with pytest.raises(ValueError, match="at least one document"):
        NgramLm().fit([])
    with pytest.raises(ValueError, match="document 1 is a int"):
        NgramLm().fit(["a", 3])
    with pytest.raises(ValueError, match="smoothing"):
        NgramLm(smoothing="witten_bell").fit(["a"])
    with pytest.raises(ValueError, match="discount"):
        NgramLm(discount=1.5).fit(["a"])


@pytest.mark.parametrize("call", [
    lambda m: m.predict_next("a"), lambda m: m.score(["a"]), lambda m: m.score_samples(["a"]),
    lambda m: m.perplexity(["a"]), lambda m: m.generate("a"),
])
def test_inference_before_fit_raises(call) -> None:
    with pytest.raises(NotFittedError):
        call(NgramLm())


def test_predict_next_ranks_and_validates_k(lm) -> None:
    top = lm.predict_next("we walked the", k=3)
    assert top[0][0] == "dog" and len(top) == 3
    assert [p for _, p in top] == sorted((p for _, p in top), reverse=True)
    with pytest.raises(ValueError, match="k must be a positive int"):
        lm.predict_next("the", k=0)


# -- generation ----------------------------------------------------------------------------


def test_generate_is_deterministic_with_a_seed(lm) -> None:
    runs = [lm.generate("the", max_tokens=15, random_state=seed) for seed in (0, 0, 1, 2, 3)]
    assert runs[0] == runs[1]
    assert len(set(runs[1:])) > 1
    rng_run = lm.generate("the", max_tokens=15, random_state=np.random.RandomState(0))
    assert rng_run == runs[0]
    assert all(r.startswith("the") and "<unk>" not in r and "</s>" not in r for r in runs)


def test_generate_stops_at_end_or_max_tokens() -> None:
    lm = NgramLm(n=2, smoothing="add_k", k=1e-9).fit(["one two three"])
    assert lm.generate("one", max_tokens=10, random_state=0) == "one two three"
    assert lm.generate("one", max_tokens=1, random_state=0) == "one two"
    assert lm.generate("one", max_tokens=0) == "one"
    no_end = NgramLm(n=2, boundaries=False).fit(["one two three"])
    assert len(no_end.generate("", max_tokens=7, random_state=0).split()) == 7


# -- storage ------------------------------------------------------------------------------


def test_state_layout(lm) -> None:
    state = to_state(lm)
    assert state.model_type == ModelType.NGRAM_LM
    expected = {f"{name}.{i}" for name in ("offsets_", "next_ids_", "counts_") for i in range(3)}
    expected |= {f"{name}.{i}" for name in ("context_parent_", "context_token_", "adjusted_counts_") for i in range(2)}
    assert set(state.tensors) == expected
    assert state.tensors["next_ids_.2"].dtype == np.int32 and state.tensors["counts_.2"].dtype == np.int64
    vocabulary = state.meta["model"]["attrs"]["vocabulary_"]
    assert vocabulary["__t__"] == "strarray" and vocabulary["v"][:3] == ["<unk>", "</s>", "<s>"]


@pytest.mark.parametrize("params", SETTINGS[::3], ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_safetensors_roundtrip_is_identical(params, tmp_path) -> None:
    model = NgramLm(**params).fit(CORPUS)
    path = tmp_path / "lm.safetensors"
    model.save_safetensors(path)
    loaded = NgramLm.load_safetensors(path)
    assert loaded.get_params() == model.get_params()
    assert np.array_equal(loaded.score_samples(HELD_OUT), model.score_samples(HELD_OUT))
    assert loaded.predict_next("the cat", k=None) == model.predict_next("the cat", k=None)
    assert loaded.generate("a", 12, random_state=5) == model.generate("a", 12, random_state=5)
    assert safetensors.dumps(loaded) == path.read_bytes()


# -- hostile files ------------------------------------------------------------------------


def _tamper(model: NgramLm, edit) -> bytes:
    state = to_state(model)
    tensors = {k: v.copy() for k, v in state.tensors.items()}
    edit(tensors, state.meta["model"])
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=state.meta))


def _set(name: str, value):
    return lambda tensors, model: tensors.__setitem__(name, np.asarray(value, dtype=tensors[name].dtype))


def _param(name: str, value):
    return lambda tensors, model: model["params"].__setitem__(name, value)


def _vocabulary(values):
    return lambda tensors, model: model["attrs"]["vocabulary_"].update(v=values, shape=[len(values)])


HOSTILE = [
    ("next id past the vocabulary", lambda t, m: t["next_ids_.1"].__setitem__(0, 10_000),
     r"offsets_\.1.*sparse indices must lie in \[0, "),
    ("negative next id", lambda t, m: t["next_ids_.0"].__setitem__(0, -1), r"sparse indices must lie in"),
    ("offsets decrease", lambda t, m: t["offsets_.2"].__setitem__(1, t["offsets_.2"][2] + 1),
     r"offsets_\.2.*indptr must start at 0 and never decrease"),
    ("offsets too short", lambda t, m: t.__setitem__("offsets_.1", t["offsets_.1"][:-1]),
     r"offsets_\.1.*indptr has shape"),
    ("offsets unsigned", lambda t, m: t.__setitem__("offsets_.0", t["offsets_.0"].astype(np.uint64)),
     r"offsets_\.0.*expected a 1-d signed integer array"),
    ("context parent past the previous depth", lambda t, m: t["context_parent_.1"].__setitem__(-1, 10**6),
     r"context_parent_\.1.*context parents must lie in \[0, "),
    ("context token past the vocabulary", lambda t, m: t["context_token_.0"].__setitem__(0, 10**6),
     r"context_token_\.0.*context tokens must lie in \[0, "),
    ("contexts out of order", lambda t, m: t.__setitem__("context_token_.0", t["context_token_.0"][::-1].copy()),
     r"contexts \(parent \* V \+ token\) must be sorted without duplicates"),
    ("next tokens out of order", lambda t, m: t.__setitem__("next_ids_.0", t["next_ids_.0"][::-1].copy()),
     r"next_ids_\.0.*next tokens of each context must be sorted"),
    ("<s> predicted", lambda t, m: t["next_ids_.0"].__setitem__(0, 2), r"'<s>' is never predicted"),
    ("negative count", lambda t, m: t["counts_.1"].__setitem__(0, -3),
     r"counts_\.1.*counts must lie in \[0, 2\*\*53\]"),
    ("huge count", lambda t, m: t["counts_.0"].__setitem__(0, 2**60), r"counts must lie in"),
    ("counts missing", lambda t, m: t.__setitem__("counts_.2", t["counts_.2"][:-1]), r"counts_\.2.*counts for"),
    ("adjusted above count", lambda t, m: t["adjusted_counts_.0"].__setitem__(0, 10**6),
     r"adjusted_counts_\.0.*between 0 and its count"),
    ("float counts", lambda t, m: t.__setitem__("counts_.0", t["counts_.0"].astype(np.float64)),
     r"counts_\.0.*expected a 1-d integer array, found float64"),
    ("n larger than the tables", _param("n", 5), r"'context_parent_' must be a list of 4 arrays"),
    ("n not an int", _param("n", "3"), r"'n' must be a positive int"),
    ("boundaries not a bool", _param("boundaries", 1), r"'boundaries' must be a bool"),
    ("boundaries off for a framed vocabulary", _param("boundaries", False),
     r"'vocabulary_' tokens after the special ones must be sorted"),  # '.' sorts before '</s>'
    ("vocabulary without specials", _vocabulary(["a", "b"]), r"must start with the special tokens"),
    ("vocabulary unsorted", _vocabulary(["<unk>", "</s>", "<s>", "b", "a"]),
     r"'vocabulary_' tokens after the special ones must be sorted without duplicates"),
    ("vocabulary duplicated", _vocabulary(["<unk>", "</s>", "<s>", "a", "a"]), r"sorted without duplicates"),
]


@pytest.mark.parametrize("edit, message", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_files_raise_format_error(lm, edit, message, tmp_path) -> None:
    data = _tamper(lm, edit)
    with pytest.raises(FormatError, match=message):
        safetensors.loads(data)
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=message):
        NgramLm.load_safetensors(path)


def test_random_corruption_never_escapes_validation(lm) -> None:
    """Whatever the tables hold, loading fails with a FormatError naming a table, or inference just works."""
    rng = np.random.default_rng(0)
    state = to_state(lm)
    names = sorted(state.tensors)
    V = lm.vocabulary_.size
    refused = 0
    for _ in range(300):
        tensors = {k: v.copy() for k, v in state.tensors.items()}
        name = names[rng.integers(len(names))]
        array = tensors[name]
        if array.size:
            idx = rng.integers(array.size, size=rng.integers(1, 4))
            array[idx] = rng.integers(-3, max(V, 8) + 3, size=idx.size)
        try:
            model = safetensors.loads(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=state.meta)))
        except FormatError as exc:
            assert any(f"'{table}'" in str(exc) for table in names), (name, str(exc))  # says which table
            refused += 1
            continue
        model.score_samples(HELD_OUT)
        model.predict_next("the cat", k=None)
    assert 150 < refused < 300  # most edits break an invariant; a changed count need not
