"""Commands and options whose help names the formats of the table, and each format's own options.

Help text may hold the placeholders of :func:`aprender.format._formats.describe`
(``{formats}``, ``{quantizes}``, ``{exports}`` ...), filled from the table when the help is
shown, so a format registered later is listed. A backend's write options whose field
metadata has ``"help"`` become options of the command: ``--<format>-<field>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import click

from aprender.cli._options import TableHelp
from aprender.format._formats import FORMATS, Format, describe

__all__ = ["OptionsCommand", "TableCommand", "own_options"]

#: Option types a flag parses, by the name of its field's annotation (anything else is passed as text).
_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
#: Where a command keeps the values of its format flags: format name -> {option: value}, set ones only.
_GIVEN = "format_options"


class _FormatFlag(click.Option):
    """``--<format>-<field>``: one field of a backend's options type."""

    def __init__(self, fmt: Format, field: dataclasses.Field[Any]) -> None:
        flag = f"--{fmt.name}-{field.name.replace('_', '-')}"
        # the field's annotation, a string under ``from __future__ import annotations``; others are text
        annotation = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
        super().__init__([flag, f"{fmt.name}__{field.name}"], type=_TYPES.get(annotation, str),
                         help=f"{fmt.name} output: {field.metadata['help']}")
        self.format_name, self.field_name = fmt.name, field.name


def _flags(names: Sequence[str]) -> list[click.Option]:
    return [_FormatFlag(f, field) for f in FORMATS.values() if f.name in names
            for field in f.can.option_fields() if "help" in field.metadata]


class TableCommand(TableHelp, click.Command):
    """A command whose help and short help are filled from the table when shown."""

    @property  # type: ignore[override]
    def short_help(self) -> str | None:
        return None if self._short_help is None else describe(self._short_help)

    @short_help.setter
    def short_help(self, value: str | None) -> None:
        self._short_help = value



class OptionsCommand(TableCommand):
    """A command that writes any format, and takes every format's own options (``--<format>-<option>``).

    The values reach the callback as ``format_options`` (see :func:`own_options`).
    Only the backends whose flags the command line names are imported to parse it
    (every one for ``--help``): ``apr convert m.apr -o m.gguf`` does not import ONNX.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        helping = any(a in ctx.help_option_names for a in args)
        ctx.meta[_GIVEN] = [name for name in FORMATS
                            if helping or any(a.startswith(f"--{name}-") for a in args)]
        return super().parse_args(ctx, args)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        return [*params[:-1], *_flags(ctx.meta.get(_GIVEN, list(FORMATS))), *params[-1:]]

    def invoke(self, ctx: click.Context) -> Any:
        given: dict[str, dict[str, Any]] = {}
        for param in self.get_params(ctx):
            if isinstance(param, _FormatFlag):
                value = ctx.params.pop(param.name or "", None)
                if value is not None:
                    given.setdefault(param.format_name, {})[param.field_name] = value
        ctx.params[_GIVEN] = given
        return super().invoke(ctx)


def own_options(given: dict[str, dict[str, Any]], target: str) -> dict[str, Any]:
    """The ``--<format>-<option>`` values for ``target``; a flag of another format is a usage error."""
    for name, values in given.items():
        if name != target:
            flags = ", ".join(f"--{name}-{k.replace('_', '-')}" for k in values)
            raise click.BadParameter(f"{flags} applies to {name} output only, and the output is {target}")
    return dict(given.get(target, {}))
