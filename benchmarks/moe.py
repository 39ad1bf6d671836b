"""Mixture of experts vs oracle routing: held-out R^2 and fit time on piecewise-linear problems.

The problems and the oracle are examples/moe.py's: for each problem and seed the
mixture (one LinearRegression expert per regime, default arguments, top_k=1) is
compared with routing every test row to its true regime's expert, fitted on the true
partition. Next to it, the same mixture with ``n_init=1, refine_iter=0`` (one EM run,
no refinement: EM as it was before the gate's penalty was cross-validated) shows what
the restarts and the refinement add. *True-regime gate* routes the test rows with a
``SoftmaxGating`` fitted on the true regimes of the training rows to the oracle's
experts: what a linear gate learned from these rows can do even when EM finds the
partition exactly. Fit times are wall-clock seconds of one fit on a shared machine.
Writes the ``moe`` section of benchmarks/README.md.

Run with ``python benchmarks/moe.py [--seeds N]`` (about two minutes on 2 cores with 5 seeds).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
from pathlib import Path

import numpy as np
from _report import machine, write_section

from aprender.ensemble import SoftmaxGating
from aprender.linear_model import LinearRegression

_spec = importlib.util.spec_from_file_location("moe_example", Path(__file__).parent.parent / "examples/moe.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)

#: The mixture as it ran before restarts and the refinement: one EM run.
EM_ONLY = {"n_init": 1, "refine_iter": 0}


def true_regime_gate_ratio(name: str, seed: int) -> float:
    """R^2 ratio to the oracle when a gate fitted on the true regimes routes to the oracle's experts."""
    train, test = example.train_test(name, seed)
    (X, y, regime), (X_test, y_test, _) = train, test
    experts = [LinearRegression().fit(X[regime == r], y[regime == r]) for r in np.unique(regime)]
    route = SoftmaxGating().fit(X, regime).predict(X_test)
    pred = np.choose(np.searchsorted(np.unique(regime), route), [e.predict(X_test) for e in experts])
    r2 = 1.0 - np.sum((y_test - pred) ** 2) / np.sum((y_test - y_test.mean()) ** 2)
    return r2 / example.oracle_r2(train, test)


def commit() -> str:
    """The checked-out commit (with ``+changes`` when the tree is dirty), or ``unknown``."""
    root = Path(__file__).parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="problem instances per problem")
    seeds = range(parser.parse_args().seeds)
    lines = [
        f"`python benchmarks/moe.py` at commit {commit()} on {machine()}.",
        "",
        "One LinearRegression expert per regime, `top_k=1`; *default* is "
        "`MixtureOfExpertsRegressor(n_experts=K, random_state=seed)`, *EM only* adds "
        "`n_init=1, refine_iter=0`; *true-regime gate* is a `SoftmaxGating()` fitted on the true "
        "regimes, routing to the oracle's experts (the limit of a linear gate learned from these rows). "
        "Ratio = R² / oracle R² on held-out rows (as many as "
        f"the training rows); min and mean over {len(seeds)} seeds, each a different problem "
        "instance (direction, coefficients, rows). Fit: median wall-clock seconds (min-max).",
        "",
        "| problem | rows | oracle R² | ratio, default: min | mean | ratio, EM only: min | mean | "
        "true-regime gate: min | mean | fit, default | fit, EM only |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    every = []
    for name, (_, n_rows) in example.PROBLEMS.items():
        default = [example.compare_to_oracle(name, seed) for seed in seeds]
        em_only = [example.compare_to_oracle(name, seed, **EM_ONLY) for seed in seeds]
        gate = [true_regime_gate_ratio(name, seed) for seed in seeds]
        every += default
        ratio = [r["ratio"] for r in default]
        ratio_em = [r["ratio"] for r in em_only]
        fit = [r["fit_seconds"] for r in default]
        fit_em = [r["fit_seconds"] for r in em_only]
        lines.append(
            f"| {name} | {n_rows:,} | {statistics.mean(r['oracle'] for r in default):.4f} | "
            f"{min(ratio):.3f} | {statistics.mean(ratio):.3f} | "
            f"{min(ratio_em):.3f} | {statistics.mean(ratio_em):.3f} | "
            f"{min(gate):.3f} | {statistics.mean(gate):.3f} | "
            f"{statistics.median(fit):.2f} s ({min(fit):.2f}-{max(fit):.2f}) | "
            f"{statistics.median(fit_em):.2f} s ({min(fit_em):.2f}-{max(fit_em):.2f}) |"
        )
        print(lines[-1], flush=True)
        print("   per seed, default:", " ".join(f"{r:.4f}" for r in ratio), flush=True)
        print("   per seed, true-regime gate:", " ".join(f"{r:.4f}" for r in gate), flush=True)
    reached = sum(r["ratio"] >= 0.98 for r in every)
    lines += ["", f"The goal, ratio >= 0.98 with the default arguments: {reached} of {len(every)} fits."]
    print(lines[-1])
    write_section("moe", "## Mixture of experts vs oracle routing\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
