"""scikit-learn version differences, in one table, applied between decoding and construction.

A file records the scikit-learn version that saved it. When another version loads it,
every estimator node passes through :meth:`Plan.apply` after its hyperparameters and
fitted attributes are decoded and before they are checked and used to build the
estimator. Each :class:`Migration` names the scikit-learn change it follows and
carries up to two steps:

- ``forward``: the file was saved before that change and is loaded at or after it
  (a removed parameter is dropped, a renamed one moved, a new fitted attribute derived);
- ``backward``: the file was saved at or after the change and is loaded before it
  (a placeholder value the older version rejects becomes the value it stands for, a new
  parameter left at its default is dropped).

A step never guesses. When a stored value cannot be carried over with the same
outputs (a removed parameter set to a value the new version has no way to express, a
new parameter set away from its default), it raises :class:`IncompatibleVersion`,
which names the parameter and both versions. A file from a newer scikit-learn whose
hyperparameters the running version still rejects fails the same way, never with a
raw ``TypeError``. docs/compatibility.md lists the table.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from aprender.exceptions import IncompatibleVersion, UntrustedTypeError

__all__ = ["MIGRATIONS", "Migration", "Node", "Plan", "minor_version", "running_at_least"]


_VERSION = re.compile(r"^(\d{1,4})\.(\d{1,4})")


def minor_version(text: object) -> tuple[int, int] | None:
    """``"1.6.1"`` -> ``(1, 6)``; None for anything that is not a version string."""
    match = _VERSION.match(text) if isinstance(text, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def running_at_least(version: str) -> bool:
    """The running scikit-learn is ``version`` or newer: schemas require what it reads."""
    import sklearn

    return minor_version(sklearn.__version__) >= minor_version(version)


@dataclass
class Node:
    """One estimator node under migration: its decoded hyperparameters and fitted attributes."""

    cls: type
    params: dict[str, Any]
    attrs: dict[str, Any]
    path: str
    saved: str
    running: str

    def refuse(self, name: str, why: str) -> IncompatibleVersion:
        """The error for a stored value that cannot be carried between the two versions."""
        where = f"{self.cls.__name__}.{name}" + (f" at '{self.path}'" if self.path else "")
        return IncompatibleVersion(self.saved, self.running, f"{where}: {why}")


Step = Callable[[Node], None]


@dataclass(frozen=True)
class Migration:
    """One scikit-learn change and how a stored estimator crosses it.

    Parameters
    ----------
    names : tuple of str
        The scikit-learn classes the change is about, as ``"package.Class"`` under
        ``sklearn`` (``"linear_model.LogisticRegression"``); their subclasses (aprender's)
        too. Names, so that the table imports no estimator family.
    version : str
        The scikit-learn minor version that made the change, ``"1.8"``.
    change : str
        What changed, in scikit-learn's changelog terms, with its pull request.
    forward, backward : callable, optional
        The step for a file saved before ``version`` and loaded at or after it, and the
        step for the other direction. None: nothing to do in that direction.
    """

    names: tuple[str, ...]
    version: str
    change: str
    forward: Step | None = None
    backward: Step | None = None

    @property
    def minor(self) -> tuple[int, int]:
        minor = minor_version(self.version)
        assert minor is not None, self.version
        return minor

    @property
    def classes(self) -> tuple[type, ...]:
        """The classes :attr:`names` names (imports their packages)."""
        return tuple(getattr(importlib.import_module(f"sklearn.{package}"), name)
                     for package, name in (n.rsplit(".", 1) for n in self.names))

    def loaded_classes(self) -> tuple[type, ...]:
        """Those of :attr:`classes` whose package is imported: a class can derive from no other."""
        out = []
        for package, name in (n.rsplit(".", 1) for n in self.names):
            if f"sklearn.{package}" in sys.modules:
                # import_module waits for a package another thread is still running
                out.append(getattr(importlib.import_module(f"sklearn.{package}"), name))
        return tuple(out)


# -- step builders ------------------------------------------------------------------------

def drop_param(name: str, keep: Collection[Any] = ("deprecated",), *,
               sound: Callable[[Node, Any], bool] | None = None) -> Step:
    """Drop a parameter the newer version removed, when its stored value changes nothing there.

    ``keep`` lists the values (the default, the deprecation placeholder) whose behaviour
    is the newer version's only one; ``sound`` decides instead when that depends on
    the rest of the state. Any other value raises.
    """

    def step(node: Node) -> None:
        if name not in node.params:
            return
        value = node.params.pop(name)
        ok = sound(node, value) if sound is not None else _among(value, keep)
        if not ok:
            raise node.refuse(name, f"the stored value {value!r} has no equivalent: scikit-learn {node.running} "
                                    f"removed the parameter")

    return step


def rename_param(old: str, new: str, placeholder: Any = "deprecated") -> Step:
    """Move a renamed parameter's value to its new name (the placeholder is just dropped)."""

    def step(node: Node) -> None:
        if old not in node.params:
            return
        value = node.params.pop(old)
        if _among(value, (placeholder,)):
            return
        if node.params.get(new) is not None:
            raise node.refuse(old, f"both '{old}' and its new name '{new}' are set")
        node.params[new] = value

    return step


def replace_value(name: str, mapping: dict[Any, Any] | Callable[[Node], Any], placeholder: Any = "deprecated") -> Step:
    """Replace a placeholder value with the value it stands for in the target version."""

    def step(node: Node) -> None:
        if name in node.params and _among(node.params[name], (placeholder,)):
            node.params[name] = mapping(node) if callable(mapping) else mapping[placeholder]

    return step


def drop_new_param(name: str, defaults: Collection[Any]) -> Step:
    """Drop a parameter the older version does not have, when it is left at the older behaviour."""

    def step(node: Node) -> None:
        if name not in node.params:
            return
        value = node.params.pop(name)
        if not _among(value, defaults):
            raise node.refuse(name, f"the stored value {value!r} has no equivalent: scikit-learn {node.running} "
                                    f"does not have this parameter")

    return step


def steps(*parts: Step) -> Step:
    """Several steps in order."""

    def step(node: Node) -> None:
        for part in parts:
            part(node)

    return step


def _among(value: Any, values: Collection[Any]) -> bool:
    # `True == 1` and `1.0 == 1`: compare types too, so that a stored 1 is not taken for True
    return any(type(value) is type(v) and value == v for v in values)


# -- the special cases -------------------------------------------------------------------------

def _multi_class_sound(node: Node, value: Any) -> bool:
    """scikit-learn >= 1.8 predicts one-vs-rest for two classes and multinomial (softmax) otherwise."""
    classes = node.attrs.get("classes_")
    binary = classes is None or np.size(classes) <= 2
    if value in ("auto", "deprecated"):  # the old rule: one-vs-rest for two classes or liblinear
        ovr = binary or node.params.get("solver") == "liblinear"
    elif value in ("ovr", "multinomial"):
        ovr = value == "ovr"
    else:
        return False
    return ovr == binary


def _penalty_from_l1_ratio(node: Node) -> str:
    """The penalty a scikit-learn >= 1.8 model's ``l1_ratio`` stands for (``C=inf`` is no penalty in both)."""
    ratio = node.params.get("l1_ratio")
    if ratio in (None, 0, 0.0):
        return "l2"
    return "l1" if ratio in (1, 1.0) else "elasticnet"


def _effective_probability(node: Node) -> None:
    """Derive ``_effective_probability`` from the Platt arrays scikit-learn < 1.9 stores."""
    if "_probA" in node.attrs and "_effective_probability" not in node.attrs:
        node.attrs["_effective_probability"] = bool(np.size(node.attrs["_probA"]) > 0)


def _drop_effective_probability(node: Node) -> None:
    """scikit-learn < 1.9 reads ``probability`` where 1.9 reads the attribute; 'deprecated' there means False."""
    effective = node.attrs.pop("_effective_probability", False)
    stored = node.params.get("probability")
    if stored == "deprecated":
        node.params["probability"] = bool(effective)
    elif stored is not None and stored is not bool(effective):
        raise node.refuse("probability", f"the stored value {stored!r} disagrees with the fitted Platt parameters")


def _eta0(node: Node) -> None:
    """0.0, the old default, is now refused; learning_rate='optimal' never read it."""
    if _among(node.params.get("eta0"), (0.0, 0)):
        if node.params.get("learning_rate") != "optimal":
            raise node.refuse("eta0", "0.0 is no longer a valid learning rate")
        node.params["eta0"] = 0.01


def _fill_dtype(node: Node) -> None:
    """SimpleImputer's transform casts its statistics to ``_fill_dtype``, the dtype it was fitted on."""
    if "_fit_dtype" in node.attrs:
        node.attrs.setdefault("_fill_dtype", node.attrs["_fit_dtype"])


def _drop_attribute(name: str) -> Step:
    """Drop a fitted attribute that the older version neither reads nor has."""

    def step(node: Node) -> None:
        node.attrs.pop(name, None)

    return step


def _n_alphas(node: Node) -> None:
    """``n_alphas`` folded into ``alphas``: an int there is a number of alphas (scikit-learn 1.9)."""
    n_alphas = node.params.pop("n_alphas", "deprecated")
    if node.params.get("alphas") == "warn":
        node.params["alphas"] = 100
    if n_alphas == "deprecated":
        return
    if node.params.get("alphas") is None:
        node.params["alphas"] = n_alphas
    elif not (type(n_alphas) is int and n_alphas == 100):
        raise node.refuse("n_alphas", "both 'n_alphas' and an explicit 'alphas' grid are set")


_CV_PATHS = ("linear_model.ElasticNetCV", "linear_model.LassoCV", "linear_model.MultiTaskElasticNetCV",
             "linear_model.MultiTaskLassoCV")
_LOGISTIC = ("linear_model.LogisticRegression", "linear_model.LogisticRegressionCV")

#: Every scikit-learn change that aprender carries stored models across, oldest first.
MIGRATIONS: tuple[Migration, ...] = (
    # 1.7
    Migration(("linear_model.LinearRegression",), "1.7",
              "LinearRegression gained `tol` (1e-6, the precision its sparse lsqr solve always used)",
              backward=drop_new_param("tol", (1e-6,))),
    Migration(("neural_network.MLPRegressor",), "1.7",
              "MLPRegressor gained `loss`; 'squared_error' is the only loss before it",
              backward=drop_new_param("loss", ("squared_error",))),
    Migration(("linear_model.RidgeCV", "linear_model.RidgeClassifierCV"), "1.7",
              "`store_cv_values` removed; renamed `store_cv_results` (1.6 defaults to 'deprecated')",
              forward=rename_param("store_cv_values", "store_cv_results")),
    Migration(("manifold.TSNE",), "1.7",
              "TSNE's `n_iter` removed; renamed `max_iter`, whose None (1000 iterations) became 1000",
              forward=steps(rename_param("n_iter", "max_iter"), replace_value("max_iter", {None: 1000}, None))),
    Migration(("preprocessing.KBinsDiscretizer",), "1.7",
              "KBinsDiscretizer gained `quantile_method`; before it, quantiles were numpy's 'linear'",
              forward=lambda node: node.params.setdefault("quantile_method", "linear"),
              backward=drop_new_param("quantile_method", ("linear", "warn"))),
    Migration(("compose.ColumnTransformer",), "1.7",
              "`force_int_remainder_cols` deprecated; its default became 'deprecated', which behaves as False",
              backward=replace_value("force_int_remainder_cols", {"deprecated": False})),
    # 1.8
    Migration(_LOGISTIC, "1.8",
              "`multi_class` removed: two classes are one-vs-rest, more are multinomial (1.6 defaults to 'deprecated')",
              forward=drop_param("multi_class", sound=_multi_class_sound)),
    Migration(_LOGISTIC, "1.8",
              "`penalty` deprecated for `l1_ratio` (0: l2, 1: l1); its default became 'deprecated'",
              backward=replace_value("penalty", _penalty_from_l1_ratio)),
    Migration(("ensemble.AdaBoostClassifier",), "1.8",
              "`algorithm` removed; 'SAMME' is the only algorithm since 'SAMME.R' went in 1.6",
              forward=drop_param("algorithm", ("deprecated", "SAMME"))),
    Migration(("cluster.Birch",), "1.8", "Birch's `copy` removed (1.6 defaults to 'deprecated')",
              forward=drop_param("copy")),
    Migration(("linear_model.TheilSenRegressor",), "1.8", "TheilSenRegressor's `copy_X` removed (1.6 defaults to "
              "'deprecated')", forward=drop_param("copy_X")),
    Migration(("semi_supervised.SelfTrainingClassifier",), "1.8",
              "`base_estimator` removed; renamed `estimator` (1.6 defaults to 'deprecated')",
              forward=rename_param("base_estimator", "estimator")),
    Migration(("linear_model.SGDClassifier", "linear_model.SGDOneClassSVM"), "1.8",
              "`eta0` must be > 0 and defaults to 0.01 (before: 0.0, unused by learning_rate='optimal')",
              forward=_eta0),
    Migration(("impute.SimpleImputer",), "1.8",
              "SimpleImputer keeps `_fill_dtype`, the dtype of the data it was fitted on, and casts its "
              "statistics to it; that dtype is `_fit_dtype`",
              forward=_fill_dtype, backward=_drop_attribute("_fill_dtype")),
    Migration(("preprocessing.MaxAbsScaler",), "1.8", "MaxAbsScaler gained `clip` (False: no clipping)",
              backward=drop_new_param("clip", (False,))),
    Migration(("preprocessing.SplineTransformer",), "1.8",
              "SplineTransformer gained `handle_missing` ('error' as before)",
              backward=drop_new_param("handle_missing", ("error",))),
    Migration(("discriminant_analysis.QuadraticDiscriminantAnalysis",), "1.8",
              "QuadraticDiscriminantAnalysis gained `solver`, `shrinkage`, `covariance_estimator`",
              backward=steps(drop_new_param("solver", ("svd",)), drop_new_param("shrinkage", (None,)),
                             drop_new_param("covariance_estimator", (None,)))),
    # 1.9
    Migration(("compose.ColumnTransformer",), "1.9",
              "`force_int_remainder_cols` removed (deprecated in 1.7); it only chose how the remainder's "
              "columns are listed in `transformers_`, never the output, so every value carries over",
              forward=drop_param("force_int_remainder_cols", (True, False, "deprecated"))),
    Migration(("ensemble.GradientBoostingClassifier", "ensemble.GradientBoostingRegressor"), "1.9",
              "`criterion` deprecated, with no effect: trees always split on squared error; its default became "
              "'deprecated'",
              backward=replace_value("criterion", {"deprecated": "friedman_mse"})),
    Migration(("svm.SVC", "svm.NuSVC", "svm.SVR", "svm.NuSVR", "svm.OneClassSVM"), "1.9",
              "libsvm models keep `_effective_probability`, the Platt scaling they were fitted with, beside "
              "`probability`, deprecated with 'deprecated' as its default",
              forward=_effective_probability, backward=_drop_effective_probability),
    Migration(_CV_PATHS, "1.9", "`n_alphas` removed: an int `alphas` is the number of alphas (deprecated in 1.7)",
              forward=_n_alphas),
    Migration(("multioutput.ClassifierChain", "multioutput.RegressorChain"), "1.9",
              "`base_estimator` removed; renamed `estimator` in 1.7",
              forward=rename_param("base_estimator", "estimator")),
    Migration(("preprocessing.TargetEncoder",), "1.9",
              "TargetEncoder's `shuffle` and `random_state` deprecated, with 'deprecated' as default",
              backward=steps(replace_value("shuffle", {"deprecated": True}),
                             replace_value("random_state", {"deprecated": None}))),
)


class Plan:
    """The migrations between the scikit-learn version that saved a file and the running one.

    Examples
    --------
    >>> from aprender.codec._migrations import Plan
    >>> plan = Plan("1.7.2", "1.9.1")
    >>> plan.apply(__import__("sklearn.compose").compose.ColumnTransformer,
    ...            {"force_int_remainder_cols": "deprecated", "remainder": "drop"}, {}, "")
    True
    """

    def __init__(self, saved: object, running: str) -> None:
        self.saved = str(saved)[:40] if saved is not None else "unknown"
        self.running = running
        old, new = minor_version(saved), minor_version(running)
        self.newer_file = old is not None and new is not None and old > new
        self.crosses = old is not None and new is not None and old != new
        self.steps: list[tuple[Migration, Step]] = []
        if old is None or new is None or old == new:
            return
        for m in MIGRATIONS:
            if old < m.minor <= new and m.forward is not None:
                self.steps.append((m, m.forward))
            elif new < m.minor <= old and m.backward is not None:
                self.steps.append((m, m.backward))
        if self.newer_file:  # undo the newest change first
            self.steps.reverse()

    def apply(self, cls: type, params: dict[str, Any], attrs: dict[str, Any], path: str) -> bool:
        """Migrate one estimator node in place; True when a step applied to its class."""
        node = Node(cls, params, attrs, path, self.saved, self.running)
        applied = False
        for migration, step in self.steps:
            if issubclass(cls, migration.loaded_classes()):
                step(node)
                applied = True
        return applied

    def entry(self, key: object, path: str) -> Any:
        """The registry entry for a class key read from the file.

        A class that aprender allows but the running scikit-learn does not have (added
        after it, or removed since) raises :class:`IncompatibleVersion` naming both versions.
        """
        from aprender.codec._registry import entry_for_key, is_builtin_key

        try:
            return entry_for_key(key, path)
        except UntrustedTypeError:
            if self.crosses and is_builtin_key(key):
                raise IncompatibleVersion(self.saved, self.running,
                                          f"class {key} at '{path}' does not exist in this scikit-learn") from None
            raise

    def rejected(self, key: str, path: str, exc: Exception) -> IncompatibleVersion | None:
        """The error for another version's hyperparameters that the running scikit-learn rejects.

        A change the table does not know yet (or a newer file's new parameter) ends here:
        the message names both versions instead of a bare ``TypeError`` from ``__init__``.
        """
        if not self.crosses:
            return None
        where = f"{key}" + (f" at '{path}'" if path else "")
        return IncompatibleVersion(self.saved, self.running,
                                   f"{where}: this scikit-learn rejects the stored hyperparameters "
                                   f"({type(exc).__name__}: {str(exc)[:200]})")
