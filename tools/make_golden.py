"""Regenerate the cross-version golden files under tests/data/compat/<scikit-learn version>/.

For each scikit-learn version asked for, this builds (once, cached under
``$APRENDER_COMPAT_VENVS``, default /tmp/aprender-compat) a venv holding that
scikit-learn, numpy/scipy/pandas of its time and aprender's other dependencies,
then runs itself there with this checkout on ``PYTHONPATH`` (``--save-into``): it
fits every recipe of :data:`RECIPES`, saves each model as SafeTensors and as .apr,
and writes its inputs and the outputs of every inference method with ``np.savez``
(``allow_pickle=False``) beside a JSON manifest. tests/test_compat.py loads them all
under the running scikit-learn and compares outputs bit for bit.

    python tools/make_golden.py                      # 1.6.1 1.7.2 1.8.0 and the running version
    python tools/make_golden.py --versions 1.6.1     # one version
    python tools/make_golden.py --matrix             # load every file under every version: the matrix
    python tools/make_golden.py --lower-bound-venv   # the oldest version's venv with this checkout installed:
                                                     # print its python (.ci/run tests the lower bound there)
    python tools/make_golden.py --boosters           # XGBoost, LightGBM and CatBoost files under their previous
                                                     # releases (BOOSTER_PINS), into tests/data/compat-boosters/

Recipes use only what every supported scikit-learn version has, fit small models on
small data, and never change once their files are committed (add new ones instead):
the files of an old version cannot be made again once that version no longer installs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "compat"
VENVS = Path(os.environ.get("APRENDER_COMPAT_VENVS", "/tmp/aprender-compat"))

#: The last release of each supported minor version, with the numpy, scipy and pandas
#: of its time (pip's newest would be later releases the old scikit-learn never met).
PINS: dict[str, tuple[str, ...]] = {
    "1.6.1": ("numpy<2.3", "scipy<1.16", "pandas<2.3"),
    "1.7.2": ("numpy<2.4", "scipy<1.17", "pandas<3"),
    "1.8.0": ("numpy<2.4", "scipy<1.17", "pandas<3"),
}
#: The oldest supported version: pyproject.toml's ``scikit-learn>=`` bound, tested by .ci/run.
LOWER_BOUND = "1.6.1"
#: Besides the pins: aprender's core dependencies, pandas for the DataFrame recipes, pytest.
EXTRA = ("pytest",)

#: The previous release of each gradient-boosting library aprender stores the estimators of (the
#: newest installable for CatBoost, whose 1.1 has no wheel for this Python): their files must load
#: identically under the newest release (tests/test_compat_boosters.py).
BOOSTER_PINS = ("xgboost==3.1.3", "lightgbm==4.6.0", "catboost==1.2.8")
BOOSTERS_OUT = REPO / "tests" / "data" / "compat-boosters"

#: Inference methods recorded when a model has them (tests/support/zoo.py's list).
METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform",
           "score_samples", "kneighbors")


# -- venvs -------------------------------------------------------------------------------

def _core_dependencies() -> list[str]:
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if not d.startswith(("numpy", "scipy", "scikit-learn"))]


def venv_python(version: str, *, with_checkout: bool = False) -> Path:
    """The python of a venv with scikit-learn ``version`` and aprender's dependencies (built once).

    ``with_checkout`` also pip-installs this checkout there, in the same resolve as the
    pins when the venv is new: pip must accept pyproject.toml's dependencies next to them.
    """
    venv = VENVS / f"sklearn-{version}"
    python = venv / "bin" / "python"
    pins = [f"scikit-learn=={version}", *PINS[version]]
    checkout = [str(REPO)] if with_checkout else []
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    probe = [str(python), "-c", "import sklearn, pandas, pytest, safetensors; print(sklearn.__version__)"]
    if python.exists() and subprocess.run(probe, capture_output=True, text=True).stdout.strip() == version:
        if checkout:
            subprocess.run([*pip, *checkout, *pins], check=True, stdout=sys.stderr)
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([*pip, *checkout, *pins, *_core_dependencies(), *EXTRA], check=True, stdout=sys.stderr)
    return python


def booster_venv() -> Path:
    """The python of a venv with the running scikit-learn and numpy and :data:`BOOSTER_PINS` (built once)."""
    import numpy as np
    import sklearn

    venv = VENVS / "boosters-prev"
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import xgboost, lightgbm, catboost, pandas, safetensors; "
             "print(xgboost.__version__, lightgbm.__version__, catboost.__version__)"]
    wanted = " ".join(pin.partition("==")[2] for pin in BOOSTER_PINS)
    if python.exists() and subprocess.run(probe, capture_output=True, text=True).stdout.strip() == wanted:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *BOOSTER_PINS,
                    f"scikit-learn=={sklearn.__version__}", f"numpy=={np.__version__}", "pandas",
                    *_core_dependencies(), *EXTRA], check=True, stdout=sys.stderr)
    return python


# -- recipes (run inside the venv) -----------------------------------------------------------

def _data() -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    from sklearn.datasets import load_diabetes, load_iris

    Xi, yi = load_iris(return_X_y=True)
    Xd, yd = load_diabetes(return_X_y=True)
    Xd, yd = Xd[:100], yd[:100]
    nan = Xi.copy()
    for j in range(4):
        nan[j::7, j] = np.nan
    frame = pd.DataFrame(Xi, columns=["sl", "sw", "pl", "pw"])
    frame["size"] = np.array(["small", "medium", "large"])[np.digitize(Xi[:, 2], [2.5, 5.0])]
    frame["shape"] = np.where(Xi[:, 0] / Xi[:, 1] > 2.0, "long", "round")
    names = np.array(["setosa", "versicolor", "virginica"])[yi]
    texts = ["simmer the tomato sauce and stir the pasta", "knead the dough then bake the bread",
             "season the soup with salt and basil", "roast the vegetables in the oven",
             "the rocket reached orbit at dawn", "astronauts watched the sun rise over the planet",
             "the telescope captured a distant galaxy", "rovers drill the red rock of mars"]
    return {"iris": (Xi, yi), "names": names, "diabetes": (Xd, yd), "nan": nan, "frame": frame,
            "texts": texts, "topics": np.array([0] * 4 + [1] * 4)}


def recipes() -> dict[str, Callable[[dict[str, Any]], tuple[Any, Any]]]:
    """name -> (data -> (fitted estimator, inference input)); one or more per family."""
    from sklearn import cluster as skc
    from sklearn import compose as skco
    from sklearn import ensemble as ske
    from sklearn import feature_extraction as skfe
    from sklearn import linear_model as skl
    from sklearn import naive_bayes as sknb
    from sklearn import pipeline as skp
    from sklearn import preprocessing as skpre
    from sklearn import svm as sks
    from sklearn import tree as skt

    from aprender import (
        cluster,
        compose,
        decomposition,
        ensemble,
        feature_extraction,
        impute,
        linear_model,
        neighbors,
        neural_network,
        pipeline,
        preprocessing,
        svm,
        tree,
    )
    from aprender.recommend import ContentRecommender
    from aprender.text import NgramLm

    def iris(est: Any) -> Callable[[dict], tuple[Any, Any]]:
        return lambda d: (est.fit(*d["iris"]), d["iris"][0][::10])

    def diabetes(est: Any) -> Callable[[dict], tuple[Any, Any]]:
        return lambda d: (est.fit(*d["diabetes"]), d["diabetes"][0][:12])

    def unsupervised(est: Any) -> Callable[[dict], tuple[Any, Any]]:
        return lambda d: (est.fit(d["iris"][0]), d["iris"][0][::10])

    def frame_pipeline(d: dict) -> tuple[Any, Any]:
        prep = compose.ColumnTransformer([
            ("cat", preprocessing.OneHotEncoder(handle_unknown="ignore"), ["size", "shape"]),
            ("num", preprocessing.StandardScaler(), ["sl", "sw"]),
        ], remainder="passthrough")
        pipe = pipeline.Pipeline([("prep", prep), ("clf", linear_model.LogisticRegression(max_iter=500))])
        return pipe.fit(d["frame"], d["names"]), d["frame"].iloc[::10]

    def sklearn_frame(d: dict) -> tuple[Any, Any]:
        prep = skco.ColumnTransformer([("cat", skpre.OneHotEncoder(drop="first"), ["size", "shape"])],
                                      remainder=skpre.StandardScaler())
        return prep.fit(d["frame"]), d["frame"].iloc[::10]

    def text(d: dict) -> tuple[Any, Any]:
        pipe = pipeline.Pipeline([("tfidf", feature_extraction.text.TfidfVectorizer(ngram_range=(1, 2))),
                                  ("clf", linear_model.LogisticRegression())])
        return pipe.fit(d["texts"], d["topics"]), d["texts"] + ["bake the galaxy", "zebras"]

    def hgb(est: Any, target: str) -> Callable[[dict], tuple[Any, Any]]:
        return lambda d: (est.fit(d["nan"], d["names"] if target == "names" else d["iris"][0][:, 3]), d["nan"][::5])

    def ngram(d: dict) -> tuple[Any, Any]:
        return NgramLm(n=2).fit(d["texts"]), [*d["texts"][:3], "the sauce reached orbit"]

    def recommender(d: dict) -> tuple[Any, Any]:
        items = {f"item-{i}": t for i, t in enumerate(d["texts"])}
        return ContentRecommender().fit(list(items.values()), item_ids=list(items)), ["bread and basil", "a red planet"]

    return {
        "LinearRegression": diabetes(linear_model.LinearRegression()),
        "Ridge-sklearn": diabetes(skl.Ridge(alpha=0.5)),
        "LogisticRegression-strings": lambda d: (linear_model.LogisticRegression(max_iter=1000).fit(
            d["iris"][0], d["names"]), d["iris"][0][::10]),
        "LogisticRegression-binary-sklearn": lambda d: (skl.LogisticRegression().fit(
            d["iris"][0], d["iris"][1] == 1), d["iris"][0][::10]),
        "SGDClassifier-sklearn": iris(skl.SGDClassifier(random_state=0)),
        "DecisionTreeClassifier": iris(tree.DecisionTreeClassifier(max_depth=4, random_state=0)),
        "DecisionTreeRegressor-sklearn": diabetes(skt.DecisionTreeRegressor(max_depth=3, random_state=0)),
        "RandomForestClassifier": iris(ensemble.RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0)),
        "ExtraTreesRegressor-sklearn": diabetes(ske.ExtraTreesRegressor(n_estimators=3, max_depth=3,
                                                                        random_state=0)),
        "GradientBoostingClassifier": iris(ensemble.GradientBoostingClassifier(n_estimators=5, max_depth=2,
                                                                               random_state=0)),
        "GradientBoostingRegressor-sklearn": diabetes(ske.GradientBoostingRegressor(n_estimators=5, max_depth=2,
                                                                                    random_state=0)),
        "HistGradientBoostingClassifier-nan": hgb(ensemble.HistGradientBoostingClassifier(max_iter=5,
                                                                                          random_state=0), "names"),
        "HistGradientBoostingRegressor-nan-sklearn": hgb(ske.HistGradientBoostingRegressor(max_iter=5,
                                                                                           random_state=0), "width"),
        "AdaBoostClassifier-sklearn": iris(ske.AdaBoostClassifier(n_estimators=5, random_state=0)),
        "BaggingClassifier-sklearn": iris(ske.BaggingClassifier(n_estimators=3, random_state=0)),
        "IsolationForest-sklearn": unsupervised(ske.IsolationForest(n_estimators=3, max_samples=32, random_state=0)),
        "KMeans": unsupervised(cluster.KMeans(n_clusters=3, n_init=2, random_state=0)),
        "MiniBatchKMeans-sklearn": unsupervised(skc.MiniBatchKMeans(n_clusters=3, n_init=1, random_state=0)),
        "PCA": unsupervised(decomposition.PCA(n_components=2)),
        "GaussianNB-sklearn": iris(sknb.GaussianNB()),
        "KNeighborsClassifier": iris(neighbors.KNeighborsClassifier(n_neighbors=5)),
        "SVC-probability": iris(svm.SVC(probability=True, random_state=0)),
        "SVR-sklearn": diabetes(sks.SVR(C=50.0)),
        "LinearSVC": iris(svm.LinearSVC(random_state=0)),
        "MLPClassifier": iris(neural_network.MLPClassifier(hidden_layer_sizes=(5,), max_iter=30, random_state=0)),
        "StandardScaler": unsupervised(preprocessing.StandardScaler()),
        "OneHotEncoder": lambda d: (preprocessing.OneHotEncoder(handle_unknown="ignore").fit(
            d["frame"][["size", "shape"]].to_numpy()), d["frame"][["size", "shape"]].to_numpy()[::10]),
        "SimpleImputer": lambda d: (impute.SimpleImputer(strategy="median").fit(d["nan"]), d["nan"][::5]),
        "CountVectorizer-sklearn": lambda d: (skfe.text.CountVectorizer(ngram_range=(1, 2)).fit(d["texts"]),
                                              [*d["texts"], "bake the galaxy"]),
        "TfidfVectorizer": lambda d: (feature_extraction.text.TfidfVectorizer(sublinear_tf=True).fit(d["texts"]),
                                      [*d["texts"], "bake the galaxy"]),
        "Pipeline-text": text,
        "Pipeline-frame-columns": frame_pipeline,
        "ColumnTransformer-frame-sklearn": sklearn_frame,
        "Pipeline-scaler-ridge-sklearn": lambda d: (skp.make_pipeline(skpre.StandardScaler(), skl.Ridge()).fit(
            *d["diabetes"]), d["diabetes"][0][:12]),
        "MixtureOfExpertsClassifier": lambda d: (ensemble.MixtureOfExpertsClassifier(
            n_experts=2, tol=1e-2, max_iter=5, random_state=0).fit(d["iris"][0], d["names"]), d["iris"][0][::10]),
        "NgramLm": ngram,
        "ContentRecommender": recommender,
    }


def booster_recipes() -> dict[str, Callable[[dict[str, Any]], tuple[Any, Any]]]:
    """name -> (data -> (fitted estimator, inference input)) for XGBoost, LightGBM and CatBoost."""
    import catboost
    import lightgbm
    import numpy as np
    import xgboost
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def coded(d: dict) -> Any:  # a categorical column of integer codes, and missing values
        X = d["nan"].copy()
        X[:, 0] = np.digitize(d["iris"][0][:, 0], [5.0, 6.0, 7.0])
        return X

    small = {"n_estimators": 6, "num_leaves": 7, "min_child_samples": 5, "verbose": -1}
    cat = {"iterations": 6, "depth": 3, "verbose": 0, "allow_writing_files": False, "random_seed": 0}
    return {
        "XGBClassifier-nan": lambda d: (xgboost.XGBClassifier(n_estimators=6, max_depth=3).fit(
            d["nan"], d["iris"][1]), d["nan"][::5]),
        "XGBRegressor-pipeline": lambda d: (make_pipeline(StandardScaler(), xgboost.XGBRegressor(
            n_estimators=6, max_depth=3)).fit(*d["diabetes"]), d["diabetes"][0][:12]),
        "LGBMClassifier-categorical": lambda d: (lightgbm.LGBMClassifier(**small).fit(
            coded(d), d["names"], categorical_feature=[0]), coded(d)[::5]),
        "LGBMRegressor": lambda d: (lightgbm.LGBMRegressor(**small).fit(*d["diabetes"]), d["diabetes"][0][:12]),
        "CatBoostClassifier-strings": lambda d: (catboost.CatBoostClassifier(**cat).fit(d["nan"], d["names"]),
                                                 d["nan"][::5]),
        "CatBoostRegressor": lambda d: (catboost.CatBoostRegressor(**cat).fit(*d["diabetes"]), d["diabetes"][0][:12]),
    }


# -- saving (run inside the venv) ------------------------------------------------------------

def as_arrays(prefix: str, value: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """An input or output as npz arrays (no pickle) and the record that rebuilds it."""
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp

    if isinstance(value, pd.DataFrame):
        arrays = {f"{prefix}.{c}": plain(value[c].to_numpy()) for c in value.columns}
        return arrays, {"kind": "frame", "columns": list(value.columns)}
    if isinstance(value, tuple):
        arrays = {f"{prefix}.{i}": plain(np.asarray(v)) for i, v in enumerate(value)}
        return arrays, {"kind": "tuple", "n": len(value)}
    if sp.issparse(value):
        return {prefix: value.toarray()}, {"kind": "sparse", "format": value.format}
    if isinstance(value, list):
        return {prefix: np.array(value, dtype=str)}, {"kind": "list"}
    array = np.asarray(value)
    return {prefix: plain(array)}, {"kind": "array", "dtype": array.dtype.str}


def plain(array: Any) -> Any:
    """Object arrays of strings become unicode arrays: np.savez stores them without pickle."""
    return array.astype(str) if array.dtype.kind == "O" else array


def save_here(out: Path, boosters: bool = False) -> None:
    """Fit every recipe (``boosters``: of :func:`booster_recipes`) under this interpreter and write its files."""
    import importlib

    import numpy as np
    import scipy
    import sklearn

    import aprender

    out.mkdir(parents=True, exist_ok=True)
    data = _data()
    manifest: dict[str, Any] = {"sklearn": sklearn.__version__, "numpy": np.__version__, "scipy": scipy.__version__,
                                "python": platform.python_version(), "cases": {}}
    if boosters:
        manifest["libraries"] = {pin.partition("==")[0]: importlib.import_module(pin.partition("==")[0]).__version__
                                 for pin in BOOSTER_PINS}
    for name, recipe in (booster_recipes() if boosters else recipes()).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence and deprecation warnings of short fits
            est, X = recipe(data)
            arrays, x_record = as_arrays("X", X)
            methods = {}
            for method in METHODS:
                if hasattr(est, method):
                    out_arrays, record = as_arrays(method, getattr(est, method)(X))
                    arrays.update(out_arrays)
                    methods[method] = record
        aprender.save(est, out / f"{name}.safetensors")
        aprender.save(est, out / f"{name}.apr", compression="zstd")
        np.savez_compressed(out / f"{name}.npz", allow_pickle=False, **arrays)
        manifest["cases"][name] = {"class": f"{type(est).__module__}.{type(est).__qualname__}",
                                   "input": x_record, "methods": methods}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


# -- checking (under any version) ----------------------------------------------------------------

#: Outputs that LAPACK computes at inference (PCA.score_samples inverts the covariance):
#: their last bits follow the numpy/scipy build, not the stored state. A model saved under
#: scikit-learn 1.8 with numpy 2.3 gives these same bits under 1.8 with numpy 2.4 as under
#: 1.9.1; they are compared exactly when the file's numpy and scipy are the running ones.
LAPACK_OUTPUTS = {("PCA", "score_samples")}


def manifests(root: Path = OUT) -> dict[str, dict[str, Any]]:
    """scikit-learn version -> manifest of its golden files."""
    return {d.name: json.loads((d / "manifest.json").read_text()) for d in sorted(root.iterdir())
            if (d / "manifest.json").exists()}


def load_input(arrays: Any, record: dict[str, Any]) -> Any:
    """The inference input a manifest record describes, from the case's npz arrays."""
    import pandas as pd

    if record["kind"] == "frame":
        return pd.DataFrame({c: arrays[f"X.{c}"] for c in record["columns"]})
    if record["kind"] == "list":
        return arrays["X"].tolist()
    X = arrays["X"]
    return X.astype(object) if record.get("dtype") == "|O" else X


def check_outputs(model: Any, folder: Path, case: str, *, new_methods: bool = False) -> None:
    """``model`` reproduces every recorded output of ``case`` (AssertionError naming the first that differs).

    ``new_methods`` accepts inference methods the saving release did not have (LightGBM 4.7's
    classifiers gained ``decision_function``); by default the model has exactly the recorded ones.
    """
    import numpy as np
    import scipy

    manifest = json.loads((folder / "manifest.json").read_text())
    record = manifest["cases"][case]
    same_libraries = (manifest["numpy"], manifest.get("scipy")) == (np.__version__, scipy.__version__)
    assert f"{type(model).__module__}.{type(model).__qualname__}" == record["class"]
    has = {m for m in METHODS if hasattr(model, m)}
    assert set(record["methods"]) <= has if new_methods else set(record["methods"]) == has, sorted(has)
    with np.load(folder / f"{case}.npz", allow_pickle=False) as arrays:
        X = load_input(arrays, record["input"])
        for method, expected in record["methods"].items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # deprecated properties read by inference
                warnings.simplefilter("ignore", RuntimeWarning)  # log(0) of pure leaves
                actual, actual_record = as_arrays(method, getattr(model, method)(X))
            assert actual_record == expected, f"{method}: {actual_record} != {expected}"
            for key, value in actual.items():
                want = arrays[key]
                assert value.dtype == want.dtype, f"{method}: dtype {value.dtype} != {want.dtype}"
                assert value.shape == want.shape, f"{method}: shape {value.shape} != {want.shape}"
                if (case, method) in LAPACK_OUTPUTS and not same_libraries:
                    np.testing.assert_allclose(value, want, rtol=1e-13, atol=0, err_msg=method)
                else:
                    assert np.array_equal(value, want, equal_nan=value.dtype.kind in "fc"), f"{method} differs"


def check_here(root: Path) -> dict[str, Any]:
    """Load every golden file under this interpreter: per saved version and format, what happened."""
    import sklearn

    import aprender
    from aprender.exceptions import UnsupportedVersion

    results: dict[str, Any] = {"sklearn": sklearn.__version__, "saved": {}}
    for version, manifest in manifests(root).items():
        for suffix in ("safetensors", "apr"):
            row = results["saved"].setdefault(version, {}).setdefault(
                suffix, {"identical": 0, "refused": [], "failed": [], "total": 0})
            for case in manifest["cases"]:
                row["total"] += 1
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = aprender.load(root / version / f"{case}.{suffix}")
                    check_outputs(model, root / version, case)
                    row["identical"] += 1
                except UnsupportedVersion as exc:
                    row["refused"].append(f"{case}: {exc}")
                except Exception as exc:
                    row["failed"].append(f"{case}: {type(exc).__name__}: {str(exc)[:300]}")
    return results


def matrix(versions: list[str]) -> str:
    """The markdown matrix of every golden file loaded under every version (a real run)."""
    runs = []
    for version in versions:
        python = Path(sys.executable) if version == "current" else venv_python(version)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run([str(python), __file__, "--check-here"], check=True, env=env, capture_output=True,
                              text=True)
        runs.append(json.loads(done.stdout))
    loaded = [r["sklearn"] for r in runs]
    lines = ["| saved under \\ loaded under | " + " | ".join(loaded) + " |",
             "|---|" + "---|" * len(loaded)]
    for saved in runs[0]["saved"]:
        cells = []
        for run in runs:
            row = run["saved"][saved]
            st, apr = row["safetensors"], row["apr"]
            cell = f"{st['identical']} / {apr['identical']} of {st['total']}"
            refused = len(st["refused"]) + len(apr["refused"])
            failed = len(st["failed"]) + len(apr["failed"])
            cell += (f", {refused} refused" if refused else "") + (f", **{failed} failed**" if failed else "")
            cells.append(cell)
        lines.append(f"| {saved} | " + " | ".join(cells) + " |")
    details = [f"- loaded under {r['sklearn']}, saved under {v} ({fmt}): {item}"
               for r in runs for v, row in r["saved"].items() for fmt, res in row.items()
               for item in res["refused"] + res["failed"]]
    return "\n".join(lines + (["", *details] if details else []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", nargs="*", default=[*PINS, "current"],
                        help="scikit-learn versions (from: %(default)s); 'current' is this interpreter's")
    parser.add_argument("--save-into", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--boosters", action="store_true",
                        help="write the gradient-boosting libraries' files under their previous releases instead")
    parser.add_argument("--check-here", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--matrix", action="store_true",
                        help="load every golden file under every version and print the markdown matrix")
    parser.add_argument("--lower-bound-venv", action="store_true",
                        help="install this checkout in the oldest supported version's venv, print its python")
    args = parser.parse_args(argv)
    if args.save_into is not None:
        save_here(args.save_into, boosters=args.boosters)
        return 0
    if args.boosters:
        folder = BOOSTERS_OUT / "_".join(pin.replace("==", "-") for pin in BOOSTER_PINS)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([str(booster_venv()), __file__, "--boosters", "--save-into", str(folder)], check=True, env=env)
        print(f"wrote {folder}")
        return 0
    if args.check_here:
        print(json.dumps(check_here(OUT)))
        return 0
    if args.matrix:
        print(matrix(args.versions))
        return 0
    if args.lower_bound_venv:
        print(venv_python(LOWER_BOUND, with_checkout=True))
        return 0
    for version in args.versions:
        if version == "current":
            import sklearn

            python, version = Path(sys.executable), sklearn.__version__
        else:
            python = venv_python(version)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([str(python), __file__, "--save-into", str(OUT / version)], check=True, env=env)
        print(f"wrote {OUT / version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
