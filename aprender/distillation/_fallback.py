"""Step 4 of :func:`aprender.distill`: keep the distilled student unless the held-out rows say it is worse (private).

Both candidates, the distilled student and the same student fitted on the hard labels,
learned from the same training rows; they are compared on the held-out rows they did
not see, row by row (a paired test), and the hard-label student is kept only when the
evidence that it is better reaches significance at :data:`LEVEL`:

* classifiers: McNemar's exact test. Only the rows where exactly one candidate is right
  tell them apart; if the two were equally good, the number of those the hard-label
  student gets right would be Binomial(n, 1/2). One-sided p-value:
  ``P(Binomial(n, 1/2) >= hard_labels_right)``.
* regressors: a one-sided paired t-test on the difference of the squared errors (whose
  mean is the difference of the mean squared errors, the quantity R² ranks by).

Where the labelled rows are few (under :data:`CROSS_FIT_BELOW`), one held-out split is
too small to tell the candidates apart, so they are **cross-fitted** instead: the rows
are cut into k folds, both candidates are fitted on k - 1 folds and predict the fold
left out, and the same paired test runs on the pooled out-of-fold predictions, one per
labelled row (:func:`folds`, :func:`compare`). Its cost is k distillations on k - 1
folds, which is bounded because only small problems take this path.

With fewer than :data:`MIN_ROWS` rows to compare there is no fit of the hard-label
student at all: so few rows cannot show a difference worth a swap, and the record says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats
from sklearn.metrics import accuracy_score, r2_score

__all__ = ["CROSS_FIT_BELOW", "LEVEL", "MIN_ROWS", "choose", "compare", "folds", "mcnemar_exact",
           "paired_squared_errors", "score", "too_few_rows"]

#: Significance level of the one-sided test that must reject "no worse" before a swap.
LEVEL = 0.05
#: Fewest held-out rows on which the candidates are compared.
MIN_ROWS = 30
#: Below this many labelled rows the candidates are cross-fitted and compared on every row.
CROSS_FIT_BELOW = 1000


def score(model: Any, X: np.ndarray, y: np.ndarray, classify: bool) -> float:
    """Accuracy (classifiers) or R² (regressors) of ``model`` on ``(X, y)``."""
    pred = model.predict(X)
    return float(accuracy_score(y, pred) if classify else r2_score(y, pred))


def mcnemar_exact(distilled_right: int, hard_right: int) -> float:
    """One-sided p-value that the hard-label student is better, from the rows where exactly one is right."""
    n = distilled_right + hard_right
    if n == 0:
        return 1.0
    return float(stats.binomtest(hard_right, n, 0.5, alternative="greater").pvalue)


def paired_squared_errors(distilled_errors: np.ndarray, hard_errors: np.ndarray) -> float:
    """One-sided p-value that the hard-label student's squared errors are smaller on average (paired t-test)."""
    diff = np.asarray(distilled_errors, dtype=np.float64) - np.asarray(hard_errors, dtype=np.float64)
    if len(diff) < 2 or not np.any(diff != diff[0]):
        return 1.0 if len(diff) < 2 or diff[0] <= 0 else 0.0
    return float(stats.ttest_1samp(diff, 0.0, alternative="greater").pvalue)


def too_few_rows(n_rows: int) -> dict[str, Any]:
    """The record of a fallback skipped because the held-out set is too small to decide."""
    return {"kept": "distilled", "decided": False, "held_out_rows": int(n_rows), "cross_fitted_folds": None,
            "test": None, "p_value": None,
            "level": LEVEL, "held_out": None,
            "reason": f"{n_rows} held-out rows are too few to compare the students (at least {MIN_ROWS}); "
                      "the distilled student is kept untested"}


def folds(y: np.ndarray, classify: bool, n_folds: int,
          rng: np.random.RandomState) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train, test)`` row indices of ``n_folds`` folds; stratified when every class has a row per fold."""
    from sklearn.model_selection import KFold, StratifiedKFold

    seed = rng.randint(2**31 - 1)
    if classify and np.unique(y, return_counts=True)[1].min() >= n_folds:
        return list(StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))
    return list(KFold(n_folds, shuffle=True, random_state=seed).split(np.zeros(len(y))))


def choose(distilled: Any, hard: Any, X: np.ndarray, y: np.ndarray, classify: bool) -> dict[str, Any]:
    """Compare the candidates on the held-out ``(X, y)``: the record of ``provenance_["fallback"]``."""
    return compare(distilled.predict(X), hard.predict(X), y, classify)


def compare(pred_d: np.ndarray, pred_h: np.ndarray, y: np.ndarray, classify: bool,
            cross_fitted: int | None = None) -> dict[str, Any]:
    """The paired test of the two candidates' predictions of ``y``, each made by a model that did not see its row.

    ``cross_fitted`` is the number of folds when the predictions are out-of-fold ones
    over every labelled row; None when they are one held-out split's.
    """
    where = (f"out of fold on all {len(y)} labelled rows ({cross_fitted}-fold cross-fitting: fewer than "
             f"{CROSS_FIT_BELOW} rows)" if cross_fitted else "on the held-out rows")
    record: dict[str, Any] = {"decided": True, "held_out_rows": len(y), "cross_fitted_folds": cross_fitted,
                              "level": LEVEL}
    if classify:
        right_d, right_h = pred_d == y, pred_h == y
        counts = {"distilled_right": int(np.sum(right_d & ~right_h)),
                  "hard_labels_right": int(np.sum(right_h & ~right_d))}
        p = mcnemar_exact(counts["distilled_right"], counts["hard_labels_right"])
        record |= {"test": "McNemar exact (one-sided binomial on the rows exactly one student gets right)",
                   "disagreements": counts}
        scores = {"distilled": float(right_d.mean()), "hard_labels": float(right_h.mean())}
    else:
        err_d = (np.asarray(y, dtype=np.float64) - pred_d) ** 2
        err_h = (np.asarray(y, dtype=np.float64) - pred_h) ** 2
        p = paired_squared_errors(err_d, err_h)
        record["test"] = "paired t-test on squared errors (one-sided)"
        scores = {"distilled": float(r2_score(y, pred_d)), "hard_labels": float(r2_score(y, pred_h))}
    swap = p < LEVEL
    record |= {"p_value": p, "held_out": scores, "kept": "hard_labels" if swap else "distilled"}
    record["reason"] = (
        f"the hard-label student is better {where} (p = {p:.3g} < {LEVEL})" if swap else
        f"no evidence the hard-label student is better {where} (p = {p:.3g} >= {LEVEL})")
    return record
