"""Quickstart: fit a model, save it without pickle, load it back, predict.

Run with ``python examples/quickstart.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import load_iris

import aprender
from aprender.format.safetensors import load_tensors
from aprender.linear_model import LogisticRegression


def main() -> None:
    X, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=1000).fit(X, y)
    print(f"fitted {type(model).__name__} on iris: accuracy {model.score(X, y):.3f}")

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "iris.safetensors"
        model.save_safetensors(path, metadata={"name": "iris-logreg"})
        print(f"saved {path.name}: {path.stat().st_size} bytes, tensors {sorted(load_tensors(path))}")

        loaded = aprender.load(path)
        same = np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
        print(f"loaded {type(loaded).__name__}; predictions bit-identical: {same}")
        print(f"first three predictions: {loaded.predict(X[:3]).tolist()}")
        if not same:
            raise SystemExit("roundtrip changed the predictions")


if __name__ == "__main__":
    main()
