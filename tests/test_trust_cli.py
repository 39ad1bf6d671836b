"""Trusting a user's own function from the command line and the server: ``--trust module:function``.

A DataFrame pipeline whose FunctionTransformer calls a function of the user's is refused by
``validate``, ``convert`` and ``serve`` unless the caller names the function with ``--trust``;
with it, the model is rebuilt and answers exactly as the one loaded with ``trusted=[func]``.
The spec comes from the caller, never from the file.
"""

from __future__ import annotations

import httpx
import numpy as np
import pandas as pd
import pytest
import user_funcs
from serve_helpers import serving
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

import aprender
from aprender.cli import main
from aprender.codec.trust import trusted_from_specs
from aprender.exceptions import UntrustedFunctionError
from aprender.serve import ServeConfig

SPEC = "user_funcs:shifted_log"
_RNG = np.random.RandomState(0)
FRAME = pd.DataFrame({"age": _RNG.randint(18, 80, 60).astype(float), "income": _RNG.gamma(2.0, 20.0, 60),
                      "city": _RNG.choice(["Lyon", "Paris", "Nice"], 60)})
LABELS = np.where(FRAME["age"] > 45, "churn", "stay")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, object]:
    columns = ColumnTransformer([("log", FunctionTransformer(user_funcs.shifted_log), ["age", "income"]),
                                 ("city", OneHotEncoder(handle_unknown="ignore"), ["city"])])
    model = make_pipeline(columns, LogisticRegression(max_iter=500)).fit(FRAME, LABELS)
    folder = tmp_path_factory.mktemp("trust")
    paths = {suffix: folder / f"churn.{suffix}" for suffix in ("apr", "safetensors", "gguf")}
    for path in paths.values():
        aprender.save(model, path)
    return {"model": model, **paths}


@pytest.mark.parametrize("suffix", ["apr", "safetensors", "gguf"])
def test_validate_refuses_the_function_and_names_the_flag_then_accepts_it(suffix, files, capsys) -> None:
    assert main(["validate", str(files[suffix])]) == 1
    assert f"--trust {SPEC}" in capsys.readouterr().err
    assert main(["validate", "--trust", SPEC, str(files[suffix])]) == 0


def test_convert_rebuilds_with_the_trusted_function(files, tmp_path) -> None:
    out = tmp_path / "churn32.safetensors"
    assert main(["convert", str(files["apr"]), "-o", str(out), "--dtype", "f32"]) == 1  # the cast rebuilds the model
    assert not out.exists()
    assert main(["convert", str(files["apr"]), "-o", str(out), "--dtype", "f32", "--trust", SPEC]) == 0
    with pytest.raises(UntrustedFunctionError):
        aprender.load(out)
    loaded = aprender.load(out, trusted=[user_funcs.shifted_log])
    assert np.array_equal(loaded.predict(FRAME), files["model"].predict(FRAME))


@pytest.mark.parametrize(("spec", "message"), [
    ("no_such_module_xyz:f", "cannot import no_such_module_xyz"),
    ("user_funcs:missing", "has no attribute missing"),
    ("user_funcs:CONSTANT", "is not a function"),
    ("builtins:type", "is not a function"),
    ("user_funcs:", "give the function as 'module:function'"),
    ("n_jobz", "neither 'module:function' nor a hyperparameter"),
])
def test_a_spec_that_names_no_function_is_a_usage_error(spec, message, files, capsys) -> None:
    assert main(["validate", "--trust", spec, str(files["apr"])]) == 2
    assert message in capsys.readouterr().err
    assert main(["serve", "--trust", spec, str(files["apr"]), "--port", "1"]) == 2  # before anything binds


def test_specs_resolve_to_the_objects_and_hyperparameter_names() -> None:
    assert trusted_from_specs([SPEC, "user_funcs:Scales.halve", "n_jobs", "memory"]) == [
        user_funcs.shifted_log, user_funcs.Scales.halve, "n_jobs", "memory"]


def test_the_server_loads_the_model_only_with_trust(files) -> None:
    records = FRAME.iloc[:5].to_dict(orient="records")
    expected = files["model"].predict(FRAME.iloc[:5]).tolist()
    config = ServeConfig((str(files["apr"]),), trusted=(SPEC,))
    assert ServeConfig.from_json(config.to_json()) == config  # what the worker processes receive
    with serving(config) as url:
        reply = httpx.post(f"{url}/predict", json={"model_id": "churn", "features": records})
        assert reply.status_code == 200, reply.text
        assert reply.json()["prediction"] == expected
    with serving(ServeConfig((str(files["apr"]),)), wait_ready=False) as url:
        refused = httpx.post(f"{url}/predict", json={"model_id": "churn", "features": records})
        assert refused.status_code >= 400
        assert "shifted_log" in refused.text and "not trusted" in refused.text


def test_distill_reads_a_teacher_file_only_with_trust(tmp_path, capsys) -> None:
    X = np.abs(_RNG.normal(size=(120, 3)))
    y = (X[:, 0] > X[:, 1]).astype(int)
    teacher = make_pipeline(FunctionTransformer(user_funcs.shifted_log), LogisticRegression()).fit(X, y)
    aprender.save(teacher, tmp_path / "teacher.apr")
    np.savez(tmp_path / "data.npz", X=X, y=y)
    args = ["distill", str(tmp_path / "teacher.apr"), "--student", "LogisticRegression", "--data",
            str(tmp_path / "data.npz"), "-o", str(tmp_path / "student.apr"), "--transfer-size", "240"]
    assert main(args) == 1
    assert f"--trust {SPEC}" in capsys.readouterr().err and not (tmp_path / "student.apr").exists()
    assert main([*args, "--trust", SPEC]) == 0
    student = aprender.load(tmp_path / "student.apr")
    assert student.provenance_["teachers"][0]["class"] == "Pipeline"
    # The library call takes the same trust; the recorded sha256 is the teacher file's either way.
    direct = aprender.distill(tmp_path / "teacher.apr", LogisticRegression(), X, y, transfer_size=240,
                              trusted=[user_funcs.shifted_log])
    assert direct.provenance_["teachers"] == student.provenance_["teachers"]
    np.testing.assert_array_equal(direct.predict(X), student.predict(X))
