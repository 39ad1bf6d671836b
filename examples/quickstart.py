"""Quickstart: fit a model, save it without pickle, load it back, predict.

Run with ``python examples/quickstart.py [FOLDER]``. It leaves ``iris.safetensors``,
``iris.apr`` and ``iris-q8.gguf`` (and ``iris.onnx`` when the ``onnx`` extra is
installed) in FOLDER, the current directory by default, for the README's command-line
lines (``apr inspect iris.apr``) to open.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_iris

import aprender
from aprender.format.safetensors import load_tensors
from aprender.linear_model import LogisticRegression


def main(folder: Path) -> None:
    X, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=1000).fit(X, y)
    print(f"fitted {type(model).__name__} on iris: accuracy {model.score(X, y):.3f}")

    path = folder / "iris.safetensors"
    model.save_safetensors(path, metadata={"name": "iris-logreg"})
    print(f"saved {path}: {path.stat().st_size} bytes, tensors {sorted(load_tensors(path))}")

    loaded = aprender.load(path)
    same = np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
    print(f"loaded {type(loaded).__name__}; predictions bit-identical: {same}")
    print(f"first three predictions: {loaded.predict(X[:3]).tolist()}")
    if not same:
        raise SystemExit("roundtrip changed the predictions")

    model.save_apr(folder / "iris.apr", compression="zstd")
    model.save_gguf(folder / "iris-q8.gguf", quantize="q8_0")
    written = ["iris.apr", "iris-q8.gguf"]
    try:
        model.save_onnx(folder / "iris.onnx")
        written.append("iris.onnx")
    except ImportError:
        print('ONNX export skipped: it needs the onnx extra (pip install ".[onnx]")')
    print(f"also saved {', '.join(written)} in {folder.resolve()}; try: apr inspect {folder / 'iris.apr'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("."))
