"""Worker side of :mod:`aprender.dask`: the plugin that ships model bytes, and the partition scorers.

The model reaches each worker as the bytes of its ``.apr`` (SafeTensors, GGUF) file inside
:class:`ModelPlugin`. ``setup`` checks the bytes' SHA-256, writes them to the worker's
local directory, loads them once (memory-mapped for an uncompressed ``.apr``; through
``load_verified`` when a trusted key is required) and caches the model in this process
under the plugin's name. Tasks carry only that name, the method and its keyword
arguments: the estimator object is never pickled.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from distributed.diagnostics.plugin import WorkerPlugin

from aprender.exceptions import AprenderError, FormatError
from aprender.format._formats import Format, by_suffix

__all__ = ["ModelPlugin", "cached_model", "load_model_file", "output_frame", "score_block", "score_frame"]

#: Plugin name -> the model it loaded, in this worker process.
_MODELS: dict[str, Any] = {}


def load_model_file(path: Path, trusted_key: bytes | None, fmt: Format | None = None, trusted: Any = None) -> Any:
    """Load a model file of any format that loads (``fmt``, by default the one its suffix names).

    Verified against ``trusted_key`` when one is given (only formats that sign take one),
    memory-mapped where the format maps and the file is neither compressed nor encrypted;
    ``trusted`` as for ``aprender.load``.
    """
    fmt = fmt if fmt is not None else by_suffix(path)
    if fmt is None or not fmt.can.loads:
        raise FormatError(f"'{path}': aprender.dask ships model files that load, and this is not one")
    if trusted_key is not None:
        return fmt.backend.load_file(path, verifying_key=trusted_key, trusted=trusted)
    if not fmt.can.mmaps:
        return fmt.backend.load_file(path, trusted=trusted)
    info = fmt.backend.inspect_file(path)
    return fmt.backend.load_file(path, mmap=not info.compressed and not info.encrypted, trusted=trusted)


class ModelPlugin(WorkerPlugin):
    """Carries a model file's bytes to every worker, present and future, and loads it there once.

    Parameters
    ----------
    name : str
        The plugin's name: digest and key fingerprint, so one model is registered once.
    data : bytes
        The .apr or SafeTensors file.
    digest : str
        Hex SHA-256 of ``data``, checked on the worker before anything is parsed.
    suffix : str
        The suffix of the format (a row of :data:`aprender.extend.FORMATS` that loads).
        The file's format.
    trusted_key : bytes, optional
        Raw Ed25519 public key the .apr file's signature must verify against.
    trusted : tuple of str
        ``module:function`` specs (and hyperparameter names) the load trusts, imported on
        the worker (:func:`aprender.codec.trust.trusted_from_specs`).
    """

    idempotent = True

    def __init__(self, name: str, data: bytes, digest: str, suffix: str, trusted_key: bytes | None,
                 trusted: tuple[str, ...] = ()) -> None:
        self.name = name
        self.data = data
        self.digest = digest
        self.suffix = suffix
        self.trusted_key = trusted_key
        self.trusted = trusted
        self.path: Path | None = None

    def setup(self, worker: Any) -> None:
        """Check, write and load the model (once per worker process)."""
        actual = hashlib.sha256(self.data).hexdigest()
        if actual != self.digest:
            raise FormatError(f"model bytes received by worker {worker.address} have sha256 {actual}, "
                              f"expected {self.digest}")
        self.path = Path(worker.local_directory) / f"aprender-{self.digest}{self.suffix}"
        if not self.path.is_file():
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            tmp.write_bytes(self.data)
            tmp.replace(self.path)
        from aprender.codec.trust import trusted_from_specs

        _MODELS[self.name] = load_model_file(self.path, self.trusted_key,
                                             trusted=trusted_from_specs(self.trusted) or None)
        self.data = b""  # the file (mapped or read) is the model's copy now

    def teardown(self, worker: Any) -> None:
        """Drop the cached model and its file."""
        _MODELS.pop(self.name, None)
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def cached_model(name: str) -> Any:
    """The model the plugin ``name`` loaded in this process."""
    try:
        return _MODELS[name]
    except KeyError:
        raise AprenderError(f"model '{name}' is not loaded on this worker: it was released, or the task ran "
                            "outside the cluster aprender.dask.predict registered it with") from None


def output_frame(out: Any, index: pd.Index, columns: Any) -> pd.Series | pd.DataFrame:
    """A method's output as a Series (1-d) or DataFrame (2-d) on the partition's index."""
    if isinstance(out, pd.DataFrame):
        return out.set_axis(index, axis=0)
    out = np.asarray(out)
    if out.ndim == 1:
        return pd.Series(out, index=index)
    return pd.DataFrame(out, index=index, columns=columns)


def score_frame(part: pd.DataFrame, name: str, method: str, kwargs: dict[str, Any], columns: Any) -> Any:
    """Score one dataframe partition, keeping its index."""
    out = getattr(cached_model(name), method)(part, **kwargs)
    return output_frame(out, part.index, columns)


def score_block(block: np.ndarray, name: str, method: str, kwargs: dict[str, Any]) -> np.ndarray:
    """Score one row block of a dask array."""
    return np.asarray(getattr(cached_model(name), method)(block, **kwargs))
