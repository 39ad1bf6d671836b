"""The registry of served models: resolution by name and version, an LRU cache of loaded
models with warm-up, and inference through each model's batchers.

The repository view (``models``) is an immutable mapping replaced as a whole when a model is
loaded or unloaded through the repository routes, so a request always sees one consistent
version of it. Loading runs in a thread; concurrent requests for the same model wait for one load.

Every load (with its warm-up) runs under the time and memory bounds of :class:`Limits` (see
:mod:`aprender.serve._bounded`). A version past a bound is *failed*: it is not loaded again (its
abandoned work may still be running) until the repository's load route asks for it, its requests
and ready route answer 503 with the reason, and the repository index lists it UNAVAILABLE.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

import aprender
from aprender.exceptions import AprenderError
from aprender.format._formats import FORMATS
from aprender.serve._batching import Batcher, Overloaded, TimedOut
from aprender.serve._bounded import Exceeded, run_bounded
from aprender.serve._errors import HTTPError
from aprender.serve._fast import fast_method
from aprender.serve._inputs import Frame, Inputs, describe_inputs, known_strings, rows_of
from aprender.serve._log import log as _log
from aprender.serve._metrics import Metrics, ModelMetrics
from aprender.serve._numbers import decimal
from aprender.serve._repository import (
    OUTPUTS,
    Policy,
    RepositoryError,
    Settings,
    Version,
    describe,
    describe_copy,
    model_folders,
    open_copy,
    scan,
    scan_model,
)
from aprender.serve._rowwise import Split, row_exact_split
from aprender.serve._tensors import Parser

__all__ = ["Limits", "LoadedModel", "Registry"]

#: Estimators whose cost per call dominates (trees, forests, boosters, KNN, SVC) and whose rows are
#: predicted independently of each other: batched by default.
_BATCHED = ("DecisionTree", "ExtraTree", "RandomForest", "ExtraTrees", "GradientBoosting", "HistGradientBoosting",
            "IsolationForest", "KNeighbors", "RadiusNeighbors", "SVC", "NuSVC", "SVR", "NuSVR", "XGB", "LGBM")
_DEFAULT_BATCH = 64
#: Most rows a model with exact fast paths runs on the event loop itself (microseconds per row),
#: batched or not; larger calls go to a thread like every other model's.
_INLINE_ROWS = 1024
_WARMUP_CALLS = 3
_MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Cache, batching and work limits (the CLI's options).

    ``warmup_timeout`` (seconds) and ``warmup_memory`` (bytes the process may grow by, plus three
    times the model file's size) bound each model's load and warm-up; ``infer_timeout`` (seconds)
    bounds each request's wait for a model call; ``max_output_bytes`` bounds the arrays one request's
    answer holds. None: no bound.
    """

    max_loaded_models: int | None = None
    max_model_memory: int | None = None
    max_batch_size: int | None = None
    max_batch_time: float = 0.0
    max_queue: int = 1024
    warmup_timeout: float | None = 30.0
    infer_timeout: float | None = 60.0
    warmup_memory: int | None = 4096 * _MIB
    max_output_bytes: int | None = None

    def memory_bound(self, version: Version) -> int | None:
        """Bytes the load and warm-up of ``version`` may grow the process by: the private copy of the
        file and the arrays built from it are the file's size each, and decoding may hold a third."""
        return None if self.warmup_memory is None else self.warmup_memory + 3 * version.size


@dataclass
class LoadedModel:
    """A loaded, warmed-up model version.

    ``version`` describes the bytes the model was loaded from; ``scanned`` is the repository
    entry it was loaded for (the cache key's identity), which may have been described earlier.
    """

    version: Version
    estimator: Any
    outputs: tuple[str, ...]
    load_seconds: float
    loaded_at: float
    warmup: str
    signature: dict[str, tuple[np.dtype, tuple[int, ...]]]
    inputs: Inputs
    max_batch_size: int
    methods: dict[str, Any] = field(default_factory=dict)
    fast: frozenset[str] = frozenset()
    batchers: dict[tuple[str, ...], Batcher] = field(default_factory=dict)
    runners: dict[tuple[str, ...], Any] = field(default_factory=dict)
    metrics: ModelMetrics | None = None
    scanned: Version | None = None
    split: Split | None = None

    @property
    def n_features(self) -> int:
        """Columns of the model's input."""
        return self.inputs.n_features

    def describe(self) -> dict[str, Any]:
        """Provenance plus what loading found."""
        return {**self.version.describe(), "outputs": list(self.outputs), "n_features_in": self.n_features,
                "input_kind": self.inputs.kind, "inputs": self.inputs.metadata(),
                "load_time_ms": round(self.load_seconds * 1000, 3), "warmup": self.warmup,
                "max_batch_size": self.max_batch_size}


def _load(copy: Path, served: Version, trusted: tuple[Any, ...]) -> Any:
    """Load the private copy of a model file (an uncompressed .apr maps the sealed copy: zero-copy)."""
    backend, trust = FORMATS[served.format].backend, list(trusted) or None
    if served.signer is not None:  # built through the verifying load, against the key the copy verified with
        return backend.load_file(copy, verifying_key=bytes.fromhex(served.signer), trusted=trust)
    if served.mmap:
        return backend.load_file(copy, mmap=True, trusted=trust)
    return aprender.load(copy, trusted=trust)


def _warm(estimator: Any, outputs: tuple[str, ...], inputs: Inputs) -> tuple[str, dict[str, Any]]:
    """Call every output a few times on a row of zeros (empty strings); return what happened and each
    output's dtype and shape per row (guessed from ``classes_`` if that row is refused)."""
    row = inputs.warm()
    row = row.frame() if isinstance(row, Frame) else row
    try:
        for _ in range(_WARMUP_CALLS):
            results = {name: np.asarray(getattr(estimator, name)(row)) for name in outputs}
    except Exception as exc:  # a row of zeros may be invalid input for this model: serve anyway
        classes = np.asarray(getattr(estimator, "classes_", np.zeros(0)))
        guess = {name: (np.dtype(np.float64), (-1,)) for name in outputs}
        if "predict" in guess:
            guess["predict"] = (classes.dtype if classes.size else np.dtype(np.float64), ())
        return f"failed on a row of zeros: {type(exc).__name__}: {exc}", guess
    return (f"{_WARMUP_CALLS} calls of {', '.join(outputs)}",
            {name: (value.dtype, value.shape[1:]) for name, value in results.items()})


def _batch_size(version: Version, limits: Limits, split: Split | None) -> int:
    if version.settings.max_batch_size is not None:
        return max(1, version.settings.max_batch_size)
    if limits.max_batch_size is not None:
        return max(1, limits.max_batch_size)
    return _DEFAULT_BATCH if split is not None or version.estimator.startswith(_BATCHED) else 1


def _split(estimator: Any, outputs: tuple[str, ...], inputs: Inputs) -> Split | None:
    """A DataFrame pipeline's exact batching (see :mod:`aprender.serve._rowwise`), or None."""
    if inputs.kind != "frame":
        return None
    strings = {inputs.names[i]: values for i, values in known_strings(estimator).items() if i < inputs.n_features}
    return row_exact_split(estimator, outputs, inputs.probe(strings))


def load_version(version: Version, limits: Limits, policy: Policy) -> LoadedModel:
    """Load, check and warm up one version (blocking; run in a thread).

    The file is copied once into private memory, and described (digest, signature) and loaded
    from that copy: the model reports the SHA-256 of the bytes it answers from, even if the file
    changed since the repository was scanned, and no later write to the file reaches it.
    """
    start = time.perf_counter()
    with open_copy(version.path, version.root, policy) as copy:
        version = describe_copy(copy, version.path, version.name, version.version, version.settings, policy,
                                version.root)
        try:
            estimator = _load(copy, version, policy.trusted)
        except (AprenderError, OSError) as exc:
            raise RepositoryError(f"'{version.path}': {exc}".replace(str(copy), "the file")) from None
    inputs = describe_inputs(estimator)
    if inputs is None:
        raise RepositoryError(f"'{version.path}': {version.estimator} takes neither a feature matrix (no "
                              "n_features_in_), a DataFrame nor text; aprender serve serves models that do")
    wanted = version.settings.outputs or OUTPUTS
    outputs = tuple(name for name in wanted if hasattr(estimator, name))
    missing = set(version.settings.outputs or ()) - set(outputs)
    if missing:
        raise RepositoryError(f"'{version.path}': model-settings.json lists outputs {sorted(missing)} that "
                              f"{version.estimator} does not have")
    if not outputs:
        raise RepositoryError(f"'{version.path}': {version.estimator} has none of the outputs {', '.join(OUTPUTS)}")
    warmup, signature = _warm(estimator, outputs, inputs)
    methods = {name: fast_method(estimator, name, inputs.n_features) if inputs.kind == "matrix" else None
               for name in outputs}
    fast = frozenset(name for name, method in methods.items() if method is not None)
    if fast:
        warmup += f"; exact fast path for {', '.join(name for name in outputs if name in fast)}"
    methods = {name: method or getattr(estimator, name) for name, method in methods.items()}
    split = _split(estimator, outputs, inputs)
    if split is not None:
        final = "batch" if split.merged else "request"
        warmup += f"; batched exactly (the transforms once per batch, the final estimator once per {final})"
    return LoadedModel(version, estimator, outputs, time.perf_counter() - start, time.time(),
                       warmup, signature, inputs, _batch_size(version, limits, split), methods, fast, split=split)


class Registry:
    """Served models by name and version, and the LRU cache of loaded ones.

    Parameters
    ----------
    paths : iterable of path
        Model files and repository folders (see :func:`~aprender.serve.scan`).
    policy : Policy
        Signature requirements.
    limits : Limits
        Cache and batching limits.
    metrics : Metrics
        Where cache and batch metrics go.
    """

    def __init__(self, paths: Iterable[Any], policy: Policy, limits: Limits, metrics: Metrics) -> None:
        self.paths = [Path(p) for p in paths]
        self.policy = policy
        self.limits = limits
        self.metrics = metrics
        self.models: MappingProxyType[str, dict[int, Version]] = MappingProxyType(scan(self.paths, policy))
        self.ready = False
        self._cache: OrderedDict[tuple[str, int], LoadedModel] = OrderedDict()
        self._loading: dict[tuple[str, int], asyncio.Future[LoadedModel]] = {}
        #: Why a version could not be loaded, for the index and the ready routes.
        self.failed: dict[tuple[str, int], str] = {}
        #: Versions whose load ran past a bound: refused without a new load, whose work would run
        #: beside the abandoned one, until the repository's load route asks again.
        self._stalled: set[tuple[str, int]] = set()
        #: Parses large JSON request bodies in a child process (see aprender.serve._tensors).
        self.parser = Parser()

    # -- resolution -------------------------------------------------------------------

    def resolve(self, name: str, version: str | int | None = None) -> Version:
        """The version a request names: ``None``/``"latest"`` is the highest; 404 if unknown."""
        versions = self.models.get(name)
        if versions is None:
            raise HTTPError(404, f"model '{name}' not found; served models: {', '.join(sorted(self.models)) or 'none'}",
                            "E_NO_MODEL")
        if version is None or version in ("", "latest"):
            return versions[max(versions)]
        number = decimal(str(version))
        if number is None or number not in versions:
            raise HTTPError(404, f"model '{name}' has no version '{str(version)[:40]}'; versions: "
                                 f"{', '.join(map(str, versions))}", "E_NO_MODEL")
        return versions[number]

    def resolve_id(self, model_id: Any) -> Version:
        """``name`` or ``name:version`` (realizar's model_id, Ollama's model); the only model if None."""
        if model_id is None:
            if len(self.models) != 1:
                raise HTTPError(400, "several models are served: name one with model_id "
                                     f"({', '.join(sorted(self.models))})")
            return self.resolve(next(iter(self.models)))
        if not isinstance(model_id, str):
            raise HTTPError(400, f"model id must be a string, got {type(model_id).__name__}")
        name, _, version = model_id.partition(":")
        return self.resolve(name, version or None)

    def loaded(self) -> list[LoadedModel]:
        """Loaded models, least recently used first."""
        return list(self._cache.values())

    def is_loaded(self, version: Version) -> bool:
        """Whether ``version`` is in the cache."""
        return (version.name, version.version) in self._cache

    # -- the cache ----------------------------------------------------------------------

    async def get(self, version: Version) -> LoadedModel:
        """The loaded model of ``version``, loading (and evicting) as needed."""
        key = (version.name, version.version)
        model = self._cache.get(key)
        if model is not None and model.scanned is version:
            self._cache.move_to_end(key)
            self.metrics.cache_hits.inc()
            return model
        if key in self._stalled:
            raise HTTPError(503, self.failed[key], "E_MODEL_FAILED")
        pending = self._loading.get(key)
        if pending is None:
            self.metrics.cache_misses.inc()
            pending = asyncio.get_running_loop().create_future()
            self._loading[key] = pending
            try:
                model = await run_bounded(load_version, version, self.limits, self.policy,
                                          seconds=self.limits.warmup_timeout,
                                          memory=self.limits.memory_bound(version),
                                          what=f"loading and warming up model '{version.tag}'")
            except (RepositoryError, Exceeded) as exc:
                self.failed[key] = str(exc)
                code = "E_NO_MODEL"
                if isinstance(exc, Exceeded):
                    self._stalled.add(key)
                    code = "E_MODEL_FAILED"
                    _log.error("model '%s' failed: %s", version.tag, exc)
                error = HTTPError(503, str(exc), code)
                pending.set_exception(error)
                pending.exception()
                raise error from None
            except BaseException as exc:  # waiters must never hang, even if this request is cancelled
                if isinstance(exc, Exception):
                    pending.set_exception(exc)
                    pending.exception()  # retrieved: the waiters re-raise it
                else:
                    pending.cancel()
                raise
            finally:
                del self._loading[key]
            self.failed.pop(key, None)
            model.scanned = version
            model.metrics = self.metrics.for_model(version.name, str(version.version))
            self._insert(key, model)
            pending.set_result(model)
            return model
        return await asyncio.shield(pending)

    def _insert(self, key: tuple[str, int], model: LoadedModel) -> None:
        if key in self._cache:
            self._drop(key)
        self._cache[key] = model
        self.metrics.loaded.inc()
        limit, memory = self.limits.max_loaded_models, self.limits.max_model_memory
        while len(self._cache) > 1 and (
                (limit is not None and len(self._cache) > limit)
                or (memory is not None and sum(m.version.size for m in self._cache.values()) > memory)):
            self._drop(next(iter(self._cache)))
            self.metrics.cache_evictions.inc()

    def _drop(self, key: tuple[str, int]) -> None:
        if self._cache.pop(key, None) is not None:
            self.metrics.loaded.dec()

    def evict(self, version: Version) -> bool:
        """Drop ``version`` from the cache (it reloads on its next request)."""
        key = (version.name, version.version)
        found = key in self._cache
        self._drop(key)
        return found

    async def warm_all(self) -> None:
        """Load and warm the latest version of every model (as many as the cache holds), then be ready:
        once every one is loaded or failed, which the load bounds make at most their sum."""
        try:
            budget = self.limits.max_loaded_models
            for name in sorted(self.models)[:budget]:
                try:
                    await self.get(self.resolve(name))
                except Exception as exc:  # served requests will report it; the others still load
                    _log.warning("model '%s' could not be loaded: %s", name, exc)
        finally:
            self.ready = True

    # -- the repository routes ------------------------------------------------------------

    def _find(self, name: str) -> tuple[str, dict[int, Version]]:
        """Scan the repository folders (or the served file) for model ``name``."""
        for path in self.paths:
            if path.is_file() and path.stem == name:
                return name, {1: describe(path, name, 1, Settings(), self.policy)}
            if path.is_dir():
                for folder in model_folders(path):
                    if folder.name == name or (folder / "model-settings.json").is_file():
                        found, versions = scan_model(folder, self.policy, path)
                        if found == name:
                            return found, versions
        raise HTTPError(404, f"model '{name}' not found in the repository")

    async def load_model(self, name: str) -> dict[int, Version]:
        """(Re)scan model ``name`` from the repository, load its latest version, and publish it."""
        try:
            found, versions = await asyncio.to_thread(self._find, name)
        except RepositoryError as exc:
            raise HTTPError(400, str(exc)) from None
        self._stalled.difference_update({(found, number) for number in versions})  # asked for: try again
        await self.get(versions[max(versions)])
        self.models = MappingProxyType({**self.models, found: versions})
        return versions

    def unload_model(self, name: str) -> None:
        """Stop serving ``name`` (every version) until it is loaded again."""
        versions = self.models.get(name)
        if versions is None:
            raise HTTPError(404, f"model '{name}' is not loaded", "E_NO_MODEL")
        self.models = MappingProxyType({k: v for k, v in self.models.items() if k != name})
        for version in versions.values():
            self.evict(version)

    def index(self) -> list[dict[str, Any]]:
        """Every model of the repository folders and served files, with its state."""
        rows = []
        for name, versions in sorted(self.models.items()):
            for version in versions.values():
                reason = self.failed.get((name, version.version))
                if reason is None:
                    rows.append({"name": name, "version": str(version.version), "state": "READY",
                                 "loaded": self.is_loaded(version)})
                else:
                    rows.append({"name": name, "version": str(version.version), "state": "UNAVAILABLE",
                                 "reason": reason, "loaded": False})
        for path in self.paths:
            if path.is_dir():
                for folder in model_folders(path):
                    if folder.name not in self.models:
                        rows.append({"name": folder.name, "version": "", "state": "UNAVAILABLE",
                                     "reason": "unloaded"})
        return rows

    def readiness(self) -> dict[str, dict[str, Any]]:
        """Each model's latest version: READY (loaded), UNAVAILABLE (failed, with the reason) or LOADING
        (neither yet, or not warmed because the cache holds fewer models)."""
        states: dict[str, dict[str, Any]] = {}
        for name, versions in sorted(self.models.items()):
            version = versions[max(versions)]
            reason = self.failed.get((name, version.version))
            if reason is not None:
                states[name] = {"state": "UNAVAILABLE", "reason": reason}
            else:
                states[name] = {"state": "READY" if self.is_loaded(version) else "LOADING"}
        return states

    # -- inference ---------------------------------------------------------------------

    def _refuse_large_answer(self, model: LoadedModel, X: Any, outputs: tuple[str, ...]) -> None:
        """413 before the call if the answer's arrays would pass ``max_output_bytes``: what an output
        takes per row is the model's (a predict_proba of 5,000 classes is 40 kB a row), the rows are the
        client's, and a small request of many rows would otherwise have the model allocate gigabytes."""
        limit = self.limits.max_output_bytes
        if limit is None:
            return
        per_row = 0
        for name in outputs:
            dtype, shape = model.signature.get(name, (np.dtype(np.float64), ()))
            per_row += dtype.itemsize * math.prod(shape)
        size = rows_of(X) * per_row
        if size > limit:
            raise HTTPError(413, f"the answer of {rows_of(X)} rows would hold {size} bytes of {', '.join(outputs)}, "
                                 f"over the limit of {limit} bytes (max_output_bytes); send fewer rows per request")

    async def infer(self, version: Version, X: Any, outputs: tuple[str, ...],
                    loaded: LoadedModel | None = None) -> tuple[LoadedModel, dict[str, np.ndarray]]:
        """Run ``outputs`` of ``version`` on rows ``X``: through the model's batcher, or, with batching
        off and exact fast paths for every output, straight away on the event loop.

        Raises HTTPError 400 (unknown output, bad input the model rejects) or 503 (queue full).
        """
        model = loaded or await self.get(version)
        bad = [o for o in outputs if o not in model.outputs]
        if bad:
            raise HTTPError(400, f"model '{version.name}' has no output '{bad[0]}'; outputs: "
                                 f"{', '.join(model.outputs)}")
        self._refuse_large_answer(model, X, outputs)
        stats = model.metrics
        assert stats is not None  # set when the model entered the cache
        run = model.runners.get(outputs)
        if run is None:
            run = model.runners[outputs] = _runner(model, outputs)
        try:
            if model.max_batch_size == 1 and rows_of(X) <= _INLINE_ROWS and model.fast.issuperset(outputs):
                # microseconds of numpy: a thread hop (and a queue) would cost more than the call
                result = run(X)
                stats.batch_rows.observe(rows_of(X))
            else:
                stats.queue.inc()
                try:
                    result = await self._batcher(model, outputs, run, stats).submit(X)
                finally:
                    stats.queue.dec()
        except Overloaded:
            stats.failure.inc()
            raise _overloaded() from None
        except TimedOut:
            stats.failure.inc()
            raise HTTPError(504, f"model '{version.tag}' did not answer within {self.limits.infer_timeout:g} s "
                                 "(--infer-timeout); the server goes on serving the other models",
                            "E_TIMEOUT") from None
        except (ValueError, TypeError) as exc:
            stats.failure.inc()
            raise HTTPError(400, f"model '{version.name}' rejected the input: {exc}") from None
        stats.success.inc()
        return model, result

    def refuse_if_full(self, model: LoadedModel) -> None:
        """503 at once, before the request's body is read, when every queue of ``model`` is full (see
        :class:`~aprender.serve.Batcher`): a large body would otherwise be read and parsed only to be
        refused."""
        if model.batchers and all(b.full for b in model.batchers.values()):
            if model.metrics is not None:
                model.metrics.failure.inc()
            raise _overloaded()

    def _batcher(self, model: LoadedModel, outputs: tuple[str, ...], run: Any, stats: ModelMetrics) -> Batcher:
        batcher = model.batchers.get(outputs)
        if batcher is None:
            batcher = model.batchers[outputs] = Batcher(
                run, model.max_batch_size, self._batch_time(model.version), self.limits.max_queue,
                stats.batch_rows.observe, _INLINE_ROWS if model.fast.issuperset(outputs) else 0,
                self.limits.infer_timeout)
        return batcher

    def _batch_time(self, version: Version) -> float:
        if version.settings.max_batch_time is not None:
            return version.settings.max_batch_time
        return self.limits.max_batch_time


def _overloaded() -> HTTPError:
    return HTTPError(503, "service_overloaded", "E_OVERLOADED", headers={"Retry-After": "1"},
                     extra={"retry_after_ms": 100})


def _runner(model: LoadedModel, outputs: tuple[str, ...]) -> Any:
    methods = [(name, model.methods[name]) for name in outputs]
    names, split = outputs, model.split

    def run(X: Any) -> dict[str, np.ndarray]:
        if isinstance(X, Frame) and split is not None:
            outputs = split.run(X, names)
        else:
            Xm = X.frame() if isinstance(X, Frame) else X
            outputs = {name: np.asarray(method(Xm)) for name, method in methods}
        for name, value in outputs.items():
            if value.ndim == 0 or value.shape[0] != rows_of(X):
                raise ValueError(f"{name}() did not return one row per input row (shape {value.shape}); "
                                 "multi-output probabilities are not served")
        return outputs

    return run
