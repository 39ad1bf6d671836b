"""``aprender serve``: serve saved models over HTTP in the protocols clients already speak.

One port carries realizar's routes (``/predict`` ...), the Open Inference Protocol v2
(KServe, MLServer, Triton; JSON and binary tensors, repository extension) and an
Ollama-compatible API. Models come from files or a repository folder, pickle-free,
optionally signature-checked; they are cached (LRU), warmed up, and batched adaptively.
Needs the ``serve`` extra: ``pip install "aprender[serve]"``. See docs/serve.md.

Examples
--------
>>> from aprender.serve import ServeConfig
>>> ServeConfig(("model.apr",)).max_queue
1024
"""

from __future__ import annotations

try:
    import orjson  # noqa: F401
    import prometheus_client  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"aprender.serve needs the 'serve' extra ({exc.name} is missing): "
                      "pip install \"aprender[serve]\"") from exc

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aprender.serve._app import ServeConfig, create_app, run
    from aprender.serve._batching import Batcher, Overloaded
    from aprender.serve._repository import Policy, RepositoryError, Settings, scan

__all__ = ["Batcher", "Overloaded", "Policy", "RepositoryError", "ServeConfig", "Settings", "create_app", "run",
           "scan"]

#: Where each public name lives: imported on first use, so that the JSON parser process
#: (aprender.serve._tensors) starts without the application, scikit-learn and scipy.
_HOMES = {"ServeConfig": "_app", "create_app": "_app", "run": "_app", "Batcher": "_batching",
          "Overloaded": "_batching", "Policy": "_repository", "RepositoryError": "_repository",
          "Settings": "_repository", "scan": "_repository"}


def __getattr__(name: str) -> Any:
    import importlib

    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'aprender.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(f"aprender.serve.{home}"), name)
