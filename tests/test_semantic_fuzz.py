"""A fixed-seed slice of the semantic campaign (tools/semantic_fuzz.py), and checks of its lies.

Every seed (each scikit-learn instance and zoo case) tells a few lies sampled from its
full list -- a tensor too long or too short, an index out of range, NaN, a swapped
sibling, a false ``n_features_in_`` -- each written with the library's own SafeTensors
writer; a worker subprocess loads the file and runs every inference method the seed
answers, then ``partial_fit``. No mutant may crash or hang the worker, allocate past
its memory limit, raise a foreign exception at load or change memory outside the
model. The full campaign is documented in docs/fuzzing.md, "Semantic campaign".
"""

from __future__ import annotations

import json
import random
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import aprender
from aprender.format import safetensors

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import semantic_fuzz  # tools/ is not a package
import semantic_lies
import semantic_meaning

#: Lies per seed in the slice: every class is reached, in about half a minute on one core.
PER_SEED = 2


@cache
def _state(seed_id: str):
    return semantic_fuzz.seed_state(seed_id)


@pytest.mark.slow
def test_slice_finds_no_defect(tmp_path) -> None:
    ids = semantic_fuzz.seed_ids()
    report = semantic_fuzz.campaign(ids, rng_seed=5, per_seed=PER_SEED, workers=2, timeout=20.0, out=tmp_path)
    summary = report.as_dict()
    lines = [f"{d['class']}: {d['lie']} {d['attribute']} -> {d['outcome']} {d['detail']}" for d in report.defects]
    assert report.defects == [], f"{len(lines)} defects:\n" + "\n".join(lines[:40])
    # Every class a seed of the instance generator or the zoo holds was lied to.
    assert report.seeds == len(ids) - len(report.refused_seeds) and len(report.refused_seeds) <= 3
    told = {cls: row.get("lies", 0) for cls, row in summary["per_class"].items()}
    assert len(told) >= 200 and min(told.values()) >= 1  # a skipped lie makes way for the next
    assert summary["totals"]["lies"] >= PER_SEED * report.seeds * 0.9
    assert summary["totals"].get("refused", 0) > summary["totals"]["lies"] // 4  # the lies reach the checks


def test_lies_are_deterministic_and_each_changes_the_file() -> None:
    state = _state("zoo:SVC-probability")
    pristine = safetensors.state_to_bytes(state)
    lies = semantic_lies.lies_of(state, random.Random(3))
    assert lies == semantic_lies.lies_of(state, random.Random(3))
    kinds = {lie.kind for lie in lies}
    assert {"len+1", "len*1000", "dim-", "value=-1", "value=nan", "swap", "meta=2**40"} <= kinds
    for lie in lies:
        try:
            data = semantic_lies.tell(state, lie, 7)
        except semantic_lies.Skip:
            continue
        assert data != pristine, lie
        assert data == semantic_lies.tell(state, lie, 7), lie


def test_a_lie_says_what_it_says() -> None:
    """``support_`` one longer, an index of 2**31-1, a swapped sibling: the file holds exactly that."""
    state = _state("zoo:SVC-probability")
    support = state.tensors["support_"]
    longer = safetensors.state_from_bytes(semantic_lies.tell(state, semantic_lies.Lie("len+1", "support_", ""), 0))
    assert longer.tensors["support_"].shape == (support.shape[0] + 1,)
    big = safetensors.state_from_bytes(semantic_lies.tell(state, semantic_lies.Lie("value=2**31-1", "support_", ""), 0))
    assert np.count_nonzero(big.tensors["support_"] != support) == 1 and big.tensors["support_"].max() == 2**31 - 1
    with pytest.raises(semantic_lies.Skip):  # int32 cannot hold 2**40: skipped, not wrapped
        semantic_lies.tell(state, semantic_lies.Lie("value=2**40", "support_", ""), 0)
    swapped = safetensors.state_from_bytes(semantic_lies.tell(state, semantic_lies.Lie("swap", "support_", ""), 0))
    attrs = swapped.meta["model"]["attrs"]
    assert attrs["support_"]["name"] != "support_"
    assert attrs[attrs["support_"]["name"]]["name"] == "support_"
    path = json.dumps(["model", "attrs", "n_features_in_"])
    told = safetensors.state_from_bytes(semantic_lies.tell(state, semantic_lies.Lie("meta=2**40", path, ""), 0))
    assert told.meta["model"]["attrs"]["n_features_in_"] == 2**40


def test_a_defect_is_reported_with_its_file(tmp_path) -> None:
    """A worker that dies is a crash, with the mutant kept in --out; the next mutant gets a fresh worker."""
    report = semantic_fuzz.Report()
    seed = semantic_fuzz._Seed("zoo:SVC", "SVC")
    lie = semantic_lies.Lie("len+1", "support_", "aprender.svm.SVC")
    semantic_fuzz._record(report, seed, lie, b"mutant", "crash\tworker exited with -11", tmp_path)
    (defect,) = report.defects
    assert defect["outcome"] == "crash" and (tmp_path / defect["file"]).read_bytes() == b"mutant"
    assert report.rows["SVC"]["crash"] == 1
    table = semantic_fuzz.render(report.as_dict())
    assert "| SVC | 1 | 0 | 0 | 0 | **1** | 0 |" in table and "`support_`" in table
    # a campaign stopped before its report.json is read back from its outcomes
    assert semantic_fuzz.report_from_outcomes(tmp_path / "outcomes.jsonl")["defects"] == report.defects
    step = tmp_path / "w0.safetensors.step"
    step.write_text("warm fit wider")  # the call the worker was in when it died
    assert semantic_fuzz._with_step("crash\tworker exited with -11", str(tmp_path / "w0.safetensors")) == \
        "crash\tworker exited with -11 in warm fit wider" and not step.exists()


def test_worker_finds_a_changed_canary() -> None:
    canaries = semantic_fuzz.Canaries(5)
    assert canaries.changed() is None
    canaries.arrays[3][0][17] = -1.0
    assert "element 17" in canaries.changed()


def test_the_seed_loads_unchanged() -> None:
    """The seeds themselves load: a lie, not the harness, is what a refusal answers."""
    state = _state("sk:NuSVC")
    model = aprender.codec.from_state(safetensors.state_from_bytes(safetensors.state_to_bytes(state)))
    assert type(model).__name__ == "NuSVC"


@pytest.mark.slow
def test_the_defects_of_the_first_campaign_stay_fixed(tmp_path) -> None:
    """Every lie that was a defect in docs/data/semantic-campaign-20261126.json, told again."""
    recorded = json.loads((Path(__file__).parent.parent / "docs" / "data" / "semantic-campaign-20261126.json")
                          .read_text())
    ids, only, rng_seed = semantic_fuzz.replay_plan(recorded)
    assert (len(ids), sum(map(len, only.values()))) == (23, 68)  # the recorded defects: 68 lies to 23 seeds
    # At most a few defects are waited for: a crash costs a worker restart, and one is enough to fail.
    report = semantic_fuzz.campaign(ids, rng_seed, only=only, workers=2, timeout=20.0, out=tmp_path, max_defects=4)
    lines = [f"{d['class']}: {d['lie']} {d['attribute']} -> {d['outcome']} {d['detail']}" for d in report.defects]
    assert report.defects == [], "\n".join(lines)
    totals = report.as_dict()["totals"]
    # every lie told again, except those about what files no longer hold (neighbors rebuild their tree)
    assert totals["lies"] + totals["skipped"] == sum(map(len, only.values())) and totals["skipped"] <= 2


def test_lies_in_meaning_cover_their_kinds_and_change_the_file() -> None:
    """Parameters, kwargs dicts, private flags and strings: each lie is told the same way twice and changes the file."""
    kinds = set()
    for seed_id in ("zoo:KNeighborsClassifier-brute-strings", "zoo:CountVectorizer", "sk:GradientBoostingClassifier"):
        state = _state(seed_id)
        pristine = safetensors.state_to_bytes(state)
        lies = semantic_meaning.lies_of(state, random.Random(3), "meaning")
        assert lies == semantic_meaning.lies_of(state, random.Random(3), "meaning")
        for lie in lies[::3] + [lie for lie in lies if not lie.kind.startswith("param")]:
            try:
                data = semantic_meaning.tell(state, lie, 7)
            except semantic_lies.Skip:
                continue
            kinds.add(lie.kind.partition("=")[0])
            assert data != pristine and data == semantic_meaning.tell(state, lie, 7), lie
    assert kinds >= {"param", "kwargs", "regex", "transplant", "flag", "flag+_in_fit", "widen"}


def test_a_lie_in_meaning_says_what_it_says() -> None:
    """A kwargs dict with a VI one wider, a catastrophic regex, a 100k-char class, a donor one feature wider."""
    def told(seed_id: str, kind: str, target: list):
        lie = semantic_lies.Lie(kind, json.dumps(target), "")
        return safetensors.state_from_bytes(semantic_meaning.tell(_state(seed_id), lie, 0))

    knn = told("zoo:KNeighborsClassifier-brute-strings", "kwargs=VI", ["model", "params", "metric_params"])
    assert knn.tensors["lie.kwargs.VI"].shape == (5, 5)  # the model has 4 features
    assert knn.meta["model"]["params"]["metric_params"]["items"][0][0] == "VI"
    wide = told("zoo:KNeighborsClassifier-brute-strings", "widen", ["model", "attrs", "classes_", "v"])
    assert max(map(len, wide.meta["model"]["attrs"]["classes_"]["v"])) == semantic_meaning.WIDE
    regex = told("zoo:CountVectorizer", "regex=catastrophic", ["model", "params", "token_pattern"])
    assert regex.meta["model"]["params"]["token_pattern"] == "(a+)+$"
    width = _state("sk:GradientBoostingClassifier").meta["model"]["attrs"]["init_"]["attrs"]["n_features_in_"]
    donor = told("sk:GradientBoostingClassifier", "transplant=width+1", ["model", "attrs", "init_"])
    assert donor.meta["model"]["attrs"]["init_"]["attrs"]["n_features_in_"] == width + 1


def test_parameter_values_come_from_the_constraints() -> None:
    from sklearn.svm import SVC

    kernels = semantic_meaning.param_values(SVC, "kernel", "rbf")
    assert {"linear", "poly", "sigmoid", "precomputed"} <= set(kernels) and "rbf" not in kernels
    assert semantic_meaning.param_values(SVC, "shrinking", True) == [False]
    assert 2**31 - 1 in semantic_meaning.param_values(SVC, "max_iter", -1)


#: Lies in meaning replayed in CI: docs/data/semantic-meaning-replay.json's ``cases`` (each handled
#: on the code it was recorded against); its ``pending`` cases join them once the load-time rules land.
REPLAY = Path(__file__).parent.parent / "docs" / "data" / "semantic-meaning-replay.json"


@pytest.mark.slow
def test_the_lies_in_meaning_of_the_replay_are_handled(tmp_path) -> None:
    recorded = json.loads(REPLAY.read_text())
    only: dict[str, list[tuple[str, str]]] = {}
    for case in recorded["cases"]:
        only.setdefault(case["seed"], []).append((case["lie"], case["attribute"]))
    report = semantic_fuzz.campaign(list(only), recorded["rng_seed"], only=only, workers=2, timeout=20.0,
                                    out=tmp_path, max_defects=4, refit=True)
    lines = [f"{d['class']}: {d['lie']} {d['attribute']} -> {d['outcome']} {d['detail']}" for d in report.defects]
    assert report.defects == [], "\n".join(lines)
    totals = report.as_dict()["totals"]
    assert totals["lies"] == len(recorded["cases"]) and totals.get("refused", 0) >= 1
