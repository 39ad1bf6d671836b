"""Models saved under every supported scikit-learn load under the running one, bit for bit.

tests/data/compat/<version>/ holds, per recipe of tools/make_golden.py, a model saved by
aprender under that scikit-learn version as SafeTensors and .apr, and an ``.npz`` of its
inputs and of every inference method's outputs (``manifest.json`` says how to rebuild
them). A file saved by an older or the same version must load with identical outputs;
one saved by a newer version must either do the same or raise
:class:`UnsupportedVersion` naming both versions. Regenerate with
``python tools/make_golden.py``; docs/compatibility.md shows the matrix of a real run.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import sklearn

import aprender
from aprender.codec._migrations import minor_version
from aprender.exceptions import UnsupportedVersion, VersionSkewWarning

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from make_golden import OUT, check_outputs, manifests, recipes  # noqa: E402 - the script that wrote them

#: Also run under the oldest supported scikit-learn (.ci/run, docs/compatibility.md).
pytestmark = pytest.mark.lower_bound

RUNNING = sklearn.__version__
MANIFESTS = manifests(OUT)
GOLDEN = [(version, case, suffix) for version, manifest in MANIFESTS.items() for case in manifest["cases"]
          for suffix in ("safetensors", "apr")]


def test_golden_files_cover_every_supported_version_and_recipe():
    assert {minor_version(v) for v in MANIFESTS} >= {(1, 6), (1, 7), (1, 8), (1, 9)}
    for version, manifest in MANIFESTS.items():
        assert sorted(manifest["cases"]) == sorted(recipes()), version


@pytest.mark.parametrize(("version", "case", "suffix"), GOLDEN, ids=["/".join(g) for g in GOLDEN])
def test_golden_file_loads_with_identical_outputs(version: str, case: str, suffix: str):
    newer = minor_version(version) > minor_version(RUNNING)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = aprender.load(OUT / version / f"{case}.{suffix}")
        except UnsupportedVersion as exc:
            assert newer, f"a file from scikit-learn {version} must load under {RUNNING}: {exc}"
            assert f"scikit-learn {version}" in str(exc) and f"scikit-learn {RUNNING}" in str(exc)
            return
    skew = [str(w.message) for w in caught if issubclass(w.category, VersionSkewWarning)]
    assert len(skew) == (version != RUNNING), skew
    assert all(f"saved under scikit-learn {version} and is loaded under {RUNNING}" in m for m in skew)
    check_outputs(model, OUT / version, case)
