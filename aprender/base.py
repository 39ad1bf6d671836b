"""SerializableMixin: the persistence methods every aprender estimator carries.

The mixin only delegates: the codec turns the estimator into a ModelState and a
format backend turns that into bytes. It never touches bytes itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from aprender._warn import deprecated_alias, warn

__all__ = ["SerializableMixin"]

T = TypeVar("T", bound="SerializableMixin")
PathLike = str | os.PathLike


def _backend(name: str) -> Any:
    """The backend module of a format, by its row in the format table (imported on first use)."""
    from aprender.format._formats import FORMATS

    return FORMATS[name].backend


class SerializableMixin:
    """Adds pickle-free ``save_*`` / ``to_*`` / ``load_*`` methods to an estimator.

    One verb per meaning, for every format of :data:`aprender.extend.FORMATS`:
    ``save_<format>(path)`` writes a file, ``to_<format>()`` returns the model in memory
    (bytes, or an ``onnx.ModelProto`` for ONNX), and ``load_<format>(path)`` reads a
    file back where the format loads (``load_safetensors``, ``load_apr``,
    ``load_gguf``; ONNX is export only). ``save(path)`` and ``load(path)`` take any
    format of the table, a registered one included, by the path's suffix and the file's
    bytes.

    Put it first among the bases: ``class LinearRegression(SerializableMixin,
    sklearn.linear_model.LinearRegression)``. The class must be registered (all of
    aprender's are; use :func:`aprender.register_estimator` for your own).

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> model = LinearRegression().fit([[0.0], [1.0], [2.0]], [1.0, 3.0, 5.0])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> model.save_safetensors(path)
    >>> LinearRegression.load_safetensors(path).predict([[3.0]])
    array([7.])
    """

    def save_safetensors(
        self,
        path: PathLike,
        *,
        dtype: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        inference_only: bool = False,
    ) -> None:
        """Save the fitted model to a SafeTensors file (atomically).

        Parameters
        ----------
        path : str or PathLike
            Destination; an existing file is replaced only once the new one is
            completely written.
        dtype : {"float32", "float16", "bfloat16"}, optional
            Downcast float tensors for a smaller file. By default dtypes are kept
            and a reloaded model predicts bit-identically.
        metadata : dict, optional
            JSON-able user metadata stored in the file.
        inference_only : bool, default=False
            Leave out what only further training reads (an MLP's optimizer state and
            loss curve, a forest's out-of-bag scores; docs/codec.md lists each family).
            The loaded model predicts identically and refuses ``partial_fit``.

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.preprocessing import StandardScaler
        >>> scaler = StandardScaler().fit([[0.0], [2.0]])
        >>> scaler.save_safetensors(os.path.join(tempfile.mkdtemp(), "s.safetensors"),
        ...                         metadata={"name": "scaler"})
        """
        _backend("safetensors").save_file(self, path, dtype=dtype, metadata=metadata, inference_only=inference_only)

    def to_safetensors(
        self, *, dtype: str | None = None, metadata: Mapping[str, Any] | None = None, inference_only: bool = False,
    ) -> bytes:
        """The fitted model as SafeTensors bytes; options as for :meth:`save_safetensors`.

        Examples
        --------
        >>> from aprender.format import safetensors
        >>> from aprender.linear_model import LinearRegression
        >>> data = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]).to_safetensors()
        >>> safetensors.loads(data, LinearRegression).predict([[2.0]])
        array([5.])
        """
        return _backend("safetensors").dumps(self, dtype=dtype, metadata=metadata, inference_only=inference_only)

    @classmethod
    def load_safetensors(cls: type[T], path: PathLike, *, trusted: Any = None) -> T:
        """Load a model of this class from a SafeTensors file.

        Raises :class:`~aprender.exceptions.ModelTypeMismatch` when the file holds
        another class, and :class:`~aprender.exceptions.FormatError` when it is
        malformed. ``trusted`` lists function objects the file may name beyond those
        trusted by default, and hyperparameter names it may set freely (see
        :mod:`aprender.codec.trust`).

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.cluster import KMeans
        >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [9.0]])
        >>> path = os.path.join(tempfile.mkdtemp(), "km.safetensors")
        >>> km.save_safetensors(path)
        >>> KMeans.load_safetensors(path).n_clusters
        2
        """
        return _backend("safetensors").load_file(path, cls, trusted=trusted)

    def save_apr(self, path: PathLike, **options: Any) -> None:
        """Save the fitted model to an ``.apr`` file (atomically).

        Options (see :func:`aprender.format.apr.save_file`) select compression,
        signing, encryption, quantization and user metadata.

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.linear_model import LinearRegression
        >>> model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
        >>> model.save_apr(os.path.join(tempfile.mkdtemp(), "model.apr"))
        """
        _backend("apr").save_file(self, path, **options)

    def to_apr(self, **options: Any) -> bytes:
        """The fitted model as ``.apr`` bytes; options as for :meth:`save_apr`.

        Examples
        --------
        >>> from aprender.format import apr
        >>> from aprender.linear_model import LinearRegression
        >>> data = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]).to_apr(compression="zstd")
        >>> data[:4], apr.loads(data).predict([[2.0]])
        (b'APR\\x00', array([5.]))
        """
        return _backend("apr").dumps(self, **options)

    @classmethod
    def load_apr(cls: type[T], path: PathLike, **keys: Any) -> T:
        """Load a model of this class from an ``.apr`` file.

        ``keys`` carries what the file needs: ``password=``, ``secret_key=``,
        ``verifying_key=``, ``mmap=True`` for a zero-copy load, and ``trusted=`` as
        for :meth:`load_safetensors`.

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.linear_model import LinearRegression
        >>> path = os.path.join(tempfile.mkdtemp(), "model.apr")
        >>> LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]).save_apr(path)
        >>> LinearRegression.load_apr(path).predict([[2.0]])
        array([5.])
        """
        return _backend("apr").load_file(path, cls, **keys)

    def save_gguf(self, path: PathLike, *, quantize: str | None = None, **options: Any) -> None:
        """Save the fitted model to a GGUF file, optionally GGML-quantized.

        Parameters
        ----------
        path : str or PathLike
            Destination ``.gguf`` file.
        quantize : {"q8_0", "q4_0", "q4_1"}, optional
            Block-quantize the tensors the estimator marks as quantizable.
        **options
            As for :func:`aprender.format.gguf.save_file` (``dtype=``, ``metadata=`` ...).

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.cluster import KMeans
        >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [9.0]])
        >>> km.save_gguf(os.path.join(tempfile.mkdtemp(), "km.gguf"))
        """
        _backend("gguf").save_file(self, path, quantize=quantize, **options)

    @classmethod
    def load_gguf(cls: type[T], path: PathLike, *, trusted: Any = None) -> T:
        """Load a model of this class from a GGUF file written by :meth:`save_gguf`.

        Quantized weights come back dequantized. ``trusted`` as for
        :meth:`load_safetensors`.

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.cluster import KMeans
        >>> path = os.path.join(tempfile.mkdtemp(), "km.gguf")
        >>> KMeans(n_clusters=1, n_init=1).fit([[1.0], [3.0]]).save_gguf(path)
        >>> KMeans.load_gguf(path).cluster_centers_
        array([[2.]])
        """
        return _backend("gguf").load_file(path, cls, trusted=trusted)

    def to_gguf(self, path: PathLike | None = None, *, quantize: str | None = None, **options: Any) -> bytes | None:
        """The fitted model as GGUF bytes; options as for :meth:`save_gguf`.

        ``to_gguf(path)``, which wrote a file, is deprecated: use :meth:`save_gguf`.

        Examples
        --------
        >>> from aprender.cluster import KMeans
        >>> KMeans(n_clusters=1, n_init=1).fit([[1.0], [3.0]]).to_gguf(quantize="q8_0")[:4]
        b'GGUF'
        """
        if path is not None:
            warn("SerializableMixin.to_gguf(path) is deprecated; use save_gguf(path) (to_gguf() returns bytes)",
                 DeprecationWarning)
            self.save_gguf(path, quantize=quantize, **options)
            return None
        return _backend("gguf").dumps(self, quantize=quantize, **options)

    #: The older name of :meth:`load_gguf` (saved code and notebooks use it). mypy types a
    #: classmethod in its own class body as the bare function, which has no ``__func__``.
    from_gguf = classmethod(deprecated_alias(load_gguf.__func__,  # type: ignore[attr-defined,var-annotated]
                                             "SerializableMixin.from_gguf", "load_gguf"))

    def to_onnx(
        self,
        X: Any = None,
        *,
        target_opset: int | None = None,
        dtype: Any = None,
        options: Mapping[str, Any] | None = None,
    ) -> Any:
        """Convert the fitted model to an ``onnx.ModelProto`` for ONNX Runtime.

        Parameters
        ----------
        X : array-like, optional
            Sample input, used to infer the input type when it cannot be derived
            from ``n_features_in_``.
        target_opset : int, optional
            ONNX opset to target; defaults to the converter's latest.
        dtype : {None, numpy.float32, numpy.float64}, default=None
            Tensor type of the graph's float inputs and outputs; ``None``: float64 for
            scikit-learn's trees (their exact graph) and for models whose values float32
            cannot hold (see :func:`aprender.format.onnx.to_onnx`), float32 otherwise.
        options : dict, optional
            Converter options (skl2onnx's ``options=``).

        Examples
        --------
        >>> from aprender.linear_model import LinearRegression
        >>> onx = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]).to_onnx()
        >>> onx.graph.input[0].name
        'X'
        """
        return _backend("onnx").to_onnx(self, X, target_opset=target_opset, dtype=dtype, options=options)

    def save_onnx(self, path: PathLike, X: Any = None, **kwargs: Any) -> None:
        """Write :meth:`to_onnx`'s model to ``path`` (atomically).

        There is no ``load_onnx``: an ONNX graph does not turn back into an
        estimator (run it with ONNX Runtime, and keep an ``.apr`` copy to load).

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.linear_model import LinearRegression
        >>> model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
        >>> model.save_onnx(os.path.join(tempfile.mkdtemp(), "model.onnx"))
        """
        _backend("onnx").save_file(self, path, X, **kwargs)

    def save(self, path: PathLike, **options: Any) -> None:
        """Save the fitted model in the format ``path``'s suffix names (any format of the table).

        :func:`aprender.save` on this model: ``options`` go to the format's backend (its
        ``CAPABILITIES.options`` and the codec's ``dtype=`` / ``metadata=``), so a format
        registered with :func:`aprender.extend.register_format` is saved the same way.

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.linear_model import LinearRegression
        >>> path = os.path.join(tempfile.mkdtemp(), "line.apr")
        >>> LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]).save(path, compression="zstd")
        >>> LinearRegression.load(path).predict([[2.0]])
        array([5.])
        """
        from aprender.format._api import save

        save(self, path, **options)

    @classmethod
    def load(cls: type[T], path: PathLike, *, trusted: Any = None, **options: Any) -> T:
        """Load a model of this class from a file of any format that loads (:func:`aprender.load`).

        Raises :class:`~aprender.exceptions.ModelTypeMismatch` if the file holds another
        kind of model; an export-only format's file (ONNX) raises
        :class:`~aprender.exceptions.UnsupportedExportError`.
        """
        from aprender.format._api import load

        model: T = load(path, cls, trusted=trusted, **options)
        return model

    def save_pretrained(self, folder: PathLike, **options: Any) -> Path:
        """Write a Hugging Face-style model folder (see :func:`aprender.save_pretrained`).

        ``model.safetensors``, ``config.json`` and a ``README.md`` model card; load it
        back with :func:`aprender.from_pretrained`. Needs the ``card`` extra.

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.linear_model import LinearRegression
        >>> model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
        >>> folder = model.save_pretrained(os.path.join(tempfile.mkdtemp(), "line"))
        >>> (folder / "config.json").is_file()
        True
        """
        from aprender._pretrained import save_pretrained

        return save_pretrained(self, folder, **options)
