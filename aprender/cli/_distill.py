"""``apr distill``: fit a small student to one or more teacher files (see :func:`aprender.distill`).

The student is written as a Python call, ``"MLPClassifier(hidden_layer_sizes=(32,))"``,
and parsed with :mod:`ast`: the name must be an estimator class of aprender's public
modules, and every argument a literal (numbers, strings, tuples, lists, dicts, None,
True/False). Nothing is evaluated or imported by name.
"""

from __future__ import annotations

import ast
import importlib
import inspect as pyinspect
from pathlib import Path
from typing import Any

import click
import numpy as np

import aprender
from aprender.cli._options import (
    INPUT,
    check_output,
    debug_option,
    force_option,
    json_option,
    output_option,
    progress_option,
    trust_option,
)
from aprender.cli._progress import phases
from aprender.cli._render import emit_json, say, size
from aprender.distill._methods import METHODS

__all__ = ["distill_cmd", "load_data", "parse_student", "student_classes"]

#: The public modules whose estimator classes a student spec may name.
_MODULES = ("linear_model", "tree", "ensemble", "neighbors", "svm", "neural_network", "naive_bayes")
#: Transfer sets with at least this many rows get a progress bar by default.
_LONG = 10_000


def student_classes() -> dict[str, type]:
    """Name -> class of every estimator a student spec may name (aprender's public estimators)."""
    out = {}
    for module in _MODULES:
        package = importlib.import_module(f"aprender.{module}")
        for name in package.__all__:
            obj = getattr(package, name)
            if pyinspect.isclass(obj) and hasattr(obj, "fit") and hasattr(obj, "get_params"):
                out[name] = obj
    return out


def parse_student(spec: str) -> Any:
    """Build the estimator a spec such as ``"MLPClassifier(hidden_layer_sizes=(32,))"`` names.

    Raises :class:`click.BadParameter` for anything but an allow-listed class called
    with literal arguments.
    """
    def bad(why: str) -> click.BadParameter:
        return click.BadParameter(f"{why} in {spec!r}", param_hint="--student")

    try:
        node = ast.parse(spec.strip(), mode="eval").body
    except SyntaxError:
        raise bad("not a Python call such as 'LogisticRegression(C=0.5)'") from None
    if isinstance(node, ast.Name):
        node = ast.Call(func=node, args=[], keywords=[])
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise bad("not a call of an estimator class by its plain name")
    classes = student_classes()
    if node.func.id not in classes:
        raise bad(f"unknown estimator {node.func.id!r} (known: {', '.join(sorted(classes))})")
    if node.args:
        raise bad("positional arguments are not accepted; name them")
    params = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise bad("'**' arguments are not accepted")
        try:
            params[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            raise bad(f"argument {keyword.arg!r} is not a literal") from None
    cls = classes[node.func.id]
    unknown = sorted(set(params) - set(cls().get_params()))
    if unknown:
        raise bad(f"{node.func.id} has no parameter {', '.join(map(repr, unknown))}")
    return cls(**params)


def load_data(path: Path, target: str) -> tuple[np.ndarray, np.ndarray | None]:
    """X and (when present) y from .npz (arrays ``X``, ``y``), .npy (X only), .csv or .parquet.

    A CSV has a header row; the column named ``target`` is y, the others are X. A
    Parquet file (needs pyarrow) is read the same way.
    """
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            if "X" not in archive:
                raise click.BadParameter(f"'{path}' has no array named 'X' (found {', '.join(archive.files)})",
                                         param_hint="--data")
            return archive["X"], archive["y"] if target in archive else None
    if suffix == ".npy":
        return np.load(path, allow_pickle=False), None
    if suffix == ".csv":
        table = np.genfromtxt(path, delimiter=",", names=True, dtype=np.float64, encoding="utf-8")
        names = list(table.dtype.names or ())
        columns = {name: table[name] for name in names}
    elif suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise click.BadParameter("reading .parquet needs pyarrow (pip install pyarrow)",
                                     param_hint="--data") from None
        frame = pq.read_table(path)
        names = frame.column_names
        columns = {name: frame.column(name).to_numpy() for name in names}
    else:
        raise click.BadParameter(f"'{path}': use .npz, .npy, .csv or .parquet", param_hint="--data")
    features = [name for name in names if name != target]
    X = np.column_stack([np.asarray(columns[name], dtype=np.float64) for name in features])
    return X, np.asarray(columns[target]) if target in columns else None


@click.command("distill", short_help="Fit a small student model to teacher models.")
@click.argument("teachers", nargs=-1, required=True, type=INPUT)
@click.option("--student", "spec", required=True,
              help="The student as a call, e.g. \"MLPClassifier(hidden_layer_sizes=(32,))\" (literal arguments).")
@click.option("--data", "data_path", required=True, type=INPUT,
              help="Transfer data: .npz (X, optional y), .npy (X), .csv or .parquet (header; --target column is y).")
@output_option("Student file to write ({loads}).")
@click.option("--method", type=click.Choice(METHODS), default="standard", show_default=True,
              help="standard (one teacher), ensemble (teachers averaged) or progressive (MLP layers matched).")
@click.option("--temperature", type=click.FloatRange(min=0, min_open=True), default=0.5, show_default=True,
              help="Tempers the teachers' probabilities: softmax(log p / T); below 1 sharpens them.")
@click.option("--alpha", type=click.FloatRange(0, 1), default=0.7, show_default=True,
              help="Weight of the teachers against the true labels.")
@click.option("--layer-map", help="Progressive: student:teacher hidden-layer pairs, e.g. 0:0,1:2.")
@click.option("--transfer-size", default="auto", show_default=True, help="Rows of the transfer set, or 'auto'.")
@click.option("--target", default="y", show_default=True, help="Name of the target array or column.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--fallback/--no-fallback", default=True, show_default=True,
              help="Return the student fitted on the hard labels when a paired test on the held-out rows "
                   "shows it is better (5% level).")
@click.option("--inference-only", is_flag=True,
              help="Leave out what only further training reads (optimizer state, loss curves): a smaller file "
                   "whose partial_fit is refused.")
@trust_option
@force_option
@progress_option
@json_option
@debug_option
def distill_cmd(teachers: tuple[Path, ...], spec: str, data_path: Path, output: Path, method: str,
                temperature: float, alpha: float, layer_map: str | None, transfer_size: str, target: str,
                seed: int, fallback: bool, inference_only: bool, trusted: list[Any] | None, force: bool,
                progress: bool | None, as_json: bool) -> int:
    """Distil TEACHERS (model files) into a small student, saved with its provenance.

    The student records each teacher file's sha256 and classes, the method,
    temperature, alpha, final loss and the transfer set's size and sha256; `apr
    inspect` shows them.
    """
    student = parse_student(spec)
    size_arg: int | str = transfer_size
    if transfer_size != "auto":
        if not transfer_size.isdigit() or int(transfer_size) < 1:
            raise click.BadParameter("a positive integer or 'auto'", param_hint="--transfer-size")
        size_arg = int(transfer_size)
    check_output(output, force)
    X, y = load_data(data_path, target)
    # The phases of one distillation, the hard-label fit, and the refit on every row.
    per_fit = 3 + (len(layer_map.split(",")) if layer_map else 2) * (method == "progressive")
    steps = 1 + per_fit + (y is not None) * (1 + per_fit)
    with phases(steps, 0, progress if progress is not None else X.shape[0] >= _LONG) as phase:
        fitted = aprender.distill([str(t) for t in teachers], student, X, y, method=method,
                                  temperature=temperature, alpha=alpha, layer_map=layer_map,
                                  transfer_size=size_arg, random_state=seed, fallback=fallback, progress=phase,
                                  trusted=trusted)
        phase("saving")
        aprender.save(fitted, output, inference_only=inference_only)
    summary = {"output": str(output), "file_size": output.stat().st_size, "student": type(fitted).__name__,
               "provenance": fitted.provenance_}
    if as_json:
        emit_json(summary)
    else:
        record = fitted.provenance_
        say(f"distilled {len(teachers)} teacher(s) into {summary['student']} -> {output} "
            f"({size(summary['file_size'])})")
        say(f"method {record['method']}, final loss {record['final_loss']:.4f}, "
            f"transfer set {record['transfer_set']['size']} rows")
        report = record["report"]
        if report:
            say(f"held-out {report['metric']}: student {report['student']:.4f}, teachers "
                + ", ".join(f"{s:.4f}" for s in report["teachers"]))
        choice = record["fallback"]
        if choice:
            scores = choice["held_out"]
            where = "out of fold" if choice.get("cross_fitted_folds") else "held-out"
            held = (f"{where}: distilled {scores['distilled']:.4f}, hard-label {scores['hard_labels']:.4f}; "
                    if scores else "")
            say(f"kept the {choice['kept'].replace('_', '-')} student ({held}{choice['reason']})")
    return 0
