"""aprender.dask on a real distributed.LocalCluster with two worker processes.

Predictions are compared exactly with the same model in this process: labels, tree
probabilities and element-wise transforms. (A linear model's probabilities go through
BLAS, whose last bits depend on the memory layout and alignment of each block, so
they are not compared bit for bit.) The cluster is
started once for the module; its workers preload tests/support/dask_models.py, which registers
a model class that cannot be pickled.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from dask_models import UnpicklableLogisticRegression, loaded
from distributed import Client, LocalCluster

import aprender.dask
from aprender.dask._scoring import ModelPlugin
from aprender.ensemble import RandomForestClassifier
from aprender.exceptions import FormatError, SignatureInvalid
from aprender.format import apr
from aprender.linear_model import LogisticRegression
from aprender.preprocessing import StandardScaler


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    # by module name (tests/ is on sys.path, which spawned workers inherit): a file path would be reloaded
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                      preload=["dask_models"]) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["a", "b", "c"])
    return X.set_index(pd.Index(rng.permutation(400) + 10_000, name="row"))


@pytest.fixture(scope="module")
def labels(frame: pd.DataFrame) -> np.ndarray:
    return np.where(frame["a"] + frame["b"] > 0, "buy", np.where(frame["c"] > 0, "hold", "sell"))


@pytest.fixture(scope="module")
def forest(frame: pd.DataFrame, labels: np.ndarray) -> RandomForestClassifier:
    return RandomForestClassifier(n_estimators=8, max_depth=6, random_state=0).fit(frame, labels)


def test_dataframe_keeps_partitions_index_and_dtypes(client: Client, frame: pd.DataFrame,
                                                     forest: RandomForestClassifier) -> None:
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    labels = aprender.dask.predict(forest, ddf, client=client)
    assert isinstance(labels, dd.Series) and labels.npartitions == 4
    result = labels.compute()
    expected = forest.predict(frame)
    assert result.dtype == pd.Series(expected).dtype  # as pandas holds the in-process output
    np.testing.assert_array_equal(result.to_numpy(), expected)
    pd.testing.assert_index_equal(result.index, frame.index)

    proba = aprender.dask.predict(forest, ddf, "predict_proba", client=client)
    assert list(proba.columns) == ["buy", "hold", "sell"] and proba.npartitions == 4
    computed = proba.compute()
    pd.testing.assert_index_equal(computed.index, frame.index)
    np.testing.assert_array_equal(computed.to_numpy(), forest.predict_proba(frame))
    assert (computed.dtypes == np.float64).all()


def test_transform_columns_and_array_input(client: Client, frame: pd.DataFrame) -> None:
    scaler = StandardScaler().fit(frame)
    out = aprender.dask.predict(scaler, dd.from_pandas(frame, npartitions=3, sort=False), "transform", client=client)
    assert list(out.columns) == ["a", "b", "c"]
    np.testing.assert_array_equal(out.compute().to_numpy(), scaler.transform(frame))

    X = frame.to_numpy()
    array = da.from_array(X, chunks=(100, 2))  # column chunks are merged into whole rows
    scaled = aprender.dask.predict(scaler, array, "transform", client=client)
    assert scaled.chunks == ((100, 100, 100, 100), (3,)) and scaled.dtype == np.float64
    np.testing.assert_array_equal(scaled.compute(), scaler.transform(X))
    model = LogisticRegression().fit(X, (X[:, 0] > 0).astype(np.int64))
    labels = aprender.dask.predict(model, array, client=client)
    assert labels.chunks == ((100, 100, 100, 100),) and labels.dtype == np.int64
    np.testing.assert_array_equal(labels.compute(), model.predict(X))


def test_unpicklable_model_scores_because_only_bytes_travel(client: Client, frame: pd.DataFrame) -> None:
    y = (frame["a"] > 0).to_numpy().astype(np.int64)
    model = UnpicklableLogisticRegression().fit(frame, y)
    with pytest.raises(TypeError, match="must never be pickled"):
        pickle.dumps(model)
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    labels = aprender.dask.predict(model, ddf, client=client).compute()
    np.testing.assert_array_equal(labels.to_numpy(), model.predict(frame))
    name = aprender.dask.model_bytes(model).plugin_name(None)
    # each worker loaded the model once, as the registered class, with writable (private) arrays
    assert list(client.run(loaded, name).values()) == [{"class": "UnpicklableLogisticRegression",
                                                        "writeable": True}] * 2
    aprender.dask.release(model, client=client)
    assert list(client.run(loaded, name).values()) == [None, None]


@pytest.mark.parametrize("suffix", [".apr", ".safetensors"])
def test_model_files_ship_as_they_are(client: Client, frame: pd.DataFrame, forest: RandomForestClassifier,
                                      tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"forest{suffix}"
    if suffix == ".apr":
        forest.save_apr(path, compression="zstd")
    else:
        forest.save_safetensors(path)
    shipped = aprender.dask.model_bytes(path)
    assert shipped.data == path.read_bytes() and shipped.suffix == suffix
    result = aprender.dask.predict(path, dd.from_pandas(frame, npartitions=2, sort=False), client=client).compute()
    np.testing.assert_array_equal(result.to_numpy(), forest.predict(frame))


def test_trusted_key_makes_workers_verify_signatures(client: Client, frame: pd.DataFrame,
                                                     forest: RandomForestClassifier, tmp_path: Path) -> None:
    signer, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    signed, plain = tmp_path / "signed.apr", tmp_path / "plain.apr"
    apr.save_signed(forest, signed, signer)
    forest.save_apr(plain)
    ddf = dd.from_pandas(frame, npartitions=2, sort=False)
    result = aprender.dask.predict(signed, ddf, client=client, trusted_key=signer.public_key()).compute()
    np.testing.assert_array_equal(result.to_numpy(), forest.predict(frame))
    with pytest.raises(SignatureInvalid):
        aprender.dask.predict(signed, ddf, client=client, trusted_key=other.public_key())
    with pytest.raises(SignatureInvalid):
        aprender.dask.predict(plain, ddf, client=client, trusted_key=signer.public_key())
    forest.save_safetensors(tmp_path / "m.safetensors")
    with pytest.raises(SignatureInvalid, match="carries no signature"):
        aprender.dask.predict(tmp_path / "m.safetensors", ddf, client=client, trusted_key=signer.public_key())


def test_workers_check_the_digest_of_what_they_receive(client: Client, forest: RandomForestClassifier) -> None:
    shipped = aprender.dask.model_bytes(forest)
    plugin = ModelPlugin("aprender-test-bad-digest", shipped.data, "0" * 64, ".apr", None)
    with pytest.raises(FormatError, match="expected 0000"):
        client.register_plugin(plugin, name=plugin.name)
    client.unregister_worker_plugin(plugin.name)


def test_bad_requests(client: Client, frame: pd.DataFrame, forest: RandomForestClassifier, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="dask DataFrame or Array"):
        aprender.dask.predict(forest, frame, client=client)
    with pytest.raises(AttributeError, match="no method 'transform'"):
        aprender.dask.predict(forest, dd.from_pandas(frame, npartitions=1), "transform", client=client)
    (tmp_path / "notes.txt").write_text("not a model at all")
    with pytest.raises(FormatError, match=r"ships SafeTensors or \.apr or GGUF files"):
        aprender.dask.predict(tmp_path / "notes.txt", dd.from_pandas(frame, npartitions=1), client=client)
    with pytest.raises(FileNotFoundError, match="no such model file"):
        aprender.dask.predict(tmp_path / "missing.apr", dd.from_pandas(frame, npartitions=1), client=client)


def test_missing_strings_of_pyarrow_columns_score_once_turned_back_into_nan(client: Client, tmp_path: Path) -> None:
    """The recipe of docs/dask.md: dask's string[pyarrow] columns hold pd.NA, which the imputer chokes on."""
    from aprender.compose import ColumnTransformer
    from aprender.impute import SimpleImputer
    from aprender.pipeline import make_pipeline
    from aprender.preprocessing import OneHotEncoder

    rng = np.random.RandomState(0)
    table = pd.DataFrame({"city": rng.choice(["Lyon", "Nice", np.nan], 60).astype(object),
                          "amount": rng.normal(size=60)})
    table["city"] = table["city"].where(table["city"] != "nan", np.nan)
    labels = (table["amount"] > 0).to_numpy().astype(np.int64)
    strings = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder())
    model = make_pipeline(ColumnTransformer([("city", strings, ["city"])], remainder="passthrough"),
                          LogisticRegression()).fit(table, labels)
    path = tmp_path / "cities.apr"
    aprender.save(model, path)
    frame = dd.from_pandas(table, npartitions=2)
    assert str(frame.dtypes["city"]).startswith("string")  # what dask made of the object column
    with pytest.raises((TypeError, ValueError), match=r"boolean value of NA is ambiguous|Found unknown categories"):
        aprender.dask.predict(path, frame).compute()

    def nan_strings(part):
        strings = part.select_dtypes(include=["string"]).columns
        return part.astype({c: object for c in strings}).mask(part.isna(), np.nan)

    scored = aprender.dask.predict(path, frame.map_partitions(nan_strings)).compute()
    assert np.array_equal(scored.to_numpy(), model.predict(table))
    aprender.dask.release(path)


def test_trusted_functions_reach_the_workers_as_specs(client: Client, frame: pd.DataFrame, tmp_path: Path) -> None:
    """A pipeline that calls a function of the user's: refused on the client without trust; with
    trusted=[func], each worker imports it by module:qualname and scores as this process does."""
    import user_funcs
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from aprender.exceptions import UntrustedFunctionError

    numbers = frame.select_dtypes("number")
    model = make_pipeline(FunctionTransformer(user_funcs.Scales.halve), StandardScaler()).fit(numbers.abs())
    path = tmp_path / "halve.apr"
    aprender.save(model, path)
    ddf = dd.from_pandas(numbers.abs(), npartitions=2, sort=False)
    with pytest.raises(UntrustedFunctionError, match=r"Scales\.halve"):
        aprender.dask.predict(path, ddf, "transform", client=client)
    result = aprender.dask.predict(path, ddf, "transform", client=client, trusted=[user_funcs.Scales.halve])
    np.testing.assert_array_equal(result.compute().to_numpy(), model.transform(numbers.abs()))
    with pytest.raises(ValueError, match="no module:qualname"):
        aprender.dask.predict(path, ddf, "transform", client=client, trusted=[lambda X: X])
