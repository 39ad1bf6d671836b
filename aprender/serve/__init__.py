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

import lazy_loader as lazy

# The names are listed once, in __init__.pyi, which type checkers read too. Each is imported on
# first use, so that the JSON parser process (aprender.serve._tensors) starts without the
# application, scikit-learn and scipy.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
