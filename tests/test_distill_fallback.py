"""aprender.distill's fallback: a paired test decides, noise never swaps; and the package's public face."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification

import aprender
from aprender.distillation import _fallback as fallback
from aprender.ensemble import RandomForestClassifier
from aprender.linear_model import LogisticRegression

PACKAGE = Path(aprender.__file__).parent / "distillation"


class _Fixed:
    """A fitted stand-in whose predictions are given."""

    def __init__(self, pred: np.ndarray) -> None:
        self.pred = pred

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.pred


def _wrong_on(y: np.ndarray, rows: np.ndarray) -> np.ndarray:
    pred = y.copy()
    pred[rows] = (y[rows] + 1) % 3
    return pred


def test_mcnemar_p_values_are_the_exact_one_sided_binomial_tail() -> None:
    # 14 of 24 disagreements for the hard-label student: P(Bin(24, .5) >= 14) = 0.2706...
    assert fallback.mcnemar_exact(10, 14) == pytest.approx(0.27063, abs=1e-5)
    assert fallback.mcnemar_exact(2, 20) < 1e-4
    assert fallback.mcnemar_exact(20, 2) > 0.99
    assert fallback.mcnemar_exact(0, 0) == 1.0


def test_noise_on_the_held_out_rows_does_not_swap() -> None:
    # The hard-label student is right on 14 rows the distilled one misses, and wrong on 10 it gets:
    # a higher held-out accuracy (0.91 against 0.89), but not evidence.
    y = np.arange(200) % 3
    distilled, hard = _Fixed(_wrong_on(y, np.arange(0, 14))), _Fixed(_wrong_on(y, np.arange(100, 110)))
    record = fallback.choose(distilled, hard, np.zeros((200, 1)), y, classify=True)
    assert record["held_out"]["hard_labels"] > record["held_out"]["distilled"]
    assert record["kept"] == "distilled" and record["decided"] is True
    assert record["disagreements"] == {"distilled_right": 10, "hard_labels_right": 14}
    assert record["p_value"] == pytest.approx(fallback.mcnemar_exact(10, 14))
    assert "no evidence" in record["reason"] and record["level"] == 0.05


def test_clear_evidence_swaps() -> None:
    y = np.arange(200) % 3
    distilled, hard = _Fixed(_wrong_on(y, np.arange(0, 30))), _Fixed(_wrong_on(y, np.arange(100, 103)))
    record = fallback.choose(distilled, hard, np.zeros((200, 1)), y, classify=True)
    assert record["kept"] == "hard_labels" and record["p_value"] < 1e-5
    assert record["held_out"] == {"distilled": 0.85, "hard_labels": 0.985}
    assert "better on the held-out rows" in record["reason"]


def test_regression_swaps_on_squared_errors_only_with_evidence() -> None:
    rng = np.random.RandomState(0)
    y = rng.standard_normal(400)
    noise = _Fixed(y + 0.5 * rng.standard_normal(400)), _Fixed(y + 0.5 * rng.standard_normal(400))
    same = fallback.choose(*noise, np.zeros((400, 1)), y, classify=False)
    assert same["kept"] == "distilled" and same["p_value"] > 0.05 and "disagreements" not in same
    worse = _Fixed(y + 1.0 * rng.standard_normal(400))
    clear = fallback.choose(worse, noise[1], np.zeros((400, 1)), y, classify=False)
    assert clear["kept"] == "hard_labels" and clear["p_value"] < 1e-6
    assert clear["held_out"]["hard_labels"] > clear["held_out"]["distilled"]


def test_paired_squared_errors_handles_ties() -> None:
    assert fallback.paired_squared_errors(np.ones(50), np.ones(50)) == 1.0
    assert fallback.paired_squared_errors(np.ones(1), np.zeros(1)) == 1.0


def test_too_few_labelled_rows_skip_the_comparison_and_say_so() -> None:
    X, y = load_iris(return_X_y=True)
    X, y = X[::6], y[::6]  # 25 rows: fewer than MIN_ROWS even to cross-fit; 5 held out
    teacher = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    student = aprender.distill(teacher, LogisticRegression(max_iter=300), X, y, transfer_size=200)
    record = student.provenance_["fallback"]
    assert record["decided"] is False and record["kept"] == "distilled" and record["held_out_rows"] == 5
    assert record["p_value"] is None and record["held_out"] is None and "too few" in record["reason"]
    assert record["cross_fitted_folds"] is None
    assert student.provenance_["report"]["held_out_rows"] == 5
    # The held-out rows scored the candidate; the returned student learned from all 25.
    assert student.provenance_["transfer_set"]["labelled_rows"] == 25


def test_few_labelled_rows_are_cross_fitted_and_every_row_compared() -> None:
    X, y = load_iris(return_X_y=True)
    teacher = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    record = aprender.distill(teacher, LogisticRegression(max_iter=300), X, y, transfer_size=200,
                              validation_fraction=0.1).provenance_
    choice = record["fallback"]
    # validation_fraction=0.1: ten folds; all 150 rows predicted out of fold by both candidates.
    assert choice["decided"] is True and choice["cross_fitted_folds"] == 10 and choice["held_out_rows"] == 150
    assert choice["test"].startswith("McNemar") and "10-fold cross-fitting" in choice["reason"]
    assert set(choice) == {"decided", "held_out_rows", "cross_fitted_folds", "level", "test", "disagreements",
                           "p_value", "held_out", "kept", "reason"}
    n_right = {k: round(v * 150) for k, v in choice["held_out"].items()}
    diff = choice["disagreements"]
    assert n_right["distilled"] - n_right["hard_labels"] == diff["distilled_right"] - diff["hard_labels_right"]
    assert record["report"]["held_out_rows"] == 15  # the first fold scores the kept candidate
    assert record["transfer_set"]["labelled_rows"] == 150


def test_many_labelled_rows_are_decided_on_one_held_out_split() -> None:
    X, y = make_classification(n_samples=fallback.CROSS_FIT_BELOW, n_features=6, random_state=0)
    teacher = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    choice = aprender.distill(teacher, LogisticRegression(max_iter=300), X, y,
                              transfer_size=1000).provenance_["fallback"]
    assert choice["decided"] is True and choice["cross_fitted_folds"] is None and choice["held_out_rows"] == 200
    assert "on the held-out rows" in choice["reason"]


@pytest.mark.parametrize(("labels", "stratified"), [([0] * 40 + [1] * 10, True), ([0] * 46 + [1] * 4, False)])
def test_folds_test_every_row_once_stratified_when_they_can(labels: list[int], stratified: bool) -> None:
    y = np.array(labels)
    parts = fallback.folds(y, True, 5, np.random.RandomState(0))
    tested = np.sort(np.concatenate([test for _, test in parts]))
    np.testing.assert_array_equal(tested, np.arange(50))
    assert all(len(np.intersect1d(train, test)) == 0 for train, test in parts)
    minority = [int(np.sum(y[test] == 1)) for _, test in parts]
    assert (minority == [2] * 5) is stratified


def test_cross_fitted_record_says_so() -> None:
    y = np.arange(200) % 3
    record = fallback.compare(_wrong_on(y, np.arange(0, 30)), _wrong_on(y, np.arange(100, 103)), y, True,
                              cross_fitted=5)
    assert record["kept"] == "hard_labels" and record["cross_fitted_folds"] == 5
    assert "out of fold on all 200 labelled rows (5-fold" in record["reason"]


def test_public_paths() -> None:
    from aprender.distillation import METHODS, distill

    assert aprender.distill is distill and distill.__module__ == "aprender.distillation._api"
    assert METHODS == ("standard", "ensemble", "progressive")
    code = ("import importlib, sys\n"
            "package = importlib.import_module('aprender.distillation')\n"
            "assert package.METHODS and 'sklearn' not in sys.modules, 'the package imported scikit-learn'\n"
            "from aprender.distillation import distill\n"
            "import aprender\n"
            "assert aprender.distill is distill is package.distill and 'sklearn' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("aprender.distillation"):
            found |= {f"{node.module}.{a.name}" if node.module == "aprender.distillation" else node.module
                      for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("aprender.distillation")}
    return found


def test_the_package_is_small_modules_without_import_circles() -> None:
    modules = {f"aprender.distillation.{p.stem}" if p.stem != "__init__" else "aprender.distillation": p
               for p in PACKAGE.glob("*.py")}
    assert {f"aprender.distillation.{step}" for step in ("_api", "_inputs", "_transfer", "_fit", "_fallback",
                                                         "_provenance")} <= set(modules)
    assert max(len(p.read_text().splitlines()) for p in modules.values()) <= 600
    graph = {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph[start])

    assert not [name for name in graph if reaches(name, name, set())]


@pytest.mark.parametrize("suffix", [".apr", ".safetensors", ".gguf"])
def test_a_teacher_file_is_read_once_and_hashed_as_loaded(tmp_path, monkeypatch, suffix: str) -> None:
    import builtins
    import hashlib
    import io

    from aprender.distillation._inputs import load_teacher

    X, y = load_iris(return_X_y=True)
    path = tmp_path / f"teacher{suffix}"
    aprender.save(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y), path)
    expected, reference = hashlib.sha256(path.read_bytes()).hexdigest(), aprender.load(path).predict(X)
    opened = []
    original = io.open

    def counting_open(file, *args, **kwargs):
        if Path(str(file)) == path:
            opened.append(file)
        return original(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    model, record = load_teacher(str(path))
    assert len(opened) == 1, opened
    assert record == {"class": "RandomForestClassifier", "file": path.name, "sha256": expected}
    np.testing.assert_array_equal(model.predict(X), reference)


def test_a_pickle_teacher_is_refused_by_name(tmp_path) -> None:
    from aprender.exceptions import FormatError

    path = tmp_path / "teacher.pkl"
    path.write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(FormatError, match="is a pickle"):
        aprender.distill(str(path), LogisticRegression(), *load_iris(return_X_y=True))
