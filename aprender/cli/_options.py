"""Options shared by several commands, and the errors commands raise on purpose."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from aprender.cli._render import echo, echo_traceback, emit_json
from aprender.exceptions import AprenderError, UntrustedFunctionError, UntrustedParameterError
from aprender.format._formats import FORMATS, describe

__all__ = [
    "INPUT",
    "FormatChoice",
    "TableHelp",
    "TableOption",
    "CommandError",
    "Invalid",
    "OutputExists",
    "check_output",
    "debug_option",
    "force_option",
    "json_option",
    "output_option",
    "progress_option",
    "report_caught",
    "run_check",
]

F = TypeVar("F", bound=Callable[..., Any])

class FormatChoice(click.Choice):
    """``--format``: a name of the format table, read when the option is parsed (a row added later counts)."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        return tuple(FORMATS)

    @choices.setter
    def choices(self, value: Any) -> None:  # click.Choice.__init__ sets it; the table is the one source
        pass


class TableHelp:
    """Mixin for a click command, group or option: its ``help`` names the formats of the table, read when shown.

    The text may hold :func:`~aprender.format._formats.describe`'s placeholders
    (``{formats}``, ``{suffixes}``, ``{quantizes}`` ...), so a format registered later is listed.
    """

    _help: str | None

    @property
    def help(self) -> str | None:
        return None if self._help is None else describe(self._help)

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value


class TableOption(TableHelp, click.Option):
    """An option whose help is filled from the format table when shown."""


#: An existing input file; a missing one is a usage error (exit 2) named by click.
INPUT = click.Path(exists=True, dir_okay=False, readable=True, path_type=Path)


class CommandError(click.ClickException):
    """A request the input cannot satisfy (exit 1): shown as one line."""

    exit_code = 1


class Invalid(CommandError):
    """A check failed or two files differ (exit 1); the command already printed why."""

    def __init__(self) -> None:
        super().__init__("")


class OutputExists(click.UsageError):
    """The output exists and --force was not given (exit 2)."""


def check_output(path: Path, force: bool) -> Path:
    """Refuse to replace an existing file unless ``force``; refuse a folder always."""
    if path.is_dir():
        raise click.BadParameter(f"'{path}' is a folder, not a file", param_hint="--output")
    if path.exists() and not force:
        raise OutputExists(f"'{path}' exists; pass --force to overwrite it")
    if not path.parent.is_dir():
        raise click.BadParameter(f"folder '{path.parent}' does not exist", param_hint="--output")
    return path


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value and isinstance(ctx.find_root().obj, dict):
        ctx.find_root().obj["debug"] = True
    return value


def report_caught(exc: BaseException) -> None:
    """Print the traceback of an error a command handles itself, when --debug was given."""
    root = click.get_current_context().find_root().obj
    if isinstance(root, dict) and root.get("debug"):
        echo_traceback(exc)


def error_text(exc: BaseException) -> str:
    """``str(exc)``, and for a refused function or hyperparameter the ``--trust`` that accepts it."""
    if isinstance(exc, UntrustedFunctionError) and "." in exc.name:
        module, _, name = exc.name.rpartition(".")
        return f"{exc} (on the command line: --trust {module}:{name})"
    if isinstance(exc, UntrustedParameterError):
        return f"{exc} (on the command line: --trust {exc.name})"
    return str(exc)


def run_check(result: dict[str, Any], check: Callable[[], None], as_json: bool, show_valid: Callable[[], None]) -> int:
    """Run ``check`` (which fills ``result``) and report it as every checking command does.

    An :class:`~aprender.exceptions.AprenderError` is the check's answer, not a crash: it
    is recorded in ``result["error"]``. ``result`` is printed as JSON, or ``show_valid()``
    says a passed check; a failed one ends with one ``invalid: MESSAGE [ErrorType]``
    line on stderr and exit status 1.
    """
    try:
        check()
        result["valid"] = True
    except AprenderError as exc:
        result["error"] = {"type": type(exc).__name__, "message": error_text(exc)}
        report_caught(exc)
    if as_json:
        emit_json(result)
    elif result["valid"]:
        show_valid()
    if not result["valid"]:
        error = result["error"]
        echo(f"invalid: {error['message']} [{error['type']}]")
        raise Invalid()
    return 0


def debug_option(f: F) -> F:
    """``--debug``: show the full traceback of an error (accepted before or after the command)."""
    return click.option("--debug", is_flag=True, expose_value=False, is_eager=True, callback=_set_debug,
                        help="Show the full traceback of an error.")(f)


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value and isinstance(ctx.find_root().obj, dict):
        ctx.find_root().obj["json"] = True
    return value


def json_option(f: F) -> F:
    """``--json``: machine-readable output on stdout, a JSON ``{"error": ...}`` object on failure too."""
    return click.option("--json", "as_json", is_flag=True, is_eager=True, callback=_set_json,
                        help="Print machine-readable JSON instead of tables.")(f)


def force_option(f: F) -> F:
    """``--force``: allow replacing an existing output."""
    return click.option("--force", "-f", is_flag=True, help="Overwrite OUTPUT if it exists.")(f)


def output_option(help_text: str) -> Callable[[F], F]:
    """``--output/-o PATH`` (required)."""
    return click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
                        help=help_text, cls=TableOption)


def resolve_trust(specs: tuple[str, ...]) -> list[Any] | None:
    """What ``--trust`` specs name (``aprender.load``'s ``trusted=``), or None for none; a usage error if one
    names nothing."""
    from aprender.codec.trust import trusted_from_specs

    try:
        return trusted_from_specs(specs) or None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--trust") from None


def trust_option(f: F, resolve: bool = True) -> F:
    """``--trust SPEC`` (repeatable): a function (``module:function``) or hyperparameter name the model may use
    beyond the default table. The command's ``trusted`` argument is what they name (``aprender.load``'s
    ``trusted=``), or with ``resolve=False`` the specs themselves."""
    return click.option("--trust", "trusted", multiple=True, metavar="SPEC",
                        callback=(lambda _ctx, _param, specs: resolve_trust(specs)) if resolve else None,
                        help="Trust a function the model names, as module:function (the module is imported), or "
                             "a hyperparameter name such as n_jobs; repeatable. See docs/threat-model.md.")(f)


def trust_specs_option(f: F) -> F:
    """``--trust SPEC`` whose ``trusted`` argument is the specs, for a server that resolves them in each worker."""
    return trust_option(f, resolve=False)


def progress_option(f: F) -> F:
    """``--progress/--no-progress``: force the progress bar on or off (default: files over 100 MB)."""
    return click.option("--progress/--no-progress", default=None,
                        help="Show a progress bar on stderr (default: only for files over 100 MB).")(f)
