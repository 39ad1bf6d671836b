"""``serve``: serve model files or a model repository over HTTP (needs the ``serve`` extra)."""

from __future__ import annotations

from pathlib import Path

import click
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from aprender.cli._options import CommandError, debug_option, json_option, resolve_trust, trust_specs_option
from aprender.cli._render import echo, emit_json
from aprender.cli._secrets import load_public_key

__all__ = ["serve"]

_MIB = 1 << 20


@click.command(short_help="Serve models over HTTP: realizar, Open Inference Protocol v2 and Ollama APIs.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="Processes sharing the port; .apr weights are shared through the page cache.")
@click.option("--max-loaded-models", type=click.IntRange(min=1), help="Models kept loaded (LRU). [all]")
@click.option("--max-model-memory", type=click.FloatRange(min=0), metavar="MIB",
              help="MiB of model files kept loaded (LRU).")
@click.option("--max-batch-size", type=click.IntRange(min=1),
              help="Rows per model call (1: no batching). [64 for trees, forests, KNN, SVC and DataFrame "
              "pipelines that batch exactly; 1 otherwise]")
@click.option("--max-batch-time", default=0.0, show_default=True, type=click.FloatRange(min=0), metavar="SECONDS",
              help="Wait this long for more rows once a batch is queued.")
@click.option("--max-queue", default=1024, show_default=True, type=click.IntRange(min=1),
              help="Requests (not rows) waiting per model and output set beyond those that fit in the next "
              "call: one more gets 503 at once. Never cuts a batch short.")
@click.option("--max-body-size", default=64.0, show_default=True, type=click.FloatRange(min=0), metavar="MIB",
              help="Largest request body (413 above).")
@click.option("--api-key", envvar="APRENDER_API_KEY", help="Bearer token for the repository and load/unload routes "
              "(or APRENDER_API_KEY).")
@click.option("--require-signature", is_flag=True, help="Refuse models not signed by a --trusted-key.")
@click.option("--trusted-key", "trusted_keys", multiple=True, type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="Ed25519 public key (PEM) whose signatures are trusted; repeatable.")
@click.option("--allow-outside-links", is_flag=True,
              help="Serve model files of a repository folder that are symbolic links to files outside it.")
@click.option("--warmup-timeout", default=30.0, show_default=True, type=click.FloatRange(min=0), metavar="SECONDS",
              help="Longest load and warm-up of one model; past it the model is marked failed and the others "
              "are served (0: no bound).")
@click.option("--warmup-memory", default=4096.0, show_default=True, type=click.FloatRange(min=0), metavar="MIB",
              help="Most the server may grow while one model loads and warms up, beyond three times its file's "
              "size; past it the model is marked failed (0: no bound).")
@click.option("--infer-timeout", default=60.0, show_default=True, type=click.FloatRange(min=0), metavar="SECONDS",
              help="Longest wait of a request for its model's call: 504 past it (0: no bound).")
@trust_specs_option
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@json_option
@debug_option
def serve(paths: tuple[Path, ...], host: str, port: int, workers: int, max_loaded_models: int | None,
          max_model_memory: float | None, max_batch_size: int | None, max_batch_time: float, max_queue: int,
          max_body_size: float, api_key: str | None, require_signature: bool, trusted_keys: tuple[Path, ...],
          allow_outside_links: bool, warmup_timeout: float, warmup_memory: float, infer_timeout: float,
          trusted: tuple[str, ...], log_level: str, as_json: bool) -> int:
    """Serve model files and repository folders (PATH/NAME/N/model.apr) until interrupted.

    A file is served under its stem. Pickle files (.pkl, .joblib) are refused unopened.
    Routes: /predict, /v2/models/NAME/infer, /api/generate ...; see docs/serve.md.
    """
    try:
        from aprender.serve import RepositoryError, ServeConfig, run, scan
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    if require_signature and not trusted_keys:
        raise click.UsageError("--require-signature needs at least one --trusted-key")
    resolve_trust(trusted)  # a spec that names nothing is a usage error here, not in every worker
    keys = tuple(load_public_key(p, Ed25519PublicKey, "--trusted-key").public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw) for p in trusted_keys)
    config = ServeConfig(tuple(str(p) for p in paths), max_loaded_models,
                         None if max_model_memory is None else int(max_model_memory * _MIB), max_batch_size,
                         max_batch_time, max_queue, int(max_body_size * _MIB), api_key, require_signature, keys,
                         allow_outside_links, trusted, warmup_timeout or None, infer_timeout or None,
                         int(warmup_memory * _MIB) or None)
    try:
        models = scan(config.paths, config.policy)  # refuse before binding anything
    except RepositoryError as exc:
        raise CommandError(str(exc)) from None
    if as_json:  # what is about to be served, before the server's own log lines
        emit_json({"url": f"http://{host}:{port}", "workers": workers,
                   "models": [v.describe() for versions in models.values() for v in versions.values()]})
    else:
        names = ", ".join(f"{name} ({len(versions)} version{'s' * (len(versions) > 1)})"
                          for name, versions in sorted(models.items()))
        echo(f"serving {names} on http://{host}:{port} with {workers} worker{'s' * (workers > 1)}", err=True)
    run(config, host, port, workers, log_level)
    return 0
