"""XGBoost, LightGBM and CatBoost models saved under each library's previous release load, bit for bit.

tests/data/compat-boosters/<releases>/ holds, per recipe of ``booster_recipes`` in
tools/make_golden.py, a model aprender saved under ``BOOSTER_PINS`` (XGBoost 3.1, LightGBM
4.6, CatBoost 1.2.8) as SafeTensors and .apr, and an ``.npz`` of its inputs and of every
inference method's outputs. Under the running releases each must load and give the same
bits. Regenerate with ``python tools/make_golden.py --boosters``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import aprender

for library in ("xgboost", "lightgbm", "catboost"):
    pytest.importorskip(library, reason=f"the {library} extra is not installed")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from make_golden import BOOSTER_PINS, BOOSTERS_OUT, booster_recipes, check_outputs  # noqa: E402

FOLDERS = sorted(d for d in BOOSTERS_OUT.iterdir() if (d / "manifest.json").exists())
GOLDEN = [(folder.name, case, suffix) for folder in FOLDERS
          for case in json.loads((folder / "manifest.json").read_text())["cases"] for suffix in ("safetensors", "apr")]


def test_the_previous_releases_are_covered() -> None:
    (folder,) = FOLDERS
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["libraries"] == {pin.partition("==")[0]: pin.partition("==")[2] for pin in BOOSTER_PINS}
    assert sorted(manifest["cases"]) == sorted(booster_recipes())
    import catboost
    import lightgbm
    import xgboost

    running = {"xgboost": xgboost.__version__, "lightgbm": lightgbm.__version__, "catboost": catboost.__version__}
    assert all(running[name] != version for name, version in manifest["libraries"].items()), running


@pytest.mark.parametrize(("folder", "case", "suffix"), GOLDEN, ids=["/".join(g) for g in GOLDEN])
def test_a_file_of_the_previous_release_loads_with_identical_outputs(folder: str, case: str, suffix: str) -> None:
    model = aprender.load(BOOSTERS_OUT / folder / f"{case}.{suffix}")
    check_outputs(model, BOOSTERS_OUT / folder, case, new_methods=True)


def test_files_older_than_the_library_version_field_load_and_new_ones_record_it() -> None:
    """The golden files predate ``library_version``: it is optional on read; a save now records the release."""
    from aprender.cli._boosters import booster_summaries
    from aprender.codec import to_state
    from aprender.format import safetensors

    for folder, case, suffix in GOLDEN:
        if suffix == "safetensors":
            state = safetensors.read_state(BOOSTERS_OUT / folder / f"{case}.safetensors")
            (summary,) = booster_summaries(state.meta["model"], {})
            assert summary["library_version"] is None, case
            model = aprender.load(BOOSTERS_OUT / folder / f"{case}.safetensors")
            (summary,) = booster_summaries(to_state(model).meta["model"], {})
            assert summary["library_version"] == sys.modules[summary["library"]].__version__, case


def test_a_file_of_another_release_loads(tmp_path: Path) -> None:
    """The recorded release is information: a file naming another one loads and predicts the same."""
    import catboost
    import numpy as np

    from aprender.codec import ModelState, to_state
    from aprender.format import safetensors

    X = np.arange(40.0).reshape(20, 2)
    model = catboost.CatBoostRegressor(iterations=3, depth=2, verbose=0, allow_writing_files=False).fit(X, X[:, 0])
    state = to_state(model)
    assert state.meta["model"]["attrs"]["_object"]["library_version"] == catboost.__version__
    state.meta["model"]["attrs"]["_object"]["library_version"] = "0.26.1"
    (tmp_path / "m.safetensors").write_bytes(safetensors.state_to_bytes(ModelState(state.tensors, state.meta)))
    assert (aprender.load(tmp_path / "m.safetensors").predict(X) == model.predict(X)).all()
