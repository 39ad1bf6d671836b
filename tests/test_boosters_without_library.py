"""A model of XGBoost, LightGBM or CatBoost, opened where that library is not installed.

``aprender.load`` raises MissingDependencyError naming the extra (each library's own test
module checks that); ``aprender.inspect`` reads the file, and ``aprender.validate`` checks
its layout, checksums and tensors and reports, as not checked, the trees the library would
rebuild and the extra that checks them. The library is hidden in a child process
(``sys.modules[name] = None``), as an environment without the extra has it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import aprender

CHILD = """
import json, sys
sys.modules[sys.argv[1]] = None  # the library is not installed
import aprender
out = {}
for path in sys.argv[2:]:
    info = aprender.inspect(path)
    report = aprender.validate(path)
    out[path] = {"class": info.class_key, "tensors": len(info.tensors), "complete": report.complete,
                 "not_checked": report.not_checked, "checks": list(report.checks)}
print(json.dumps(out))
"""


def _model(library: str):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(80, 4)), rng.integers(0, 2, 80)
    if library == "xgboost":
        from xgboost import XGBClassifier

        return XGBClassifier(n_estimators=3, max_depth=2).fit(X, y)
    if library == "lightgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_estimators=3, num_leaves=4, min_child_samples=5, verbose=-1).fit(X, y)
    from catboost import CatBoostClassifier

    return CatBoostClassifier(iterations=3, depth=2, verbose=0, allow_writing_files=False).fit(X, y)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_inspect_and_validate_without_the_library(library: str, tmp_path) -> None:
    pytest.importorskip(library, reason=f"the {library} extra is not installed: nothing to save")
    model = _model(library)
    paths = [str(tmp_path / f"m.{suffix}") for suffix in ("apr", "safetensors", "gguf")]
    for path in paths:
        aprender.save(model, path)
    done = subprocess.run([sys.executable, "-c", CHILD, library, *paths], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for path, seen in json.loads(done.stdout).items():
        assert seen["class"].startswith(f"{library}.") and seen["tensors"] > 0, path
        assert not seen["complete"] and seen["checks"][-1] == "tensors read", path
        assert f"{library} is not installed" in seen["not_checked"], path
        assert f"pip install 'aprender[{library}]'" in seen["not_checked"], path
    assert aprender.validate(paths[0]).complete  # with the library: rebuilt and checked whole
