"""Prometheus metrics under MLServer's names, and realizar's JSON summary.

With ``--workers N`` the CLI sets ``PROMETHEUS_MULTIPROC_DIR`` before prometheus_client is
imported, every worker writes its values there, and ``/metrics`` and ``/v1/metrics`` aggregate
all workers through :class:`prometheus_client.multiprocess.MultiProcessCollector`.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

__all__ = ["Metrics", "ModelMetrics"]

_MODEL = ("model_name", "model_version")
_REST = ("method", "path", "status_code")
#: Request durations in seconds: 100 µs to 10 s, dense where a model server lives.
_SECONDS = (0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.015,
            0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class ModelMetrics:
    """One model version's labelled metrics, looked up once (a ``labels()`` call costs a dict lookup
    under a lock on every request otherwise)."""

    success: Any
    failure: Any
    batch_rows: Any
    queue: Any


class Metrics:
    """The server's metrics, in a registry of its own (so several apps can live in one process).

    Examples
    --------
    >>> metrics = Metrics()
    >>> metrics.success.labels("iris", "1").inc()
    >>> b"model_infer_request_success_total" in metrics.exposition()
    True
    """

    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        # In multiprocess mode values live in the shared folder; the registry is built per scrape.
        registry = None if self.multiprocess else CollectorRegistry(auto_describe=True)
        self._registry = registry
        self.started = time.monotonic()
        self.success = Counter("model_infer_request_success", "Successful inference requests.", _MODEL,
                               registry=registry)
        self.failure = Counter("model_infer_request_failure", "Failed inference requests.", _MODEL,
                               registry=registry)
        self.requests = Counter("rest_server_requests", "HTTP requests served.", _REST, registry=registry)
        self.duration = Histogram("rest_server_requests_duration_seconds", "HTTP request duration.", _REST,
                                  buckets=_SECONDS, registry=registry)
        self.batch_rows = Histogram("batch_request_rows", "Rows per call of a model (adaptive batching).", _MODEL,
                                    buckets=_ROWS, registry=registry)
        self.queue = Gauge("batch_request_queue", "Requests waiting for a call of a model.", _MODEL,
                           multiprocess_mode="livesum", registry=registry)
        self.cache_hits = Counter("model_cache_hits", "Requests whose model was already loaded.", registry=registry)
        self.cache_misses = Counter("model_cache_misses", "Requests that loaded their model.", registry=registry)
        self.cache_evictions = Counter("model_cache_evictions", "Models evicted from the LRU cache.",
                                       registry=registry)
        self.loaded = Gauge("model_cache_loaded_models", "Models loaded.", multiprocess_mode="livesum",
                            registry=registry)

    def for_model(self, name: str, version: str) -> ModelMetrics:
        """The metrics of model ``name`` version ``version``."""
        labels = (name, version)
        return ModelMetrics(self.success.labels(*labels), self.failure.labels(*labels),
                            self.batch_rows.labels(*labels), self.queue.labels(*labels))

    def _collecting_registry(self) -> CollectorRegistry:
        if self._registry is not None:
            return self._registry
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return registry

    def exposition(self) -> bytes:
        """Prometheus text format of every metric (all workers in multiprocess mode)."""
        return generate_latest(self._collecting_registry())

    def summary(self) -> dict[str, Any]:
        """realizar's ``/v1/metrics`` JSON: latency percentiles in ms, totals and uptime."""
        buckets: dict[float, float] = {}
        total = rows = 0.0
        for family in self._collecting_registry().collect():
            for sample in family.samples:
                if sample.name == "rest_server_requests_duration_seconds_bucket":
                    bound = float(sample.labels["le"])
                    buckets[bound] = buckets.get(bound, 0.0) + sample.value
                elif sample.name == "rest_server_requests_total":
                    total += sample.value
                elif sample.name == "batch_request_rows_sum":
                    rows += sample.value
        cumulative = sorted(buckets.items())
        uptime = time.monotonic() - self.started
        return {"throughput_tok_per_sec": rows / uptime if uptime > 0 else 0.0,
                "latency_p50_ms": _quantile(cumulative, 0.50) * 1000,
                "latency_p95_ms": _quantile(cumulative, 0.95) * 1000,
                "latency_p99_ms": _quantile(cumulative, 0.99) * 1000,
                "gpu_memory_used_bytes": 0, "gpu_memory_total_bytes": 0, "gpu_utilization_percent": 0,
                "cuda_path_active": False, "batch_size": 0, "queue_depth": 0,
                "total_tokens": int(rows), "total_requests": int(total), "uptime_secs": int(uptime),
                "model_name": ""}


def _quantile(cumulative: list[tuple[float, float]], q: float) -> float:
    """Prometheus' ``histogram_quantile``: linear interpolation inside the bucket holding rank q."""
    if not cumulative or cumulative[-1][1] == 0:
        return 0.0
    rank = q * cumulative[-1][1]
    lower_bound = lower_count = 0.0
    for bound, count in cumulative:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            width = count - lower_count
            return lower_bound + (bound - lower_bound) * ((rank - lower_count) / width if width else 1.0)
        lower_bound, lower_count = bound, count
    return lower_bound
