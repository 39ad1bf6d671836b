"""Distill -> quantize -> compress: a 500-tree forest becomes a small MLP file.

The pipeline of the spec on scikit-learn's digits: a RandomForest(500) teacher, an
MLP(32) student distilled from it (``aprender.distill`` with its defaults), the
student's weights as GGML Q8_0 blocks, then the file compressed with zstd. Each stage
prints its file size and held-out accuracy, next to the same MLP trained on the hard
labels alone. The student's file records where it came from (``apr inspect`` shows it).

Run with ``python examples/distill.py``; ``APRENDER_EXAMPLE_QUICK=1`` uses a 50-tree
teacher and a small transfer set (the test suite runs it that way).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

import aprender
from aprender.ensemble import RandomForestClassifier
from aprender.neural_network import MLPClassifier

QUICK = os.environ.get("APRENDER_EXAMPLE_QUICK") == "1"


def student_spec() -> MLPClassifier:
    """The student: one hidden layer of 32 units."""
    return MLPClassifier(hidden_layer_sizes=(32,), max_iter=300 if not QUICK else 60, random_state=0)


def stages(X_train: Any, y_train: Any, folder: Path, n_trees: int = 500,
           transfer_size: int | str = "auto") -> list[tuple[str, Path]]:
    """Fit teacher, hard-label student and distilled student; save every stage; return (name, file)."""
    teacher = RandomForestClassifier(n_estimators=n_trees, random_state=0, n_jobs=1).fit(X_train, y_train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        hard = student_spec().fit(X_train, y_train)
        teacher_file = folder / "teacher.apr"
        aprender.save(teacher, teacher_file)
        student = aprender.distill(teacher_file, student_spec(), X_train, y_train, transfer_size=transfer_size)
    files = [("teacher RF", teacher_file), ("hard-label MLP", folder / "hard.apr"),
             ("distilled MLP", folder / "student.apr"), ("+ Q8_0", folder / "student-q8.apr"),
             ("+ Q8_0 + zstd", folder / "student-q8-zstd.apr")]
    aprender.save(hard, files[1][1])
    aprender.save(student, files[2][1])
    aprender.save(student, files[3][1], quantize="q8_0")
    aprender.save(student, files[4][1], quantize="q8_0", compression="zstd")
    return files


def main() -> None:
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    with tempfile.TemporaryDirectory() as tmp:
        files = stages(X_train, y_train, Path(tmp), n_trees=50 if QUICK else 500,
                       transfer_size=3000 if QUICK else "auto")
        teacher_size = files[0][1].stat().st_size
        print(f"{'stage':<16} {'file':>10} {'smaller':>8} {'accuracy':>9}")
        for name, path in files:
            model = aprender.load(path)
            n = path.stat().st_size
            print(f"{name:<16} {n:>10,} {teacher_size / n:>7.0f}x {model.score(X_test, y_test):>9.4f}")
        record = aprender.inspect(files[2][1]).metadata["user"]["provenance"]
    print(f"provenance: method {record['method']}, T={record['temperature']}, alpha={record['alpha']}, "
          f"teacher sha256 {record['teachers'][0]['sha256'][:16]}..., "
          f"transfer set {record['transfer_set']['size']} rows, final loss {record['final_loss']:.4f}, "
          f"kept the {record['fallback']['kept'].replace('_', '-')} student")


if __name__ == "__main__":
    main()
