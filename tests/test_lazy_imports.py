"""Loading a plain model imports only what its file needs (issue: first load ≤ 10 ms over the second).

The gguf package alone takes about 0.1 s to import; a SafeTensors or .apr file without
quantized tensors must load without it, and without the schema modules of other families.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sklearn.datasets import load_iris

import aprender
from aprender.linear_model import LogisticRegression


@pytest.mark.parametrize("suffix", ["apr", "safetensors"])
def test_plain_load_imports_neither_gguf_nor_other_schemas(suffix: str, tmp_path) -> None:
    X, y = load_iris(return_X_y=True)
    path = tmp_path / f"m.{suffix}"
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), path)
    code = ("import sys, json, aprender; aprender.load(sys.argv[1]); "
            "print(json.dumps(sorted(m for m in sys.modules if m == 'gguf' or m.startswith(('gguf.', "
            "'aprender.codec.schemas.')))))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    assert "gguf" not in loaded
    assert loaded == ["aprender.codec.schemas.linear"]


def test_loading_a_hand_written_class_defines_no_namesakes(tmp_path) -> None:
    """aprender.linear_model's generated namesakes (SGDClassifier, ...) come in on first use, not with the package."""
    X, y = load_iris(return_X_y=True)
    path = tmp_path / "m.apr"
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), path)
    code = ("import sys, aprender; aprender.load(sys.argv[1]); "
            "print('aprender.linear_model._generated' in sys.modules); "
            "from aprender.linear_model import SGDClassifier; "
            "print(SGDClassifier.__module__, 'SGDClassifier' in dir(sys.modules['aprender.linear_model']))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "aprender.linear_model._generated", "True"]


def test_loading_a_forest_defines_no_mixture_of_experts(tmp_path) -> None:
    """aprender.ensemble imports its forests; boosting, the mixture of experts and its gate come on first use."""
    from sklearn.datasets import make_classification

    from aprender.ensemble import RandomForestClassifier

    path = tmp_path / "forest.apr"
    aprender.save(RandomForestClassifier(n_estimators=3, random_state=0).fit(*make_classification(random_state=0)),
                  path)
    code = ("import sys, aprender; aprender.load(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m in ('aprender.ensemble._moe', 'aprender.ensemble._gating', "
            "'aprender.ensemble._boosting', 'aprender.codec.schemas.ensemble'))); "
            "from aprender.ensemble import SoftmaxGating; print(SoftmaxGating.__module__)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "aprender.ensemble._gating"]
