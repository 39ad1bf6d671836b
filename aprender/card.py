"""Model cards in the Hugging Face convention, built from a fitted model.

A :class:`Card` renders ``README.md``: YAML front matter (``library_name: aprender``,
``license``, ``tags``, ``datasets``, ``metrics``, ``model-index`` for evaluation
results) followed by the model's description, intended use, hyperparameters, the
model file and its SHA-256 digest, a copy-paste load snippet, metrics, evaluation
results, the sections you add, and plots. Plots (a confusion matrix, feature
importances, or any matplotlib figure) are rendered to PNG with matplotlib's Agg
backend and written beside the card.

Rendering is deterministic: the same model and the same additions give the same
bytes (no timestamps; PNGs carry no date). Needs the ``card`` extra
(``pip install "aprender[card]"``: PyYAML for the front matter, matplotlib for plots).

Examples
--------
>>> from aprender.card import Card
>>> from aprender.linear_model import LogisticRegression
>>> model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
>>> card = Card(model, model_id="toy-logreg", license="mit")
>>> card = card.add_metrics(accuracy=1.0).add(**{"Training data": "Four points."})
>>> text = card.render()
>>> text.splitlines()[:3]
['---', 'library_name: aprender', 'license: mit']
>>> "## Training data" in text
True
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aprender._display import printable
from aprender.codec import to_state
from aprender.format._formats import by_suffix, having

__all__ = ["Card", "Evaluation", "Plot"]

PathLike = str | os.PathLike

_WIDTH = 80


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"aprender.card needs {module.split('.')[0]}: pip install \"aprender[card]\"") from exc


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """One evaluation result, as the Hub's ``model-index`` records it."""

    metric: str
    value: float
    dataset: str
    dataset_type: str
    split: str | None = None
    task: str | None = None


@dataclasses.dataclass(frozen=True)
class Plot:
    """A plot rendered to PNG: its title, file name and bytes."""

    title: str
    file: str
    png: bytes


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "plot"


def _task(model: Any) -> str | None:
    kind = getattr(model, "_estimator_type", None)
    if kind is None:
        from sklearn.base import is_classifier, is_regressor

        kind = "classifier" if is_classifier(model) else "regressor" if is_regressor(model) else None
    return {"classifier": "tabular-classification", "regressor": "tabular-regression"}.get(kind)


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    # A hyperparameter's value may come from a file: a card is read in terminals too, so controls show escaped.
    text = printable(text.replace("|", "\\|").replace("\n", " "))
    return f"`{text}`" if len(text) <= _WIDTH else f"`{text[: _WIDTH - 1]}…`"


def _png(figure: Any) -> bytes:
    backend = _require("matplotlib.backends.backend_agg")
    backend.FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    # No "Software" record: the bytes then depend on the pixels only.
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _figure(width: float = 6.4, height: float = 4.8) -> Any:
    return _require("matplotlib.figure").Figure(figsize=(width, height))


class Card:
    """A model card for a fitted model, rendered as a Hub ``README.md``.

    Every ``add*`` method returns the card, so calls chain.

    Parameters
    ----------
    model : estimator
        A fitted aprender or supported scikit-learn estimator.
    model_id : str, optional
        The model's name (the card's title and the ``model-index`` name); the
        class name by default.
    license : str, optional
        A license identifier as the Hub knows it (``"mit"``, ``"apache-2.0"`` ...).
    tags : sequence of str, optional
        Extra tags; ``aprender``, ``scikit-learn`` and the task are always there.
    datasets : sequence of str, optional
        Datasets the model was trained on (Hub dataset ids).
    description : str, optional
        What the model is; a one-line default names its class.
    intended_use : str, optional
        Intended uses and limitations.

    Examples
    --------
    >>> from aprender.card import Card
    >>> from aprender.linear_model import LinearRegression
    >>> card = Card(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), tags=["toy"])
    >>> card.metadata()["tags"]
    ['aprender', 'scikit-learn', 'tabular-regression', 'toy']
    """

    def __init__(
        self,
        model: Any,
        *,
        model_id: str | None = None,
        license: str | None = None,
        tags: Sequence[str] = (),
        datasets: Sequence[str] = (),
        description: str | None = None,
        intended_use: str | None = None,
    ) -> None:
        self.model = model
        self.state = to_state(model)  # checks it is fitted and storable
        self.model_id = model_id or type(model).__name__
        self.license = license
        self.tags = list(tags)
        self.datasets = list(datasets)
        self.description = description
        self.intended_use = intended_use
        self.sections: dict[str, str] = {}
        self.metrics: dict[str, float] = {}
        self.evaluations: list[Evaluation] = []
        self.plots: list[Plot] = []
        self.file: tuple[str, str] | None = None
        self.folder = False

    # -- additions -----------------------------------------------------------------

    def add(self, **sections: str) -> Card:
        """Add (or replace) sections: the keyword is the heading, the value Markdown.

        Examples
        --------
        >>> from aprender.card import Card
        >>> from aprender.linear_model import LinearRegression
        >>> card = Card(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
        >>> "## Caveats\\n\\nTwo points." in card.add(Caveats="Two points.").render()
        True
        """
        for heading, text in sections.items():
            if not isinstance(text, str):
                raise TypeError(f"section '{heading}' must be Markdown text, got {type(text).__name__}")
            self.sections[heading] = text
        return self

    def add_metrics(self, **metrics: float) -> Card:
        """Add metrics (name = value), listed in a table and in the front matter's ``metrics``."""
        for name, value in metrics.items():
            self.metrics[name] = float(value)
        return self

    def add_evaluation(self, metric: str, value: float, *, dataset: str, dataset_type: str | None = None,
                       split: str | None = None) -> Card:
        """Add an evaluation result on a named dataset (the Hub's ``model-index``).

        Parameters
        ----------
        metric : str
            Metric id, e.g. ``"accuracy"``.
        value : float
            Its value.
        dataset : str
            Dataset name.
        dataset_type : str, optional
            Hub dataset id; ``dataset`` by default.
        split : str, optional
            e.g. ``"test"``.
        """
        self.evaluations.append(Evaluation(metric, float(value), dataset, dataset_type or dataset, split,
                                           _task(self.model)))
        return self

    def add_plot(self, title: str, figure: Any) -> Card:
        """Attach a matplotlib ``Figure`` (rendered to PNG now) under ``title``."""
        self.plots = [p for p in self.plots if p.title != title]
        self.plots.append(Plot(title, f"{_slug(title)}.png", _png(figure)))
        return self

    def add_confusion_matrix(self, X: Any, y: Any, *, title: str = "Confusion matrix") -> Card:
        """Plot the classifier's confusion matrix on ``(X, y)`` (scikit-learn's display)."""
        from sklearn.base import is_classifier
        from sklearn.metrics import ConfusionMatrixDisplay

        if not is_classifier(self.model):
            raise TypeError(f"a confusion matrix needs a classifier; {type(self.model).__name__} is not one")
        figure = _figure()
        ConfusionMatrixDisplay.from_predictions(y, self.model.predict(X), ax=figure.add_subplot(), colorbar=False)
        return self.add_plot(title, figure)

    def add_feature_importances(self, *, title: str = "Feature importances", top: int = 20) -> Card:
        """Bar chart of ``feature_importances_`` (or of ``|coef_|`` summed over outputs), largest first."""
        if hasattr(self.model, "feature_importances_"):
            values = np.asarray(self.model.feature_importances_, dtype=np.float64)
        elif hasattr(self.model, "coef_"):
            coef = np.abs(np.asarray(self.model.coef_, dtype=np.float64))
            values = coef.reshape(-1, coef.shape[-1]).sum(axis=0)
        else:
            raise TypeError(f"{type(self.model).__name__} has neither feature_importances_ nor coef_")
        names = getattr(self.model, "feature_names_in_", None)
        names = [str(n) for n in names] if names is not None else [f"x{i}" for i in range(values.shape[0])]
        order = np.argsort(-values, kind="stable")[:top]
        figure = _figure(6.4, 0.3 * len(order) + 1.2)
        axes = figure.add_subplot()
        axes.barh([names[i] for i in order][::-1], values[order][::-1])
        axes.set_xlabel("importance")
        figure.tight_layout()
        return self.add_plot(title, figure)

    def for_file(self, path: PathLike, *, folder: bool = False) -> Card:
        """Describe the saved model file ``path`` (name, format and SHA-256) in the card.

        ``folder=True`` means a :func:`aprender.save_pretrained` folder: the load
        snippet then uses :func:`aprender.from_pretrained`.
        """
        from aprender.format._io import sha256_file

        p = Path(path)
        self.file, self.folder = (p.name, sha256_file(p)), folder
        return self

    # -- rendering -----------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The YAML front matter as a dict (Hub model-card metadata)."""
        task = _task(self.model)
        meta: dict[str, Any] = {"library_name": "aprender"}
        if self.license:
            meta["license"] = self.license
        base = ["aprender", "scikit-learn", *([task] if task else [])]
        meta["tags"] = base + [t for t in dict.fromkeys(self.tags) if t not in base]
        if self.datasets:
            meta["datasets"] = list(dict.fromkeys(self.datasets))
        metrics = list(dict.fromkeys([*self.metrics, *(e.metric for e in self.evaluations)]))
        if metrics:
            meta["metrics"] = metrics
        if task:
            meta["pipeline_tag"] = task
        if self.evaluations:
            meta["model-index"] = [{"name": self.model_id, "results": self._results()}]
        return meta

    def _results(self) -> list[dict[str, Any]]:
        grouped: dict[tuple[Any, ...], list[Evaluation]] = {}
        for e in self.evaluations:
            grouped.setdefault((e.task, e.dataset, e.dataset_type, e.split), []).append(e)
        results = []
        for (task, name, kind, split), evaluations in grouped.items():
            dataset = {"name": name, "type": kind, **({"split": split} if split else {})}
            results.append({
                "task": {"type": task or "tabular"},
                "dataset": dataset,
                "metrics": [{"type": e.metric, "value": e.value, "name": e.metric} for e in evaluations],
            })
        return results

    def _load_snippet(self) -> str:
        if self.folder:
            return "import aprender\n\nmodel = aprender.from_pretrained(\"path/to/folder\")"
        name = self.file[0] if self.file else "model.apr"
        fmt = by_suffix(name)
        if fmt is not None and not fmt.can.loads:  # the backend says its files are exports, not models
            loading = ", ".join(f.suffix for f in having("loads"))
            return (f"# {fmt.title} is an export: aprender writes it for another runtime and cannot load it back.\n"
                    f"# Run {name} there; keep a {loading} copy of the model to load it with aprender.load.")
        return f"import aprender\n\nmodel = aprender.load(\"{name}\")"

    def render(self) -> str:
        """The whole ``README.md``: front matter and Markdown body."""
        yaml = _require("yaml")
        state, model = self.state, self.model
        versions = state.meta.get("versions", {})
        body = [f"# {self.model_id}", self.description or (
            f"A fitted scikit-learn `{type(model).__name__}` (`{state.class_key}`), stored without pickle by "
            "[aprender](https://pypi.org/project/aprender/): loading it never runs code from the file.")]
        body += ["## Intended uses & limitations", self.intended_use or (
            "Not documented by the author. The model predicts for inputs like its training data "
            f"({getattr(model, 'n_features_in_', '?')} features); check the evaluation before relying on it.")]
        params = state.meta.get("model", {}).get("params", {})
        body += ["## Hyperparameters", "| Parameter | Value |\n|---|---|\n" + "\n".join(
            f"| `{k}` | {_cell(v)} |" for k, v in sorted(params.items()))]
        lines = [f"Saved with aprender {versions.get('aprender')}, scikit-learn {versions.get('sklearn')}, "
                 f"numpy {versions.get('numpy')}."]
        if self.file:
            name, digest = self.file
            fmt = by_suffix(name)
            kind = fmt.title if fmt is not None else Path(name).suffix
            lines.insert(0, f"| File | Format | SHA-256 |\n|---|---|---|\n| `{name}` | {kind} | `{digest}` |\n")
        body += ["## Model file", "\n".join(lines)]
        body += ["## How to load", f"```python\n{self._load_snippet()}\n```"]
        if self.metrics:
            body += ["## Metrics", "| Metric | Value |\n|---|---|\n" + "\n".join(
                f"| {k} | {v:.6g} |" for k, v in self.metrics.items())]
        if self.evaluations:
            body += ["## Evaluation results", "| Dataset | Split | Metric | Value |\n|---|---|---|---|\n" + "\n".join(
                f"| {e.dataset} | {e.split or ''} | {e.metric} | {e.value:.6g} |" for e in self.evaluations)]
        for heading, text in self.sections.items():
            body += [f"## {heading}", text.strip()]
        for plot in self.plots:
            body += [f"## {plot.title}", f"![{plot.title}]({plot.file})"]
        front = yaml.safe_dump(self.metadata(), sort_keys=False, allow_unicode=True, width=1000)
        return f"---\n{front}---\n\n" + "\n\n".join(body) + "\n"

    def save(self, path: PathLike) -> None:
        """Write the card to ``path`` (usually ``README.md``) and its plots beside it.

        Examples
        --------
        >>> import tempfile, os
        >>> from aprender.card import Card
        >>> from aprender.linear_model import LinearRegression
        >>> path = os.path.join(tempfile.mkdtemp(), "README.md")
        >>> Card(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])).save(path)
        >>> open(path).readline()
        '---\\n'
        """
        from aprender.format._io import write_atomic

        p = Path(path)
        for plot in self.plots:
            write_atomic(p.parent / plot.file, [plot.png])
        write_atomic(p, [self.render().encode("utf-8")])

