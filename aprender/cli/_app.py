"""The ``aprender`` / ``apr`` command group and its entry point."""

from __future__ import annotations

import copy
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import click

from aprender import __version__
from aprender.cli._options import Invalid, TableHelp, debug_option, error_text
from aprender.cli._render import echo, echo_traceback, emit_json
from aprender.format._formats import describe

__all__ = ["cli", "main"]

#: click >= 8.2 raises this for a group called without a command (older versions print help and exit 0).
_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())
#: Exit status of an interrupted command (128 + SIGINT), as shells report it.
_INTERRUPTED = 130


#: Command name -> (module under aprender.cli, attribute, one-line help), in the order ``--help``
#: lists them. A command's module is imported when the command runs: ``apr inspect`` never imports
#: what ``apr distill`` or ``apr serve`` need, and ``apr --help`` lists the commands from this table
#: without importing any (tests/test_cli.py checks each line against the command's own short help).
#: ``{formats}`` is filled from the format table (:func:`~aprender.format._formats.describe`).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "inspect": ("_inspect", "inspect", "Show a file's model, metadata, flags and tensors."),
    "validate": ("_validate", "validate", "Check checksums, structure and signature."),
    "convert": ("_convert", "convert", "Convert to {formats}."),
    "export": ("_convert", "convert", "Alias of convert."),
    "import": ("_convert", "import_", "Import a foreign .safetensors/.gguf as raw tensors."),
    "quantize": ("_convert", "quantize_cmd", "Quantize weights to Q8_0, Q4_0 or Q4_1."),
    "keygen": ("_crypto", "keygen", "Generate an Ed25519 or X25519 key pair."),
    "sign": ("_crypto", "sign", "Sign an .apr file with an Ed25519 key."),
    "verify": ("_crypto", "verify", "Verify the signature of an .apr file."),
    "encrypt": ("_crypto", "encrypt", "Encrypt an .apr file (password or recipient)."),
    "decrypt": ("_crypto", "decrypt", "Decrypt an .apr file."),
    "diff": ("_diff", "diff", "Compare metadata and tensors of two files."),
    "card": ("_card", "card", "Write a model card (README.md) for a model file."),
    "distill": ("_distill", "distill_cmd", "Fit a small student model to teacher models."),
    "serve": ("_serve", "serve", "Serve models over HTTP: realizar, Open Inference Protocol v2 and Ollama APIs."),
}


#: Commands that read and write bytes and never multiply matrices. They start numpy (through
#: gguf, onnx or the readers) with one BLAS thread: OpenBLAS otherwise starts a thread per core
#: as numpy is imported, which doubles the CPU time of ``apr inspect m.gguf`` and buys nothing.
BYTE_COMMANDS = frozenset({"inspect", "verify", "sign", "keygen", "encrypt", "decrypt"})
#: The variable OpenBLAS (numpy's wheels) reads once, as numpy is imported.
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


class _LazyGroup(TableHelp, click.Group):
    """A group whose commands are imported on first use, from :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            run = ctx.find_root().obj
            if (cmd_name in BYTE_COMMANDS and isinstance(run, dict) and "numpy" not in sys.modules
                    and _BLAS_THREADS not in os.environ):
                # a user's own setting wins; main() takes this one back as the command ends
                os.environ[_BLAS_THREADS] = run["blas_threads"] = "1"
            module, attribute, short_help = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"aprender.cli.{module}"), attribute)
            if cmd_name == "export":
                command = copy.copy(command)
                command.short_help = short_help
            command.name = cmd_name
            self.commands[cmd_name] = command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own layout (a definition list under "Commands"), from the table: no command module is imported.
        with formatter.section("Commands"):
            formatter.write_dl([(name, describe(short_help)) for name, (_, _, short_help) in COMMANDS.items()])


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", "-V", prog_name="aprender")
@debug_option
def cli() -> None:
    """Inspect, validate, convert, quantize, sign and encrypt aprender model files.

    Files: {suffixes}; an export-only format (named in 'convert
    --help') is written by convert and read by inspect and validate.
    Every command takes --help and --json. Exit status: 0 ok, 1 invalid or
    different, 2 usage error. Errors are one line on stderr; --debug shows the
    traceback.
    """


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _describe(exc: BaseException) -> str:
    """The one error line for ``exc``."""
    if isinstance(exc, click.UsageError):
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        return _one_line(exc.format_message()) + hint
    if isinstance(exc, click.ClickException):
        return _one_line(exc.format_message())
    from aprender.exceptions import AprenderError

    if isinstance(exc, (AprenderError, OSError, ValueError, TypeError)):
        return _one_line(error_text(exc)) or type(exc).__name__
    return f"{type(exc).__name__}: {_one_line(str(exc))}"


def _show_warnings(caught: list[warnings.WarningMessage], debug: bool) -> None:
    seen = set()
    for w in caught:
        if not (debug or issubclass(w.category, UserWarning)) or issubclass(w.category, DeprecationWarning):
            continue
        text = _one_line(str(w.message))
        if text not in seen:
            seen.add(text)
            echo(f"warning: {text}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status instead of exiting.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments after the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 when the command succeeded, 1 when a file is invalid, two files differ or
        the command failed, 2 on a usage error (bad option, existing output without
        ``--force``, missing input).

    Examples
    --------
    >>> from aprender.cli import main
    >>> main(["--version"])
    aprender, version 0.1.0
    0
    """
    args = list(sys.argv[1:] if argv is None else argv)
    run: dict[str, Any] = {"debug": False, "blas_threads": None}
    failure: BaseException | None = None
    code = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = cli.main(args=args, prog_name="aprender" if argv is not None else None, standalone_mode=False,
                              obj=run)
            code = result if isinstance(result, int) else 0
        except Invalid as exc:
            code = exc.exit_code  # the command already said why on stderr
        except _NO_ARGS as exc:  # bare ``apr``: the help, as click itself shows it
            echo(exc.format_message(), lines=True)
            code = exc.exit_code
        except click.Abort:
            failure, code = None, _INTERRUPTED
            echo("error: interrupted")
        except click.ClickException as exc:
            failure, code = exc, exc.exit_code
        except Exception as exc:
            failure, code = exc, 1
    if run["blas_threads"] is not None:
        os.environ.pop(_BLAS_THREADS, None)
    _show_warnings(caught, run["debug"])
    if failure is not None:
        if run["debug"]:
            echo_traceback(failure)
        message = _describe(failure)
        echo(f"error: {message}")
        if run.get("json") or "--json" in args:
            # the shape validate and verify print for an invalid file: {"error": {"type", "message"}}
            emit_json({"error": {"type": type(failure).__name__, "message": message}})
    return code
