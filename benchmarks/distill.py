"""Distill -> quantize -> compress: size, accuracy and single-row latency per stage.

Teacher RandomForest(500) -> MLP(32) student distilled with ``aprender.distill``'s
defaults -> Q8_0 -> zstd, next to the same MLP trained on the hard labels, on digits
and on a larger ``make_classification`` problem. Single-row latency is the median of
``predict`` on one row, the stages measured interleaved in a rotating order. Then the
same teacher distilled into other students (HistGradientBoosting, LogisticRegression):
held-out accuracy on the hard labels, distilled without the fallback, and with the
defaults (fallback on), with fit times. Writes the ``distill`` section of
benchmarks/README.md.

Run with ``python benchmarks/distill.py`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import importlib.util
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _report import machine, write_section
from sklearn.datasets import load_digits, make_classification
from sklearn.model_selection import train_test_split

import aprender
from aprender.ensemble import HistGradientBoostingClassifier
from aprender.linear_model import LogisticRegression

_spec = importlib.util.spec_from_file_location("distill_example", Path(__file__).parent.parent / "examples/distill.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)

ROUNDS, CALLS = 7, 50
OTHER_STUDENTS = {"HistGradientBoostingClassifier()": lambda: HistGradientBoostingClassifier(random_state=0),
                  "LogisticRegression(max_iter=1000)": lambda: LogisticRegression(max_iter=1000)}


def problems() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    X, y = make_classification(n_samples=10_000, n_features=30, n_informative=12, n_redundant=6, n_classes=5,
                               n_clusters_per_class=3, flip_y=0.02, class_sep=0.8, random_state=0)
    return {"digits (1,797 x 64, 10 classes)": load_digits(return_X_y=True),
            "make_classification (10,000 x 30, 5 classes)": (X, y)}


def latencies(models: list, row: np.ndarray) -> list[list[float]]:
    """Per model, the per-call time of ``CALLS`` single-row predictions, ROUNDS times, in rotating order."""
    out: list[list[float]] = [[] for _ in models]
    for r in range(ROUNDS):
        for i in np.roll(np.arange(len(models)), r):
            start = time.perf_counter()
            for _ in range(CALLS):
                models[i].predict(row)
            out[i].append((time.perf_counter() - start) / CALLS)
    return out


def gap_verdict(t_acc: float, h_acc: float, s_acc: float) -> str:
    if t_acc > h_acc:
        return f"{(s_acc - h_acc) / (t_acc - h_acc):.0%} of {100 * (t_acc - h_acc):.1f} points closed"
    return f"teacher not better; {100 * (s_acc - max(t_acc, h_acc)):+.1f} points from the better"


def other_students(teacher_file: Path, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                   y_test: np.ndarray, t_acc: float) -> list[str]:
    """Rows of the other-students table: hard-label, distilled (no fallback) and default accuracy, fit times."""
    rows = []
    for name, make in OTHER_STUDENTS.items():
        start = time.perf_counter()
        h_acc = make().fit(X_train, y_train).score(X_test, y_test)
        t_hard = time.perf_counter() - start
        start = time.perf_counter()
        pure = aprender.distill(teacher_file, make(), X_train, y_train, fallback=False)
        t_pure = time.perf_counter() - start
        start = time.perf_counter()
        default = aprender.distill(teacher_file, make(), X_train, y_train)
        t_default = time.perf_counter() - start
        p_acc, d_acc = pure.score(X_test, y_test), default.score(X_test, y_test)
        kept = default.provenance_["fallback"]["kept"].replace("_", "-")
        rows.append(f"| {name} | {h_acc:.4f} ({t_hard:.0f} s) | {p_acc:.4f} ({t_pure:.0f} s) | "
                    f"{gap_verdict(t_acc, h_acc, p_acc)} | {d_acc:.4f}, kept {kept} ({t_default:.0f} s) | "
                    f"{gap_verdict(t_acc, h_acc, d_acc)} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    lines = [f"Machine: {machine()}; a 2-core VM shared with other jobs, so latencies are noisy (min-max given). "
             "Held-out accuracy on a stratified 30% test split; the distilled MLP uses "
             "`aprender.distill`'s defaults.", ""]
    for title, (X, y) in problems().items():
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            files = example.stages(X_train, y_train, Path(tmp))
            elapsed = time.perf_counter() - start
            models = [aprender.load(path) for _, path in files]
            times = latencies(models, X_test[:1])
            teacher_size = files[0][1].stat().st_size
            accuracy = [m.score(X_test, y_test) for m in models]
            record = models[2].provenance_
            lines += [f"**{title}**; transfer set {record['transfer_set']['size']:,} rows; "
                      f"whole pipeline {elapsed:.0f} s", "",
                      "| Stage | File | vs teacher | Accuracy | 1-row predict, median (min-max) |",
                      "|---|---:|---:|---:|---:|"]
            for (name, path), acc, t in zip(files, accuracy, times, strict=True):
                size = path.stat().st_size
                lines.append(f"| {name} | {size:,} B | {teacher_size / size:.0f}x smaller | {acc:.4f} | "
                             f"{statistics.median(t) * 1e6:.0f} us ({min(t) * 1e6:.0f}-{max(t) * 1e6:.0f}) |")
            t_acc, h_acc, s_acc = accuracy[0], accuracy[1], accuracy[2]
            lines += ["", f"MLP: {gap_verdict(t_acc, h_acc, s_acc)}; kept "
                      f"{record['fallback']['kept'].replace('_', '-')} (fallback on)", ""]
            print("\n".join(lines[-12:]), flush=True)
            lines += [f"Other students, same teacher (teacher {t_acc:.4f}); test accuracy (fit time):", "",
                      "| Student | Hard labels | Distilled, `fallback=False` | Gap | Defaults (fallback on) | Gap |",
                      "|---|---:|---:|---|---:|---|",
                      *other_students(files[0][1], X_train, y_train, X_test, y_test, t_acc), ""]
    write_section("distill", "## Distillation: RF(500) -> MLP(32) -> Q8_0 -> zstd\n\n" + "\n".join(lines))
    # docs/distill.md's *Measured* section carries the same tables between the same markers.
    write_section("distill", "\n".join(lines), readme=Path(__file__).parent.parent / "docs/distill.md")


if __name__ == "__main__":
    main()
