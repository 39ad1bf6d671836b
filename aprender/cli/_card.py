"""``card``: a Hugging Face model card (README.md) for a model file."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from aprender.cli._files import read, rebuild
from aprender.cli._options import (
    INPUT,
    check_output,
    debug_option,
    force_option,
    json_option,
    output_option,
    trust_option,
)
from aprender.cli._render import emit_json, say
from aprender.cli._secrets import Secrets, secret_options

__all__ = ["card"]


@click.command(short_help="Write a model card (README.md) for a model file.")
@click.argument("file", type=INPUT)
@output_option("Card to write, usually README.md.")
@click.option("--name", "model_id", help="Model name: the card's title (default: the class name).")
@click.option("--license", "license_", metavar="ID", help="License identifier as the Hub knows it, e.g. mit.")
@click.option("--tag", "tags", multiple=True, help="Extra tag (repeatable).")
@click.option("--dataset", "datasets", multiple=True, help="Training dataset id (repeatable).")
@click.option("--description", help="What the model is (Markdown).")
@click.option("--intended-use", help="Intended uses and limitations (Markdown).")
@trust_option
@secret_options
@force_option
@json_option
@debug_option
def card(file: Path, output: Path, model_id: str | None, license_: str | None, tags: tuple[str, ...],
         datasets: tuple[str, ...], description: str | None, intended_use: str | None, trusted: list | None,
         secrets: Secrets,
         force: bool, as_json: bool) -> int:
    """Write a model card for FILE: front matter in the Hugging Face convention, hyperparameters,
    the file's SHA-256 and a load snippet. Needs the 'card' extra.

    The model is rebuilt through the allow-list first, so the card only ever
    describes a model aprender can load.
    """
    from aprender.card import Card

    check_output(output, force)
    model = rebuild(read(file, secrets).state, trusted)
    built = Card(model, model_id=model_id, license=license_, tags=tags, datasets=datasets, description=description,
                 intended_use=intended_use).for_file(file)
    built.save(output)
    if as_json:
        emit_json({"input": str(file), "output": str(output), "sha256": built.file[1] if built.file else None,
                   "metadata": built.metadata()})
    else:
        say(f"wrote {escape(str(output))}: model card for {escape(file.name)} ({type(model).__name__})")
    return 0
