"""The ``aprender`` / ``apr`` command line.

Commands: ``inspect``, ``validate``, ``convert`` (alias ``export``), ``import``,
``quantize``, ``keygen``, ``sign``, ``verify``, ``encrypt``, ``decrypt`` and ``diff``.
docs/cli.md describes each with a session transcript.

Examples
--------
>>> from aprender.cli import main
>>> main(["--help"]) == 0  # doctest: +ELLIPSIS
Usage: aprender [OPTIONS] COMMAND [ARGS]...
...
True
"""

from aprender.cli._app import cli, main

__all__ = ["cli", "main"]
