"""``--workers N``: N uvicorn servers forked from one process that has already imported
everything and loaded and warmed the models.

uvicorn's own ``--workers`` starts each worker as a fresh interpreter, which imports numpy,
scipy, scikit-learn (and pandas, which scikit-learn imports when it is installed) again:
about 130 MiB of private memory per worker before any model. Forked after the models are
loaded, the workers share those pages copy-on-write, as well as the page cache of memory-mapped
``.apr`` weights; ``gc.freeze()`` keeps the collector from writing to (and so copying) them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from typing import Any

from aprender.serve._bounded import join_abandoned
from aprender.serve._log import log as _log

__all__ = ["serve_forked"]

#: Seconds the parent waits for abandoned warm-ups to end before it forks.
_JOIN_ABANDONED = 5.0



def serve_forked(create_app: Callable[[], Any], host: str, port: int, workers: int, log_level: str,
                 options: dict[str, Any]) -> None:
    """Load and warm the models, bind the port, fork ``workers`` servers; restart one that dies.

    ``create_app()`` builds the application (``aprender.serve.create_app`` with the configuration
    bound), called once the metrics know they are shared between processes; ``options`` are uvicorn's
    (``aprender.serve._protocol.server_options``).
    """
    import uvicorn
    from prometheus_client import values

    folder = tempfile.mkdtemp(prefix="aprender-serve-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder  # read by the metrics, which aggregate every worker
    # prometheus_client picks its value class (in memory, or files in that folder) when it is
    # imported, which was before this process knew it would have workers: pick again.
    values.ValueClass = values.get_value_class()
    try:
        app = create_app()
        asyncio.run(app.state.registry.warm_all())
        running = join_abandoned(_JOIN_ABANDONED)
        if running:
            _log.warning("forking the workers while abandoned work still runs (a worker may find a lock it "
                         "holds taken): %s", ", ".join(running))
        server_config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                                       ws="none", **options)
        sock = server_config.bind_socket()
        sock.listen(server_config.backlog)  # connections wait in the backlog until a worker runs
        gc.collect()
        gc.freeze()
        _supervise(lambda: uvicorn.Server(server_config).run(sockets=[sock]), workers)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _supervise(serve: Any, workers: int) -> None:
    """Fork ``workers`` children running ``serve()``; SIGINT/SIGTERM stop them all."""
    children: set[int] = set()
    stopping = False

    def start() -> None:
        pid = os.fork()
        if pid == 0:  # the worker: uvicorn installs its own signal handlers
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = 1
            try:
                serve()
                code = 0
            except BaseException:
                _log.exception("worker %d failed", os.getpid())
            finally:
                os._exit(code)
        children.add(pid)

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for _ in range(workers):
        start()
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        children.discard(pid)
        if not stopping:
            _log.warning("worker %d exited (status %d); starting another", pid, status)
            time.sleep(0.5)  # a worker that cannot start must not spin the machine
            start()
