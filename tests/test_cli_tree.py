"""``apr inspect`` shows a model as the tree a scikit-learn user knows, in every format, without tags."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from cli_run import invoke
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import aprender
from aprender.cli._tree import untag

FRAME = pd.DataFrame({"age": [30.0, 41.0, np.nan, 25.0] * 10, "income": np.arange(40.0),
                      "city": ["lima", "oslo", "lima", "rome"] * 10})
Y = np.arange(40) % 2


def _pipeline(step: str = "ct") -> Pipeline:
    numeric = Pipeline([("imp", SimpleImputer(strategy="median")), ("sc", StandardScaler())])
    columns = ColumnTransformer([("num", numeric, ["age", "income"]),
                                 ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"])])
    forest = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0)
    return Pipeline([(step, columns), ("clf", forest)]).fit(FRAME, Y)


@pytest.mark.parametrize("suffix", [".apr", ".safetensors", ".gguf"])
def test_a_pipeline_reads_as_its_steps_columns_and_non_default_hyperparameters(suffix, tmp_path, capsys) -> None:
    path = tmp_path / f"pipe{suffix}"
    aprender.save(_pipeline(), path)
    out = invoke(capsys, "inspect", path).out
    lines = [line.rstrip() for line in out.splitlines()]
    start = lines.index("Model")
    assert lines[start + 1:start + 9] == [
        "Pipeline()",
        "├── ct: ColumnTransformer()",
        "│   ├── num: Pipeline()  ← ['age', 'income']",
        "│   │   ├── imp: SimpleImputer(strategy='median')",
        "│   │   └── sc: StandardScaler()",
        "│   └── cat: OneHotEncoder(handle_unknown='ignore')  ← ['city']",
        "└── clf: RandomForestClassifier(max_depth=3, n_estimators=4, random_state=0)",
        "Input 3 columns: age (number), income (number), city (string)",
    ]
    assert "__t__" not in out


def test_the_json_tree_has_no_tags(tmp_path, capsys) -> None:
    path = tmp_path / "pipe.apr"
    aprender.save(_pipeline(), path)
    report = invoke(capsys, "inspect", "--json", path).json
    assert "__t__" not in str(report["model"]) and "__t__" not in str(report["hyperparameters"])
    clf = report["model"]["children"][1]
    assert clf == {"name": "clf", "class": "RandomForestClassifier", "key": "sklearn.ensemble.RandomForestClassifier",
                   "params": {"max_depth": 3, "n_estimators": 4, "random_state": 0}, "children": []}
    assert report["inputs"] == [{"name": "age", "type": "number"}, {"name": "income", "type": "number"},
                                {"name": "city", "type": "string"}]


def test_an_onnx_file_shows_its_root(tmp_path, capsys) -> None:
    pytest.importorskip("skl2onnx", reason="ONNX export needs the onnx extra")
    from sklearn.linear_model import LogisticRegression

    path = tmp_path / "lr.onnx"
    X = FRAME[["age", "income"]].fillna(0).to_numpy()
    aprender.save(LogisticRegression(C=0.5, max_iter=500).fit(X, Y), path, X=X[:2])
    out = invoke(capsys, "inspect", path).out
    assert "LogisticRegression(C=0.5, max_iter=500)" in out


def test_a_file_chosen_step_name_is_shown_as_text(tmp_path, capsys) -> None:
    path = tmp_path / "pipe.apr"
    aprender.save(_pipeline(step="[red]x[/red]"), path)
    assert "[red]x[/red]: ColumnTransformer()" in invoke(capsys, "inspect", path).out


def test_the_defaults_table_is_current() -> None:
    done = subprocess.run([sys.executable, "tools/gen_param_defaults.py", "--check"], check=False)
    assert done.returncode == 0, "aprender/cli/_defaults.py is stale: run python tools/gen_param_defaults.py"


@pytest.mark.parametrize(("node", "expected"), [
    ({"__t__": "tuple", "v": [1, {"__t__": "float", "v": "nan"}]}, [1, "nan"]),
    ({"__t__": "dict", "items": [["a", {"__t__": "range", "start": 0, "stop": 3, "step": 1}]]},
     {"a": "range(0, 3, 1)"}),
    ({"__t__": "function", "name": "numpy.log1p"}, "numpy.log1p"),
    ({"__t__": "column_selector", "pattern": "^num_", "dtype_include": None, "dtype_exclude": None},
     "make_column_selector(pattern='^num_')"),
    ({"__t__": "sklearn_tree", "whatever": 1}, "<sklearn_tree>"),
])
def test_untag_untags_every_node(node, expected) -> None:
    assert untag(node) == expected
