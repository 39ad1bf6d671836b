"""The Starlette application: every protocol's routes on one port, errors, metrics, lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import gc
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route, compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from aprender.serve import _mlflow, _ollama, _realizar, _v2
from aprender.serve._http import Call, CallHandler, HTTPError, error_reply, json_response, send_reply
from aprender.serve._log import log as _log
from aprender.serve._metrics import Metrics
from aprender.serve._models import Limits, Registry
from aprender.serve._protocol import BoundedHead
from aprender.serve._repository import Policy
from aprender.serve._request_limits import Bodies, default

__all__ = ["ServeConfig", "create_app", "run", "server_options"]

#: Environment variable carrying the configuration to ``--workers`` processes.
_CONFIG_ENV = "APRENDER_SERVE_CONFIG"


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``aprender serve`` is told.

    Parameters
    ----------
    paths : tuple of str
        Model files and repository folders.
    max_loaded_models : int, optional
        Most models kept loaded (LRU); all by default.
    max_model_memory : int, optional
        Most bytes of model files kept loaded (LRU).
    max_batch_size : int, optional
        Rows per model call for every model without a ``model-settings.json`` value; by default 64
        for trees, forests, KNN, SVC and DataFrame pipelines that batch exactly, 1 (no batching) for
        the rest.
    max_batch_time : float
        Seconds to wait for more rows once a batch is queued (0: none).
    max_queue : int
        Requests (not rows) waiting per model and output set beyond those that fit in the next call;
        one more is refused with 503 at once.
    max_body_size : int
        Largest request body in bytes (413 above).
    api_key : str, optional
        Bearer token required by the repository and load/unload routes.
    require_signature : bool
        Refuse models not signed by one of ``trusted_keys``.
    trusted_keys : tuple of bytes
        Raw Ed25519 public keys.
    allow_outside_links : bool
        Serve model files of a repository folder that resolve outside it.
    trusted : tuple of str
        ``module:function`` specs and hyperparameter names every load trusts beyond the
        default table (``--trust``); each worker process imports what they name.
    warmup_timeout : float, optional
        Seconds each model's load and warm-up may take before the model is marked failed (None: no
        bound).
    infer_timeout : float, optional
        Seconds a request waits for its model's call before 504 (None: no bound).
    warmup_memory : int, optional
        Bytes the process may grow by while one model loads and warms up, beyond three times its
        file's size, before the model is marked failed (None: no bound; needs ``/proc``).
    max_body_memory : int, optional
        Bytes of all the request bodies being received at once (503 above; None: no bound).
    body_timeout : float, optional
        Seconds a request's body may take to arrive (408 after; None: no bound).
    head_timeout : float, optional
        Seconds a request's line and headers may take to arrive, and a new connection may stay silent
        (408 after; None: no bound).
    max_head_size : int, optional
        Bytes of a request's line and headers (431 above; None: no bound).
    max_connections : int, optional
        Open connections and requests in flight (503 above; None: no bound).
    max_output_bytes : int, optional
        Bytes of the arrays one request's answer holds, checked before the model runs (413 above; None:
        no bound).
    max_loop_body_size : int, optional
        Bytes of a body that the event loop parses itself: every route but v2 inference (413 above;
        None: only ``max_body_size``).
    max_client_connections : int, optional
        Open connections of one client address (503 above; None: no bound).

    The defaults of the last eight, and of ``max_body_size``, are the rows of
    :data:`aprender.serve._request_limits.LIMITS`, which give each one's reason.

    Examples
    --------
    >>> ServeConfig(("models/",)).max_body_size
    67108864
    """

    paths: tuple[str, ...]
    max_loaded_models: int | None = None
    max_model_memory: int | None = None
    max_batch_size: int | None = None
    max_batch_time: float = 0.0
    max_queue: int = 1024
    max_body_size: int = int(default("max_body_size"))
    api_key: str | None = None
    require_signature: bool = False
    trusted_keys: tuple[bytes, ...] = ()
    allow_outside_links: bool = False
    trusted: tuple[str, ...] = ()
    warmup_timeout: float | None = 30.0
    infer_timeout: float | None = 60.0
    warmup_memory: int | None = 4096 << 20
    max_body_memory: int | None = int(default("max_body_memory"))
    body_timeout: float | None = default("body_timeout")
    head_timeout: float | None = default("head_timeout")
    max_head_size: int | None = int(default("max_head_size"))
    max_connections: int | None = int(default("max_connections"))
    max_output_bytes: int | None = int(default("max_output_bytes"))
    max_loop_body_size: int | None = int(default("max_loop_body_size"))
    max_client_connections: int | None = int(default("max_client_connections"))

    @property
    def policy(self) -> Policy:
        """The signature, link and trust policy (raises ValueError for a trust spec that names nothing)."""
        from aprender.codec.trust import trusted_from_specs

        return Policy(self.require_signature, self.trusted_keys, self.allow_outside_links,
                      tuple(trusted_from_specs(self.trusted)))

    def to_json(self) -> str:
        """JSON for the worker processes."""
        fields = dataclasses.asdict(self)
        fields["trusted_keys"] = [k.hex() for k in self.trusted_keys]
        return orjson.dumps(fields).decode()

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        """Inverse of :meth:`to_json`."""
        fields = orjson.loads(text)
        fields["paths"], fields["trusted"] = tuple(fields["paths"]), tuple(fields["trusted"])
        fields["trusted_keys"] = tuple(bytes.fromhex(k) for k in fields["trusted_keys"])
        return cls(**fields)


class _Front:
    """The app's outer ASGI layer: MLServer's ``rest_server_requests`` metrics for every request,
    labelled by route template, and the inference routes answered without Starlette (see
    :mod:`aprender.serve._http`). Everything else goes on to Starlette's routing."""

    def __init__(self, app: ASGIApp, metrics: Metrics, registry: Registry, bodies: Bodies,
                 api_key: str | None) -> None:
        self.app = app
        self.metrics = metrics
        self.registry = registry
        self.bodies = bodies
        self.api_key = api_key
        self._exact: dict[str, tuple[str, CallHandler]] = {}
        self._patterns: list[tuple[re.Pattern[str], str, CallHandler]] = []
        for template, handler in {**_realizar.calls, **_v2.calls, **_ollama.calls}.items():
            if "{" in template:
                self._patterns.append((compile_path(template)[0], template, handler))
            else:
                self._exact[template] = (template, handler)
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def _route(self, path: str) -> tuple[str, CallHandler, dict[str, str]] | None:
        found = self._exact.get(path)
        if found is not None:
            return found[0], found[1], {}
        for pattern, template, handler in self._patterns:
            match = pattern.match(path)
            if match is not None:
                return template, handler, match.groupdict()
        return None

    def _record(self, method: str, template: str, status: int, start: float) -> None:
        key = (method, template, status)
        series = self._series.get(key)
        if series is None:
            labels = (method, template, str(status))
            series = self._series[key] = (self.metrics.requests.labels(*labels), self.metrics.duration.labels(*labels))
        series[0].inc()
        series[1].observe(time.perf_counter() - start)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        method, path = scope["method"], scope["path"]
        root = scope.get("root_path", "")
        route = self._route(path[len(root):] if root and path.startswith(root) else path)
        if route is None:
            await self._starlette(scope, receive, send, start)
            return
        template, handler, params = route
        if method != "POST":
            reply = error_reply(_status_error(405, "Method Not Allowed", method, path, {"Allow": "POST"}))
        else:
            try:
                reply = await handler(Call(self.registry, scope["headers"], receive, self.bodies, params,
                                             self.api_key))
            except HTTPError as exc:
                reply = error_reply(exc)
            except ClientDisconnect:
                self._record(method, template, 500, start)  # no answer sent, as Starlette
                return
            except Exception as exc:
                _log.exception("internal error on %s %s", method, path)
                reply = error_reply(_internal(exc))
        try:
            await send_reply(send, reply)
        finally:
            self._record(method, template, reply.status, start)

    async def _starlette(self, scope: Scope, receive: Receive, send: Send, start: float) -> None:
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self._record(scope["method"], getattr(scope.get("route"), "path", "<unmatched>"), status, start)


def _status_error(status: int, detail: str, method: str, path: str, headers: dict[str, str] | None) -> HTTPError:
    """404, 405 ... in the shape of every other error."""
    codes = {404: "E_NOT_FOUND", 405: "E_METHOD_NOT_ALLOWED"}
    return HTTPError(status, f"{detail}: {method} {path}", codes.get(status, "E_HTTP"), headers=headers)


def _internal(exc: Exception) -> HTTPError:
    return HTTPError(500, f"internal error: {type(exc).__name__}: {exc}", "E_INTERNAL")


def _as_response(exc: HTTPError) -> Response:
    reply = error_reply(exc)
    return Response(reply.body, reply.status, reply.headers, media_type=reply.content_type)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPError)
    return _as_response(exc)


async def _starlette_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    return _as_response(_status_error(exc.status_code, exc.detail, request.method, request.url.path, exc.headers))


async def _internal_error(request: Request, exc: Exception) -> Response:
    _log.exception("internal error on %s %s", request.method, request.url.path)
    return _as_response(_internal(exc))


async def _metrics_text(request: Request) -> Response:
    return Response(request.app.state.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")


async def _metrics_json(request: Request) -> Response:
    registry: Registry = request.app.state.registry
    summary = request.app.state.metrics.summary()
    loaded = registry.loaded()
    summary.update(model_name=",".join(m.version.tag for m in loaded),
                   batch_size=max((m.max_batch_size for m in loaded), default=0),
                   queue_depth=sum(b.queued for m in loaded for b in m.batchers.values()))
    return json_response(summary)


def create_app(config: ServeConfig, *, freeze_gc: bool = False) -> Starlette:
    """The ASGI application serving ``config.paths``.

    The repository is scanned here, so a refused model (pickle, bad signature ...) raises
    :class:`~aprender.serve.RepositoryError` before anything listens. Models are loaded and
    warmed in the background once the server starts, each under the warm-up bounds; ``/ready`` answers
    503 until every model is loaded or failed.

    With ``freeze_gc`` (what :func:`run` does, for a process that only serves), every object
    alive once the models are warm (modules, models) is moved out of the cyclic garbage
    collector's sight with :func:`gc.freeze`: with scikit-learn, scipy and pandas imported, a
    full collection otherwise walks ~150,000 objects and stalls every request in flight for
    ~0.1 s (a 64-connection load met two such stalls in 20,000 requests).
    """
    metrics = Metrics()
    limits = Limits(config.max_loaded_models, config.max_model_memory, config.max_batch_size,
                    config.max_batch_time, config.max_queue, config.warmup_timeout, config.infer_timeout,
                    config.warmup_memory, config.max_output_bytes)
    registry = Registry(config.paths, config.policy, limits, metrics)
    bodies = Bodies(config.max_body_size, config.max_body_memory, config.body_timeout, config.max_loop_body_size)

    async def warm() -> None:
        await registry.warm_all()
        if freeze_gc:
            gc.freeze()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(warm())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await registry.parser.close()

    routes = [*_realizar.routes, *_v2.routes, *_ollama.routes, *_mlflow.routes,
              Route("/metrics", _metrics_text, methods=["GET"]),
              Route("/v1/metrics", _metrics_json, methods=["GET"])]
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(_Front, metrics=metrics, registry=registry, bodies=bodies,
                                           api_key=config.api_key)],
                    exception_handlers={HTTPError: _http_error, StarletteHTTPException: _starlette_error,
                                        Exception: _internal_error})
    app.state.config = config
    app.state.registry = registry
    app.state.metrics = metrics
    app.state.bodies = bodies
    return app


def server_options(config: ServeConfig) -> dict[str, Any]:
    """uvicorn's options for serving under ``config``'s limits: the protocol that bounds each request's
    head and the connections (:class:`~aprender.serve._protocol.BoundedHead`).

    Examples
    --------
    >>> server_options(ServeConfig(("m.apr",)))["http"].keywords["max_connections"]
    1024
    """
    # a partial, not a subclass made here: uvicorn's spawned workers (no fork) receive it pickled
    return {"http": functools.partial(BoundedHead, head_timeout=config.head_timeout,
                                      max_head_size=config.max_head_size, max_connections=config.max_connections,
                                      max_client_connections=config.max_client_connections, clients={})}


def _app_from_env() -> Starlette:
    """The application of one ``--workers`` process (configuration from the environment)."""
    return create_app(ServeConfig.from_json(os.environ[_CONFIG_ENV]), freeze_gc=True)


def _exit_cleanly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def run(config: ServeConfig, host: str = "127.0.0.1", port: int = 8080, workers: int = 1,
        log_level: str = "info") -> None:
    """Serve until interrupted: uvicorn (uvloop, httptools), ``workers`` processes on one port.

    Several workers are forked from one process that has loaded the models (see
    :mod:`aprender.serve._workers`); where there is no ``fork`` they are uvicorn's own workers.
    """
    import uvicorn

    if workers == 1:
        # uvicorn drains on SIGTERM and then raises the signal again, which would end the process
        # with status 143: a drained shutdown is a clean one, so the re-raised signal exits with 0.
        signal.signal(signal.SIGTERM, _exit_cleanly)
        uvicorn.run(create_app(config, freeze_gc=True), host=host, port=port, log_level=log_level,
                    access_log=False, ws="none", **server_options(config))
        return
    if hasattr(os, "fork"):
        from aprender.serve._workers import serve_forked

        serve_forked(lambda: create_app(config, freeze_gc=True), host, port, workers, log_level,
                     server_options(config))
        return
    folder = tempfile.mkdtemp(prefix="aprender-serve-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    os.environ[_CONFIG_ENV] = config.to_json()
    try:
        uvicorn.run("aprender.serve._app:_app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level=log_level, access_log=False, ws="none", **server_options(config))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
