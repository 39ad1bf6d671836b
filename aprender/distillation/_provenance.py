"""Step 5 of :func:`aprender.distill`: the held-out report and the ``provenance_`` record (private)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.metrics import r2_score

from aprender.distillation._fallback import score

__all__ = ["record", "report"]


def report(models: list, student: Any, X: np.ndarray | None, y: np.ndarray | None, classify: bool) -> dict | None:
    """Held-out scores (accuracy or R^2) of the student and the teachers, and their agreement."""
    if X is None or not len(X):
        return None
    metric = "accuracy" if classify else "r2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # feature-name warnings of foreign teachers
        teacher_scores = [score(m, X, y, classify) for m in models]
        pred = student.predict(X)
        reference = (np.mean([m.predict_proba(X) for m in models], axis=0).argmax(axis=1) if classify
                     else np.mean([m.predict(X) for m in models], axis=0))
    agreement = (float(np.mean(models[0].classes_[reference] == pred)) if classify
                 else float(r2_score(reference, pred)))
    return {"metric": metric, "held_out_rows": len(X), "student": score(student, X, y, classify),
            "teachers": teacher_scores, "agreement_with_teachers": agreement}


def record(*, method: str, temperature: float, alpha: float, pairs: list[tuple[int, int]], loaded: list,
           classify: bool, fit: dict[str, Any], report: dict | None, fallback: dict | None) -> dict[str, Any]:
    """The ``provenance_`` dict (docs/distill.md, *Provenance*); ``fit`` is what the distillation step returned."""
    return {
        "method": method,
        "temperature": float(temperature) if classify else None,
        "alpha": float(alpha),
        "layer_map": ",".join(f"{s}:{t}" for s, t in pairs) or None,
        "teachers": [
            {**teacher, "classes": model.classes_.tolist() if classify else None} for model, teacher in loaded
        ],
        "soft_targets": fit["soft"],
        "final_loss": fit["loss"],
        "transfer_set": fit["transfer_set"],
        "report": report,
        "fallback": fallback,
    }
