"""aprender.distill and `apr distill`: soft targets, methods, provenance, refusals."""

from __future__ import annotations

import hashlib
import json
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.base import clone
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

import aprender
from aprender.cli import main
from aprender.cli._app import cli
from aprender.cli._distill import parse_student
from aprender.distillation._fit import expand, fit_classifier, learns_soft_labels, soft_labels
from aprender.distillation._students import (
    boosts_soft_targets,
    logistic_objective,
    logistic_start,
    soft_boosting,
    starts_logistic,
)
from aprender.distillation._transfer import regression_targets, soft_targets, synthesize, tempered, transfer_rows
from aprender.ensemble import HistGradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from aprender.exceptions import DistillationError, InferenceOnlyError
from aprender.linear_model import LinearRegression, LogisticRegression
from aprender.neighbors import KNeighborsClassifier
from aprender.neural_network import MLPClassifier, MLPRegressor
from aprender.tree import DecisionTreeClassifier

X_IRIS, Y_IRIS = load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def forest() -> RandomForestClassifier:
    return RandomForestClassifier(n_estimators=15, random_state=0).fit(X_IRIS, Y_IRIS)


def test_tempered_is_softmax_of_log_probabilities_over_t() -> None:
    p = np.array([[0.5, 0.25, 0.25, 0.0]])
    expected = np.array([0.5, 0.25, 0.25]) ** 0.5
    np.testing.assert_allclose(tempered(p, 2.0)[0], np.r_[expected / expected.sum(), 0.0])


def test_soft_targets_blend_labelled_rows_only() -> None:
    probas = [np.array([[0.8, 0.2], [0.4, 0.6]]), np.array([[0.6, 0.4], [0.2, 0.8]])]
    targets = soft_targets(probas, 1.0, 0.7, onehot=np.array([[0.0, 1.0]]))
    np.testing.assert_allclose(targets, [[0.7 * 0.7, 0.7 * 0.3 + 0.3], [0.3, 0.7]])


def test_row_expansion_cross_entropy_equals_soft_target_cross_entropy() -> None:
    targets = np.array([[0.7, 0.3, 0.0], [0.1, 0.1, 0.8]])
    student = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    X = np.arange(4.0).reshape(2, 2)
    Xe, ye, we = expand(X, targets, np.array([10, 20, 30]))
    assert Xe.tolist() == [[0.0, 1.0], [0.0, 1.0], [2.0, 3.0], [2.0, 3.0], [2.0, 3.0]]
    assert ye.tolist() == [10, 20, 10, 20, 30]
    column = np.searchsorted([10, 20, 30], ye)
    rows = np.repeat([0, 1], [2, 3])
    weighted = -np.sum(we * np.log(student[rows, column]))
    assert weighted == pytest.approx(-np.sum(targets[targets > 0] * np.log(student[targets > 0])))


@pytest.mark.parametrize("classes", [[0, 1, 2], [0, 1]])
def test_soft_labels_with_one_hot_targets_fit_exactly_like_hard_labels(classes: list[int]) -> None:
    mask = np.isin(Y_IRIS, classes)
    X, y = X_IRIS[mask], Y_IRIS[mask]
    hard = MLPClassifier(hidden_layer_sizes=(5,), max_iter=30, random_state=0).fit(X, y)
    soft = MLPClassifier(hidden_layer_sizes=(5,), max_iter=30, random_state=0)
    assert learns_soft_labels(soft)
    onehot = (y[:, None] == np.array(classes)[None, :]).astype(float)
    with soft_labels(soft, onehot, np.array(classes)):
        soft.fit(X, np.zeros(len(y)))  # y is ignored while soft labels are on
    assert "_validate_input" not in vars(soft)
    assert soft.classes_.tolist() == classes and soft.out_activation_ == hard.out_activation_
    for a, b in zip(soft.coefs_ + soft.intercepts_, hard.coefs_ + hard.intercepts_, strict=True):
        np.testing.assert_array_equal(a, b)
    assert soft.loss_curve_ == hard.loss_curve_


def test_soft_labels_minimise_the_soft_target_cross_entropy() -> None:
    targets = np.full((len(X_IRIS), 3), 0.1)
    targets[np.arange(len(X_IRIS)), Y_IRIS] = 0.8
    model = MLPClassifier(hidden_layer_sizes=(5,), max_iter=1, learning_rate_init=1e-9, random_state=0)
    with soft_labels(model, targets, np.array([0, 1, 2])):
        model.fit(X_IRIS, Y_IRIS)
    # One epoch at a negligible learning rate: the reported loss is the cross-entropy
    # of the (unchanged) initial network against the soft targets, plus the L2 term.
    proba = model.predict_proba(X_IRIS)
    l2 = 0.5 * model.alpha * sum(np.sum(w**2) for w in model.coefs_) / len(X_IRIS)
    assert model.loss_curve_[0] == pytest.approx(-np.mean(np.sum(targets * np.log(proba), axis=1)) + l2, rel=1e-6)
    assert not learns_soft_labels(MLPClassifier(early_stopping=True)) and not learns_soft_labels(LogisticRegression())


@pytest.mark.parametrize("classes", [[0, 1, 2], [0, 1]])
def test_soft_boosting_with_one_hot_targets_fits_exactly_like_hard_labels(classes: list[int]) -> None:
    mask = np.isin(Y_IRIS, classes)
    X, y = X_IRIS[mask], Y_IRIS[mask]
    hard = HistGradientBoostingClassifier(max_iter=15, early_stopping=False, random_state=0).fit(X, y)
    soft = HistGradientBoostingClassifier(max_iter=15, random_state=0)
    assert boosts_soft_targets(soft)
    onehot = (y[:, None] == np.array(classes)[None, :]).astype(float)
    with soft_boosting(soft, onehot):
        soft.fit(X, y)
    # The caller's parameters and a standard loss are back: the model saves and refits as usual.
    assert soft.loss == "log_loss" and soft.early_stopping == "auto"
    assert type(soft._loss) is type(hard._loss) and soft.n_iter_ == hard.n_iter_ == 15
    np.testing.assert_allclose(soft.predict_proba(X), hard.predict_proba(X), rtol=1e-6)
    np.testing.assert_array_equal(soft.predict(X), hard.predict(X))


def test_soft_boosting_fits_the_soft_targets_better_than_their_argmax() -> None:
    rng = np.random.RandomState(0)
    targets = rng.dirichlet([1.0, 1.0, 1.0], size=len(X_IRIS)) * 0.5
    targets[np.arange(len(X_IRIS)), Y_IRIS] += 0.5
    labels = targets.argmax(axis=1)

    def cross_entropy(model: HistGradientBoostingClassifier) -> float:
        return float(-np.mean(np.sum(targets * np.log(model.predict_proba(X_IRIS)), axis=1)))

    soft = HistGradientBoostingClassifier(max_iter=30, random_state=0)
    with soft_boosting(soft, targets):
        soft.fit(X_IRIS, labels)
    argmax = HistGradientBoostingClassifier(max_iter=30, early_stopping=False, random_state=0).fit(X_IRIS, labels)
    assert cross_entropy(soft) < cross_entropy(argmax) - 0.1
    assert not boosts_soft_targets(HistGradientBoostingClassifier(class_weight="balanced"))


@pytest.mark.parametrize("scale", [1.0, 0.25])
@pytest.mark.parametrize("classes", [[0, 1, 2], [1, 2]])
def test_logistic_start_is_the_minimiser_of_the_expanded_objective(classes: list[int], scale: float) -> None:
    mask = np.isin(Y_IRIS, classes)
    X = X_IRIS[mask]
    proba = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, Y_IRIS[mask]).predict_proba(X)
    targets = soft_targets([proba], 0.5, 0.7, None)
    Xe, ye, we = expand(X, targets, np.array(classes))
    we = we * scale  # the weights of distillation, which sum to the real rows behind the transfer set
    reference = LogisticRegression(C=0.5, tol=1e-10, max_iter=5000).fit(Xe, ye, sample_weight=we)
    started = LogisticRegression(C=0.5, tol=1e-10, max_iter=5000)
    assert starts_logistic(started)
    with logistic_start(started, X, targets, we.sum()):
        started.fit(Xe, ye, sample_weight=we)
    assert started.warm_start is False and started.n_iter_[0] <= 3  # scikit-learn's fit found it converged
    np.testing.assert_allclose(started.coef_, reference.coef_, atol=1e-5)
    np.testing.assert_allclose(started.intercept_, reference.intercept_, atol=1e-5)
    # The unexpanded objective is the expanded one: weighted mean log-loss plus the same L2 term.
    proba_e = reference.predict_proba(Xe)[np.arange(len(ye)), np.searchsorted(classes, ye)]
    expanded = np.sum(we * -np.log(proba_e)) / we.sum() + 0.5 / (0.5 * we.sum()) * np.sum(reference.coef_**2)
    assert logistic_objective(reference, X, targets, reference.coef_, reference.intercept_, we.sum()) == pytest.approx(
        expanded, rel=1e-10)
    assert not starts_logistic(LogisticRegression(solver="liblinear"))


def test_a_logistic_student_keeps_the_penalty_of_its_real_rows() -> None:
    # Transfer rows synthesized around n real rows add no evidence: weighted to sum to n,
    # the student's L2 term is 1 / (C * n), as in a fit on those n rows. Unweighted, the
    # same fit on N transfer rows is that of C * N / n: a penalty N / n times weaker.
    rng = np.random.RandomState(0)
    X = np.vstack([X_IRIS, X_IRIS + rng.normal(scale=0.3, size=X_IRIS.shape)])
    proba = RandomForestClassifier(n_estimators=5, random_state=0).fit(X_IRIS, Y_IRIS).predict_proba(X)
    targets, classes = soft_targets([proba], 0.5, 0.7, None), np.array([0, 1, 2])
    weighted = LogisticRegression(C=0.1, tol=1e-10, max_iter=5000)
    fit_classifier(weighted, X, targets, classes, [], evidence_rows=len(X_IRIS))
    stronger = LogisticRegression(C=0.1 * len(X_IRIS) / len(X), tol=1e-10, max_iter=5000)
    fit_classifier(stronger, X, targets, classes, [])
    unweighted = LogisticRegression(C=0.1, tol=1e-10, max_iter=5000)
    fit_classifier(unweighted, X, targets, classes, [])
    np.testing.assert_allclose(weighted.coef_, stronger.coef_, atol=1e-6)
    assert np.sum(weighted.coef_**2) < 0.9 * np.sum(unweighted.coef_**2)


def test_synthesized_rows_stay_between_neighbours() -> None:
    X = np.array([[0.0, 0.0], [0.0, 0.0], [10.0, 10.0], [11.0, 11.0]])
    new, base = synthesize(X, 500, np.random.RandomState(0))
    assert new.shape == (500, 2) and base.shape == (500,) and base.max() < 4
    near_origin = np.all(np.abs(new) < 1e-12, axis=1)
    # Rows built from the duplicated origin stay exactly there; the others stay near 10..11.
    assert np.all(near_origin | (np.abs(new - 10.5) < 5).all(axis=1))


def test_standard_distillation_records_provenance(forest: RandomForestClassifier, tmp_path) -> None:
    teacher_path = tmp_path / "teacher.apr"
    aprender.save(forest, teacher_path)
    student = LogisticRegression(max_iter=500)
    fitted = aprender.distill(str(teacher_path), student, X_IRIS, Y_IRIS, transfer_size=400)
    assert not hasattr(student, "coef_"), "the student argument is cloned, not fitted"
    record = fitted.provenance_
    assert record["method"] == "standard" and record["temperature"] == 0.5 and record["alpha"] == 0.7
    assert record["teachers"] == [{"class": "RandomForestClassifier", "file": "teacher.apr", "classes": [0, 1, 2],
                                   "sha256": hashlib.sha256(teacher_path.read_bytes()).hexdigest()}]
    # 30 rows held out chose and scored; the returned student then learned from all 150.
    assert record["transfer_set"]["size"] == 400 and record["transfer_set"]["labelled_rows"] == 150
    assert record["soft_targets"] is True and record["final_loss"] > 0
    assert record["report"]["held_out_rows"] == 30 and record["report"]["student"] >= 0.9
    out = tmp_path / "student.apr"
    aprender.save(fitted, out)
    assert aprender.inspect(out).metadata["user"]["provenance"] == json.loads(json.dumps(record))
    assert aprender.load(out).provenance_ == record


def test_same_inputs_give_the_same_student_and_transfer_hash(forest: RandomForestClassifier) -> None:
    a = aprender.distill(forest, LogisticRegression(max_iter=500), X_IRIS, Y_IRIS, transfer_size=300)
    b = aprender.distill(forest, LogisticRegression(max_iter=500), X_IRIS, Y_IRIS, transfer_size=300)
    assert a.provenance_ == b.provenance_
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_default_distillation_closes_most_of_the_gap_to_the_teacher() -> None:
    # The goal, at test scale: where a forest beats the same MLP trained on the
    # hard labels, distill with default arguments closes >= 60% of that gap.
    X, y = make_classification(n_samples=1000, n_features=10, n_informative=6, n_redundant=2, n_classes=3,
                               n_clusters_per_class=2, random_state=3)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    teacher = RandomForestClassifier(n_estimators=100, random_state=0).fit(X_train, y_train)
    student = MLPClassifier(hidden_layer_sizes=(16,), max_iter=100, random_state=0)
    with pytest.warns(ConvergenceWarning):  # the hard-label fit runs out of iterations; the distilled one not
        hard = clone(student).fit(X_train, y_train).score(X_test, y_test)
    # fallback=False: the 700 rows would be cross-fitted (five more distillations, tested in
    # test_distill_fallback.py); what is measured here is the distilled student itself.
    distilled = aprender.distill(teacher, student, X_train, y_train, fallback=False).score(X_test, y_test)
    gap = teacher.score(X_test, y_test) - hard
    assert gap > 0.02, "the problem must have a gap to close"
    assert distilled - hard >= 0.6 * gap


def test_distilling_an_mlp_twice_gives_the_same_weights_and_provenance(forest: RandomForestClassifier) -> None:
    def run() -> MLPClassifier:
        return aprender.distill(forest, MLPClassifier(hidden_layer_sizes=(4,), max_iter=20), X_IRIS, Y_IRIS,
                                transfer_size=1000, random_state=7)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a, b = run(), run()
    assert a.provenance_ == b.provenance_ and a.random_state == b.random_state
    for wa, wb in zip(a.coefs_ + a.intercepts_, b.coefs_ + b.intercepts_, strict=True):
        np.testing.assert_array_equal(wa, wb)
    assert a.provenance_["transfer_set"]["synthesis"] == {"kind": "munge", "swap": 0.2, "spread": 2.0}
    assert a.provenance_["transfer_set"]["synthesized_rows"] == 1000 - 150


def test_student_without_sample_weight_learns_the_teachers_argmax(forest: RandomForestClassifier) -> None:
    fitted = aprender.distill(forest, KNeighborsClassifier(n_neighbors=1), X_IRIS, y=None, transfer_size=150)
    assert fitted.provenance_["soft_targets"] is False and fitted.provenance_["report"] is None
    np.testing.assert_array_equal(fitted.predict(X_IRIS), forest.predict(X_IRIS))


def test_ensemble_averages_teachers() -> None:
    teachers = [DecisionTreeClassifier(max_depth=d, random_state=0).fit(X_IRIS, Y_IRIS) for d in (2, 3)]
    fitted = aprender.distill(teachers, LogisticRegression(max_iter=500), X_IRIS, Y_IRIS, method="ensemble",
                              transfer_size=200)
    assert [t["class"] for t in fitted.provenance_["teachers"]] == ["DecisionTreeClassifier"] * 2
    assert len(fitted.provenance_["report"]["teachers"]) == 2


def test_regressor_blends_teacher_and_y() -> None:
    X, y = make_regression(n_samples=200, n_features=3, noise=1.0, random_state=0)
    teacher = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    fitted = aprender.distill(teacher, LinearRegression(), X, y, transfer_size=200, validation_fraction=0)
    # Without synthesized rows, the transfer targets are exactly 0.7 * teacher + 0.3 * y.
    expected = LinearRegression().fit(X, 0.7 * teacher.predict(X) + 0.3 * y)
    np.testing.assert_allclose(fitted.coef_, expected.coef_)
    assert fitted.provenance_["temperature"] is None and fitted.provenance_["teachers"][0]["classes"] is None


def test_synthesized_regression_rows_carry_their_source_rows_residual_when_residuals_have_structure() -> None:
    # A teacher that flattens a slope (as a forest does at the edges) leaves residuals that
    # neighbouring rows share: they are carried, scaled by 1 - alpha, to the rows made from them.
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(300, 2))
    y = 2 * X[:, 0] + rng.normal(scale=0.1, size=300)
    X_transfer, source = transfer_rows(X, 1200, rng)
    flattened = np.clip(2 * X_transfer[:, 0], -2, 2)
    targets, record = regression_targets(flattened, X, y, source, 0.7)
    np.testing.assert_allclose(targets[:300], 0.7 * flattened[:300] + 0.3 * y)
    np.testing.assert_allclose(targets[300:], flattened[300:] + 0.3 * (y - flattened[:300])[source[300:]])
    assert record["carried"] and record["neighbour_correlation"] > 0.9 and record["p_value"] < 0.05
    # A synthesized row closer to its source than to anything else keeps the source's level.
    assert np.corrcoef(targets[300:], 2 * X_transfer[300:, 0])[0, 1] > np.corrcoef(
        flattened[300:], 2 * X_transfer[300:, 0])[0, 1]


def test_label_noise_is_not_copied_onto_synthesized_rows() -> None:
    # A teacher that is the truth leaves only the labels' own noise: no structure, nothing
    # carried (the synthesized rows keep the teacher's output), except at the test's level.
    carried = []
    for seed in range(40):
        rng = np.random.RandomState(seed)
        X = rng.normal(size=(200, 4))
        truth = np.sin(X[:, 0]) + X[:, 1]
        y = truth + rng.normal(size=200)
        X_transfer, source = transfer_rows(X, 600, rng)
        teacher = np.sin(X_transfer[:, 0]) + X_transfer[:, 1]
        targets, record = regression_targets(teacher, X, y, source, 0.7)
        carried.append(record["carried"])
        if not record["carried"]:
            np.testing.assert_array_equal(targets[200:], teacher[200:])
    assert sum(carried) <= 6  # 5% of 40 is 2; mutual neighbours make the test a little liberal


def test_regressor_provenance_records_the_residual_test() -> None:
    X, y = make_regression(n_samples=200, n_features=3, noise=1.0, random_state=0)
    teacher = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    record = aprender.distill(teacher, LinearRegression(), X, y, transfer_size=800,
                              validation_fraction=0).provenance_["transfer_set"]["label_residuals"]
    assert set(record) == {"neighbour_correlation", "p_value", "level", "carried"} and record["level"] == 0.05
    unlabelled = aprender.distill(teacher, LinearRegression(), X, transfer_size=800)
    assert unlabelled.provenance_["transfer_set"]["label_residuals"] is None


def test_progressive_matches_mlp_layers() -> None:
    teacher = MLPClassifier(hidden_layer_sizes=(16, 8, 8), solver="lbfgs", max_iter=500, random_state=0)
    teacher.fit(X_IRIS, Y_IRIS)
    student = MLPClassifier(hidden_layer_sizes=(16, 8), solver="lbfgs", max_iter=200, random_state=0)
    phases = []
    fitted = aprender.distill(teacher, student, X_IRIS, Y_IRIS, method="progressive", layer_map="0:0,1:2",
                              transfer_size=300, progress=phases.append)
    assert fitted.provenance_["layer_map"] == "0:0,1:2"
    assert "matching student layer 1 to teacher layer 2" in phases
    assert fitted.get_params()["warm_start"] is False and fitted.get_params()["max_iter"] == 200
    assert fitted.provenance_["report"]["student"] >= 0.9


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "magic"}, "method must be one of"),
    ({"temperature": 0}, "temperature must be"),
    ({"alpha": 1.5}, "alpha must be"),
    ({"transfer_size": 0}, "transfer_size must be"),
    ({"method": "progressive"}, "needs an MLP teacher and an MLP student"),
])
def test_bad_options_are_refused(forest: RandomForestClassifier, kwargs: dict, message: str) -> None:
    with pytest.raises(DistillationError, match=message):
        aprender.distill(forest, LogisticRegression(), X_IRIS, Y_IRIS, **kwargs)


def test_incompatible_teachers_are_refused(forest: RandomForestClassifier) -> None:
    with pytest.raises(DistillationError, match="takes one teacher"):
        aprender.distill([forest, forest], LogisticRegression(), X_IRIS, Y_IRIS)
    with pytest.raises(DistillationError, match="is not a regressor"):
        aprender.distill(forest, LinearRegression(), X_IRIS, Y_IRIS)
    other = RandomForestClassifier(n_estimators=2, random_state=0).fit(X_IRIS[:100], Y_IRIS[:100])
    with pytest.raises(DistillationError, match="teacher 1 has classes"):
        aprender.distill([forest, other], LogisticRegression(), X_IRIS, method="ensemble")
    with pytest.raises(DistillationError, match="X has 2 features"):
        aprender.distill(forest, LogisticRegression(), X_IRIS[:, :2])
    with pytest.raises(DistillationError, match="labels the teachers do not know"):
        aprender.distill(forest, LogisticRegression(), X_IRIS, Y_IRIS + 5)


@pytest.mark.parametrize(("layer_map", "message"), [
    ("0-0", "is not 'student:teacher'"),
    ("0:0,2:1", "out of range"),
    ("1:1,0:2", "must increase"),
])
def test_bad_layer_maps_are_refused(layer_map: str, message: str) -> None:
    teacher = MLPRegressor(hidden_layer_sizes=(4, 4, 4), max_iter=20, random_state=0).fit(X_IRIS, Y_IRIS)
    with pytest.raises(DistillationError, match=message):
        aprender.distill(teacher, MLPRegressor(hidden_layer_sizes=(3, 3)), X_IRIS, Y_IRIS, method="progressive",
                         layer_map=layer_map)


def test_student_spec_is_parsed_not_evaluated() -> None:
    model = parse_student("MLPClassifier(hidden_layer_sizes=(32,), alpha=1e-3)")
    assert type(model) is MLPClassifier and model.hidden_layer_sizes == (32,) and model.alpha == 1e-3
    assert type(parse_student("LogisticRegression")) is LogisticRegression


@pytest.mark.parametrize(("spec", "message"), [
    ("__import__('os').system('true')", "not a call of an estimator class"),
    ("os.system('true')", "not a call of an estimator class"),
    ("Popen(args='true')", "unknown estimator 'Popen'"),
    ("LogisticRegression(C=abs(-1))", "'C' is not a literal"),
    ("LogisticRegression(0.5)", "positional arguments"),
    ("LogisticRegression(**{'C': 1})", "'\\*\\*' arguments"),
    ("LogisticRegression(bogus=1)", "has no parameter 'bogus'"),
    ("LogisticRegression(", "not a Python call"),
])
def test_bad_student_specs_are_usage_errors(spec: str, message: str, tmp_path) -> None:
    result = CliRunner().invoke(cli, ["distill", __file__, "--student", spec, "--data", __file__,
                                      "--output", str(tmp_path / "s.apr")], standalone_mode=True)
    assert result.exit_code == 2
    assert message.replace("\\", "") in result.output or pytest.fail(result.output)


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_cli_distill_writes_a_student_that_inspect_describes(forest, tmp_path, capsys, suffix: str) -> None:
    teacher = tmp_path / "teacher.apr"
    aprender.save(forest, teacher)
    data = tmp_path / f"transfer{suffix}"
    if suffix == ".npz":
        np.savez(data, X=X_IRIS, y=Y_IRIS)
    else:
        header = ",".join([f"f{i}" for i in range(4)] + ["y"])
        np.savetxt(data, np.c_[X_IRIS, Y_IRIS], delimiter=",", header=header, comments="")
    out = tmp_path / "student.apr"
    code = main(["distill", str(teacher), "--student", "LogisticRegression(max_iter=500)", "--data", str(data),
                 "--output", str(out), "--transfer-size", "300", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["provenance"]["teachers"][0]["sha256"] == hashlib.sha256(teacher.read_bytes()).hexdigest()
    assert summary["provenance"]["report"]["held_out_rows"] == 30
    assert main(["inspect", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["user"]["provenance"] == summary["provenance"]
    assert main(["inspect", str(out)]) == 0
    assert "Provenance" in capsys.readouterr().out
    assert main(["distill", str(teacher), "--student", "LogisticRegression()", "--data", str(data),
                 "--output", str(out)]) == 2  # exists, no --force


def test_cli_distill_inference_only_student(forest, tmp_path, capsys) -> None:
    teacher, data = tmp_path / "teacher.apr", tmp_path / "transfer.npz"
    aprender.save(forest, teacher)
    np.savez(data, X=X_IRIS, y=Y_IRIS)
    args = ["distill", str(teacher), "--student", "MLPClassifier(hidden_layer_sizes=(8,), max_iter=50)",
            "--data", str(data), "--transfer-size", "300", "--seed", "3"]
    assert main([*args, "--output", str(tmp_path / "full.apr")]) == 0
    assert main([*args, "--output", str(tmp_path / "slim.apr"), "--inference-only"]) == 0
    capsys.readouterr()
    full, slim = aprender.load(tmp_path / "full.apr"), aprender.load(tmp_path / "slim.apr")
    assert (tmp_path / "slim.apr").stat().st_size < (tmp_path / "full.apr").stat().st_size
    assert np.array_equal(slim.predict_proba(X_IRIS), full.predict_proba(X_IRIS))
    with pytest.raises(InferenceOnlyError):
        slim.partial_fit(X_IRIS, Y_IRIS)


def test_fallback_keeps_the_hard_label_student_when_distillation_loses() -> None:
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, random_state=0)
    # A teacher of shuffled labels, followed alone (alpha=1): distillation must lose.
    bad = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, np.random.RandomState(0).permutation(y))
    kwargs = {"alpha": 1.0, "transfer_size": 1000}
    kept = aprender.distill(bad, LogisticRegression(max_iter=1000), X, y, **kwargs)
    record = kept.provenance_["fallback"]
    # 300 labelled rows: cross-fitted, every row compared out of fold.
    assert record["kept"] == "hard_labels" and record["cross_fitted_folds"] == 5 and record["held_out_rows"] == 300
    assert record["held_out"]["hard_labels"] > record["held_out"]["distilled"] + 0.3
    # The report scores the first fold's kept candidate on that fold's 60 rows.
    assert kept.provenance_["report"]["held_out_rows"] == 60 and kept.provenance_["report"]["student"] > 0.6
    # The kept student is the hard-label fit on every row, the one the user would have made.
    np.testing.assert_array_equal(kept.coef_, LogisticRegression(max_iter=1000).fit(X, y).coef_)
    off = aprender.distill(bad, LogisticRegression(max_iter=1000), X, y, fallback=False, **kwargs)
    assert off.provenance_["fallback"] is None
    assert off.provenance_["report"]["student"] < record["held_out"]["hard_labels"] - 0.3


def test_cli_reports_the_fallback(tmp_path, capsys) -> None:
    data, teacher = tmp_path / "transfer.npz", tmp_path / "teacher.apr"
    np.savez(data, X=X_IRIS, y=Y_IRIS)
    aprender.save(RandomForestClassifier(n_estimators=5, random_state=0).fit(X_IRIS, np.roll(Y_IRIS, 50)), teacher)
    args = ["distill", str(teacher), "--student", "LogisticRegression(max_iter=500)", "--data", str(data),
            "--transfer-size", "300", "--alpha", "1"]
    assert main([*args, "--output", str(tmp_path / "a.apr")]) == 0
    assert "kept the hard-labels student (out of fold: distilled" in capsys.readouterr().out  # 150 rows
    assert main([*args, "--output", str(tmp_path / "b.apr"), "--no-fallback"]) == 0
    assert "kept the" not in capsys.readouterr().out
    assert aprender.load(tmp_path / "b.apr").provenance_["fallback"] is None
