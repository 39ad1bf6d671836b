"""Score Dask collections on a ``distributed`` cluster, with the model shipped as file bytes.

:func:`predict` sends the bytes of the model's ``.apr`` (or SafeTensors, GGUF) file and its
SHA-256 to every worker once, in a ``WorkerPlugin``; each worker checks the digest,
loads the file once (memory-mapped for an uncompressed ``.apr``) and caches the model.
The task graph carries only the plugin's name, so the estimator object is never
pickled, and a worker rebuilds the model through aprender's allow-list like any other
load. ``trusted_key=`` makes every worker verify the file's Ed25519 signature first.
docs/dask.md explains what travels over the network on a real cluster. Needs the
``dask`` extra (``pip install "aprender[dask]"``).

Examples
--------
>>> import numpy as np, pandas as pd
>>> import dask.dataframe as dd
>>> from distributed import Client, LocalCluster
>>> import aprender.dask
>>> from aprender.linear_model import LinearRegression
>>> model = LinearRegression().fit(pd.DataFrame({"x": [0.0, 1.0]}), [1.0, 3.0])
>>> with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
...     frame = dd.from_pandas(pd.DataFrame({"x": [2.0, 3.0, 4.0]}), npartitions=2)
...     aprender.dask.predict(model, frame).compute().round(9).tolist()
[5.0, 7.0, 9.0]
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import dask.array as da
import dask.dataframe as dd
import numpy as np
from dask.dataframe.utils import meta_nonempty

from aprender.dask._scoring import ModelPlugin, load_model_file, output_frame, score_block, score_frame
from aprender.exceptions import FormatError, SignatureInvalid
from aprender.format._formats import sniff_head, titles

__all__ = ["ModelBytes", "model_bytes", "predict", "release"]

PathLike = str | os.PathLike


class ModelBytes:
    """A model file's bytes, format and SHA-256, and the model itself for this process.

    Attributes
    ----------
    data : bytes
        The model file (.apr, SafeTensors or GGUF).
    suffix : str
        The suffix of the format (a row of :data:`aprender.extend.FORMATS` that loads).
    digest : str
        Hex SHA-256 of ``data``.
    model : estimator
        The model, used here only to describe the output's columns and dtypes.
    """

    def __init__(self, data: bytes, suffix: str, model: Any) -> None:
        self.data = data
        self.suffix = suffix
        self.digest = hashlib.sha256(data).hexdigest()
        self.model = model

    def plugin_name(self, trusted_key: bytes | None, trusted: tuple[str, ...] = ()) -> str:
        """The worker plugin's name: one per file, required key and trusted functions."""
        trust = hashlib.sha256("\n".join(trusted).encode()).hexdigest()[:8] if trusted else "none"
        return f"aprender-{self.digest[:32]}-{trusted_key.hex()[:16] if trusted_key else 'any'}-{trust}"


def _raw_key(key: Any) -> bytes | None:
    if key is None or isinstance(key, bytes):
        return key
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def model_bytes(model_or_path: Any, trusted_key: bytes | None = None, trusted: Any = None) -> ModelBytes:
    """The bytes :func:`predict` ships: a file's own, or an estimator saved as plain .apr.

    Examples
    --------
    >>> import aprender.dask
    >>> from aprender.linear_model import LinearRegression
    >>> shipped = aprender.dask.model_bytes(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
    >>> shipped.suffix, shipped.data[:4], len(shipped.digest)
    ('.apr', b'APR\\x00', 64)
    """
    from aprender.format import apr

    if not isinstance(model_or_path, (str, os.PathLike)):
        return ModelBytes(apr.dumps(model_or_path), ".apr", model_or_path)
    path = Path(model_or_path)
    if not path.is_file():
        raise FileNotFoundError(f"no such model file: '{path}'")
    with open(path, "rb") as f:
        head = f.read(16)
    fmt = sniff_head(head, path.suffix)
    if fmt is None or not fmt.can.loads:
        raise FormatError(f"'{path}': aprender.dask ships {titles('loads')} files, and this is none of them")
    if trusted_key is not None and not fmt.can.signs:
        raise SignatureInvalid(f"'{path}' is {fmt.title}, which carries no signature; sign an {titles('signs')} "
                               "file to require trusted_key")
    data = path.read_bytes()
    return ModelBytes(data, fmt.suffix, load_model_file(path, trusted_key, fmt, trusted))


def _client(client: Any) -> Any:
    if client is not None:
        return client
    from distributed import get_client

    return get_client()


def _columns(model: Any, method: str, sample: Any) -> Any:
    width = np.asarray(sample).shape[1]
    if method in ("predict_proba", "predict_log_proba") and hasattr(model, "classes_"):
        classes = np.asarray(model.classes_)
        if classes.ndim == 1 and classes.shape[0] == width:
            return classes.tolist()
    if method == "transform" and hasattr(model, "get_feature_names_out"):
        try:
            return list(model.get_feature_names_out())
        except (AttributeError, ValueError):  # a pipeline whose step names no features (FunctionTransformer)
            pass
    return list(range(width))


def predict(
    model_or_path: Any,
    data: dd.DataFrame | da.Array,
    method: str = "predict",
    *,
    client: Any = None,
    trusted_key: Any = None,
    trusted: Any = None,
    **kwargs: Any,
) -> dd.Series | dd.DataFrame | da.Array:
    """Apply ``model.<method>`` to every partition of ``data`` on the cluster.

    Parameters
    ----------
    model_or_path : estimator or str or PathLike
        A fitted model (saved to plain .apr bytes here) or an .apr / SafeTensors / GGUF file
        (its bytes are shipped as they are: a signed or compressed .apr stays so).
    data : dask.dataframe.DataFrame or dask.array.Array
        Rows to score. A 2-d array is rechunked to whole rows if needed.
    method : str, default="predict"
        ``predict``, ``predict_proba``, ``decision_function``, ``transform`` ...
    client : distributed.Client, optional
        The cluster's client; the current one by default.
    trusted_key : Ed25519PublicKey or bytes, optional
        Every worker verifies the .apr file's signature against this key before
        loading it (:func:`aprender.format.apr.load_verified`).
    trusted : list, optional
        As for ``aprender.load``: module-level functions the model may name beyond the
        default table, and hyperparameter names. Each worker imports the functions by
        their ``module:qualname`` (the modules must be importable there) and loads with
        those objects; nothing is looked up by a name the file holds.
    **kwargs
        Passed to the method on every partition.

    Returns
    -------
    dask.dataframe.Series, dask.dataframe.DataFrame or dask.array.Array
        Lazy, with ``data``'s partitions (and index for a dataframe); 1-d outputs are
        Series, 2-d outputs DataFrames (columns: the classes for probabilities,
        ``get_feature_names_out()`` for transforms). The dtypes are those the model
        gives in one process.

    Raises
    ------
    SignatureInvalid
        ``trusted_key`` was given and a worker found the file unsigned or signed by
        another key.
    FormatError
        The file is of no format that loads, or the bytes arrived changed.
    """
    from aprender.codec.trust import spec_of

    key = _raw_key(trusted_key)
    specs = tuple(spec_of(item) for item in (trusted or ()))
    shipped = model_bytes(model_or_path, key, trusted)
    model = shipped.model
    if not callable(getattr(model, method, None)):
        raise AttributeError(f"{type(model).__name__} has no method {method!r}")
    client = _client(client)
    name = shipped.plugin_name(key, specs)
    try:
        client.register_plugin(ModelPlugin(name, shipped.data, shipped.digest, shipped.suffix, key, specs), name=name)
    except BaseException:
        client.unregister_worker_plugin(name)  # the scheduler keeps failed plugins: forget this one
        raise
    if isinstance(data, da.Array):
        return _score_array(model, data, name, method, kwargs)
    if isinstance(data, dd.DataFrame):
        sample, out = _sample_output(model, method, data, kwargs)
        meta = output_frame(out, sample.index, _columns(model, method, out) if np.ndim(out) == 2 else None)
        return data.map_partitions(score_frame, name, method, kwargs, None if meta.ndim == 1 else meta.columns,
                                   meta=meta.iloc[:0], align_dataframes=False)
    raise TypeError(f"data must be a dask DataFrame or Array, got {type(data).__name__}")


def _sample_output(model: Any, method: str, data: dd.DataFrame, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """A sample of ``data`` and the model's output on it, which give the result's columns and dtypes.

    Dask's made-up sample ("foo" in every string column) is tried first, as it costs no read;
    a pipeline that encodes its string columns refuses made-up categories, and then the first
    real row is read (from the first partition that has one).
    """
    sample = meta_nonempty(data._meta)
    try:
        return sample, getattr(model, method)(sample, **kwargs)
    except ValueError:
        sample = data.head(1, npartitions=-1)
        return sample, getattr(model, method)(sample, **kwargs)


def _score_array(model: Any, data: da.Array, name: str, method: str, kwargs: dict[str, Any]) -> da.Array:
    if data.ndim != 2:
        raise ValueError(f"a dask array to score must be 2-d (rows, features), got {data.ndim}-d")
    if data.numblocks[1] != 1:
        data = data.rechunk({1: -1})
    out = np.asarray(getattr(model, method)(np.zeros((1, data.shape[1]), dtype=data.dtype), **kwargs))
    if out.ndim == 1:
        return data.map_blocks(score_block, name, method, kwargs, dtype=out.dtype, drop_axis=1,
                               meta=np.empty((0,), dtype=out.dtype))
    return data.map_blocks(score_block, name, method, kwargs, dtype=out.dtype, chunks=(data.chunks[0], out.shape[1:]),
                           meta=np.empty((0, 0), dtype=out.dtype))


def release(model_or_path: Any, *, client: Any = None, trusted_key: Any = None) -> None:
    """Unload a model :func:`predict` shipped: workers drop it and delete its file."""
    key = _raw_key(trusted_key)
    _client(client).unregister_worker_plugin(model_bytes(model_or_path, key).plugin_name(key))
