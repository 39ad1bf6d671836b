"""``apr inspect`` summarizes XGBoost, LightGBM and CatBoost boosters, alone or in a pipeline (issue 37).

The summary (objective, trees, iterations, best iteration, features, classes, nodes,
leaves, and with ``--tensors`` the largest depth) must agree with what the library itself
says of the fitted model, come from the metadata and tensor table alone (no library
needed), and give ``None`` rather than fail on arrays that do not form trees.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("xgboost", reason="the xgboost extra is not installed")
pytest.importorskip("lightgbm", reason="the lightgbm extra is not installed")
pytest.importorskip("catboost", reason="the catboost extra is not installed")

import catboost
import lightgbm
import xgboost
from cli_run import invoke
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import aprender
from aprender.cli._boosters import booster_summaries

rng = np.random.default_rng(0)
X = rng.normal(size=(300, 4))
Y3 = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])  # three classes
Y2 = (X[:, 0] > 0).astype(int)


def _lgbm_depth(tree: dict[str, Any]) -> int:
    node = tree["tree_structure"]

    def depth(n: dict[str, Any]) -> int:
        return 0 if "split_index" not in n else 1 + max(
            depth(n["left_child"]), depth(n["right_child"]))

    return depth(node)


def _expected(model: Any) -> dict[str, Any]:
    """What the library itself says of the fitted model."""
    if isinstance(model, xgboost.XGBModel):
        frame = model.get_booster().trees_to_dataframe()
        depth = 0
        for _, nodes in frame.groupby("Tree"):
            ids = dict(zip(nodes["ID"], zip(nodes["Yes"], nodes["No"], strict=True), strict=True))
            level, d = [nodes["ID"].iloc[0]], -1
            while level:
                d += 1
                level = [c for n in level for c in ids[n] if isinstance(c, str)]
            depth = max(depth, d)
        return {"library": "xgboost", "n_trees": len(model.get_booster().get_dump()),
                "n_nodes": len(frame), "n_leaves": int((frame["Feature"] == "Leaf").sum()), "max_depth": depth}
    if isinstance(model, lightgbm.LGBMModel):
        info = model.booster_.dump_model()["tree_info"]
        return {"library": "lightgbm", "n_trees": len(info), "n_leaves": sum(t["num_leaves"] for t in info),
                "n_nodes": sum(t["num_leaves"] - 1 for t in info), "max_depth": max(map(_lgbm_depth, info))}
    # Symmetric trees: every tree of a small fit has the full depth.
    return {"library": "catboost", "n_trees": model.tree_count_, "max_depth": model.get_param("depth")}


CASES = {
    "xgboost-multiclass": lambda: xgboost.XGBClassifier(n_estimators=4, max_depth=3).fit(X, Y3),
    "xgboost-early-stopped": lambda: xgboost.XGBClassifier(n_estimators=40, max_depth=2, early_stopping_rounds=2).fit(
        X[:200], Y2[:200], eval_set=[(X[200:], Y2[200:])], verbose=False),
    "lightgbm-multiclass": lambda: lightgbm.LGBMClassifier(n_estimators=3, num_leaves=5, verbose=-1).fit(X, Y3),
    "lightgbm-early-stopped": lambda: lightgbm.LGBMRegressor(n_estimators=40, num_leaves=4, verbose=-1).fit(
        X[:200], X[:200, 0], eval_set=[(X[200:], X[200:, 0])], callbacks=[lightgbm.early_stopping(2, verbose=False)]),
    "catboost-multiclass": lambda: catboost.CatBoostClassifier(
        iterations=3, depth=2, verbose=False, allow_writing_files=False).fit(X, Y3),
}


def _best(model: Any) -> int | None:
    best = getattr(model, "best_iteration", None) if isinstance(model, xgboost.XGBModel) else None
    if isinstance(model, lightgbm.LGBMModel):
        best = model.best_iteration_ or None
    return best


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("piped", [False, True], ids=["alone", "pipeline"])
def test_the_summary_agrees_with_the_library(case: str, piped: bool, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    model = CASES[case]()
    saved = make_pipeline(StandardScaler(), model) if piped else model
    if piped:
        saved.steps[0] = ("standardscaler", StandardScaler().fit(X))  # fitted; the booster stays as fitted
    path = tmp_path / "m.apr"
    aprender.save(saved, path)
    expected = _expected(model)
    plain = invoke(capsys, "inspect", path, "--json")
    assert plain.code == 0, plain.err
    (summary,) = plain.json["boosters"]
    assert summary["library"] == expected["library"]
    assert summary["library_version"] == sys.modules[expected["library"]].__version__
    assert summary["estimator"] == type(model).__name__
    assert summary["path"] == ("steps.1." + type(model).__name__.lower() + "." if piped else "") + (
        "_object" if expected["library"] == "catboost" else "_Booster")
    assert summary["n_trees"] == expected["n_trees"]
    per = 3 if case.endswith("multiclass") and expected["library"] != "catboost" else 1
    assert summary["trees_per_iteration"] == per and summary["n_iterations"] == expected["n_trees"] // per
    assert summary["n_features"] == 4
    assert summary["n_classes"] == (3 if case.endswith("multiclass") else 2 if "xgboost" in case else None)
    assert summary["best_iteration"] == _best(model)
    assert summary["objective"] in {"multi:softprob", "binary:logistic", "multiclass", "regression", "MultiClass"}
    if expected["library"] == "lightgbm":  # nodes and leaves are tensor lengths
        assert (summary["n_nodes"], summary["n_leaves"]) == (expected["n_nodes"], expected["n_leaves"])
    elif expected["library"] == "xgboost":  # its leaves are nodes: counting them reads the data
        assert (summary["n_nodes"], summary["n_leaves"]) == (expected["n_nodes"], None)
    assert summary["max_depth"] is None
    text = invoke(capsys, "inspect", path).out
    assert "needs the tensor data" in text
    assert re.search(rf"Library version\W+{re.escape(summary['library_version'])}\W", text)

    full = invoke(capsys, "inspect", path, "--tensors", "--json")
    (summary,) = full.json["boosters"]
    assert summary["max_depth"] == expected["max_depth"]
    if "n_leaves" in expected:
        assert summary["n_leaves"] == expected["n_leaves"]
    text = invoke(capsys, "inspect", path, "--tensors").out
    assert "Booster" in text and "needs the tensor data" not in text


def test_a_catboost_summary_lists_its_class_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = np.array(["no", "yes"])[Y2]
    model = catboost.CatBoostClassifier(iterations=2, depth=2, verbose=False, allow_writing_files=False).fit(X, labels)
    aprender.save(model, tmp_path / "m.safetensors")
    (summary,) = invoke(capsys, "inspect", tmp_path / "m.safetensors", "--json").json["boosters"]
    assert summary["classes"] == ["no", "yes"] and summary["n_classes"] == 2 and summary["objective"] == "Logloss"


def test_inspect_needs_none_of_the_libraries(tmp_path: Path) -> None:
    files = {}
    for case in ("xgboost-multiclass", "lightgbm-multiclass", "catboost-multiclass"):
        files[case] = str(tmp_path / f"{case}.gguf")
        aprender.save(CASES[case](), files[case])
    code = ("import json, sys\n"
            "for name in ('xgboost', 'lightgbm', 'catboost'):\n    sys.modules[name] = None\n"
            "from aprender.cli import main\n"
            "for path in sys.argv[1:]:\n    main(['inspect', path, '--tensors', '--json'])\n")
    done = subprocess.run([sys.executable, "-c", code, *files.values()], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    decoder, text, reports = json.JSONDecoder(), done.stdout.strip(), []
    while text:
        report, end = decoder.raw_decode(text)
        reports.append(report)
        text = text[end:].strip()
    summaries = [r["boosters"][0] for r in reports]
    assert [s["library"] for s in summaries] == ["xgboost", "lightgbm", "catboost"]
    assert all(s["n_trees"] and s["max_depth"] for s in summaries)


def test_arrays_that_form_no_tree_give_no_depth() -> None:
    def tensor(name: str) -> dict[str, str]:
        return {"__t__": "tensor", "name": name}

    node = {"__t__": "xgboost_booster", "num_class": 0, "num_target": 1, "num_parallel_tree": 1,
            "objective": {"name": "reg:squarederror"}, "num_feature": 2, "attributes": {},
            **{name: tensor(name) for name in ("left_children", "right_children", "node_offsets", "split_conditions")}}
    shapes = {"left_children": (3,), "right_children": (3,), "node_offsets": (2,), "split_conditions": (3,)}
    good = {"left_children": np.array([1, -1, -1], np.int32), "right_children": np.array([2, -1, -1], np.int32),
            "node_offsets": np.array([0, 3], np.int64)}
    assert booster_summaries(node, shapes, good)[0]["max_depth"] == 1
    broken = [{"left_children": np.array([1, 0, -1], np.int32)},  # a cycle
              {"left_children": np.array([1, 7, -1], np.int32)},  # a child past the tree
              {"node_offsets": np.array([0, 9], np.int64)},  # more nodes than the arrays hold
              {"right_children": np.array([1, -1, -1], np.int32)},  # node 1 reached twice
              {"left_children": np.array([1.0, -1, -1])}]  # not integers
    for change in broken:
        (summary,) = booster_summaries(node, shapes, {**good, **change})
        assert summary["max_depth"] is None, change
        assert summary["n_trees"] == 1 and summary["n_nodes"] == 3
