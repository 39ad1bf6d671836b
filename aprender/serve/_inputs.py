"""What a served model takes as input, derived from its fitted state, and requests turned into it.

Three kinds of model:

- **matrix**: a numeric feature matrix of ``n_features_in_`` columns (a numpy array). When the
  model was fitted on a DataFrame of numbers, its columns are also named (``feature_names_in_``)
  and may be sent one by one.
- **frame**: a DataFrame pipeline whose columns are strings as well as numbers (a
  ``ColumnTransformer`` selecting columns by name, encoders of string categories,
  HistGradientBoosting with categorical columns). Requests name the columns, which become a
  :class:`Frame` (strings as ``object`` arrays, numbers as ``float64``); the model gets one
  ``pandas.DataFrame`` in the fitted column order per call, for all the requests batched in it.
- **text**: a pipeline that starts with a text vectorizer; its input is one string per row.

A column's type comes from what first reads it: a string column is one whose imputer statistics
or encoder categories are strings, or that a text vectorizer reads. ``null`` is a missing value
everywhere: NaN in a number column, NaN in a string column (what pandas gives scikit-learn for a
missing string, and what its imputers and encoders treat as missing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aprender.serve._errors import HTTPError

__all__ = ["Column", "Frame", "Inputs", "describe_inputs", "known_strings", "rows_of"]

#: The v2 datatype of each column kind.
BYTES, FP64 = "BYTES", "FP64"
_TEXT_VECTORIZERS = ("CountVectorizer", "TfidfVectorizer", "HashingVectorizer")
_ENCODERS = ("OneHotEncoder", "OrdinalEncoder", "TargetEncoder")


@dataclass(frozen=True)
class Column:
    """One named input column and its v2 datatype (``BYTES`` for strings, ``FP64`` for numbers).

    ``read`` is False for a column the model was fitted with but drops (a ColumnTransformer's
    ``"drop"``, or its dropped remainder): nothing records what it held, so any value is taken
    (advertised as ``BYTES``, the most general), and it may be left out of a request.
    """

    name: str
    datatype: str
    read: bool = True
    #: A column the model reads as a pandas ``category`` of these categories (LightGBM fitted on one).
    categories: tuple[Any, ...] | None = None


class Frame:
    """A frame model's input: named columns (1-D arrays of equal length), turned into one
    ``pandas.DataFrame`` only when the model is called, so that a batch of requests builds one
    DataFrame, not one per request and a concatenation.

    ``bounds`` holds the number of rows of each request merged into it, in order.

    Examples
    --------
    >>> a = Frame({"x": np.array([1.0, 2.0])}, ("x",))
    >>> both = Frame.concat([a, Frame({"x": np.array([3.0])}, ("x",))])
    >>> len(both), both.bounds, both.frame()["x"].tolist()
    (3, (2, 1), [1.0, 2.0, 3.0])
    """

    __slots__ = ("bounds", "categories", "columns", "names")

    def __init__(self, columns: Mapping[str, np.ndarray], names: tuple[str, ...],
                 bounds: tuple[int, ...] | None = None,
                 categories: Mapping[str, tuple[Any, ...] | None] | None = None) -> None:
        self.columns = columns
        self.names = names
        self.bounds = bounds if bounds is not None else (len(columns[names[0]]),)
        self.categories = categories or {}

    def __len__(self) -> int:
        return sum(self.bounds)

    def kind(self) -> tuple[Any, ...]:
        """What must agree for two frames to go in one call: column names and dtypes."""
        return tuple((name, self.columns[name].dtype) for name in self.names)

    def frame(self) -> Any:
        """The ``pandas.DataFrame``, columns in fitted order."""
        import pandas as pd

        frame = pd.DataFrame(self.columns, columns=list(self.names))
        for name, categories in self.categories.items():  # an unknown value becomes a missing one
            frame[name] = pd.Categorical(frame[name], categories=list(categories))
        return frame

    @classmethod
    def concat(cls, parts: Sequence[Frame]) -> Frame:
        """The rows of ``parts`` one after another; ``bounds`` keeps each request's rows."""
        names = parts[0].names
        return cls({name: np.concatenate([p.columns[name] for p in parts]) for name in names}, names,
                   tuple(n for p in parts for n in p.bounds), parts[0].categories)


def rows_of(X: Any) -> int:
    """The number of rows of a model input (array, DataFrame or 1-D documents)."""
    return len(X)


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


@dataclass(frozen=True)
class Inputs:
    """The input a served model takes, and the conversions of request values into it.

    Parameters
    ----------
    kind : {"matrix", "frame", "text"}
        See the module docstring.
    n_features : int
        Columns of the matrix or frame (1 for text).
    columns : tuple of Column
        The named columns, in fitted order (empty for an unnamed matrix; one ``BYTES`` column
        named ``text`` for a text model).
    """

    kind: str
    n_features: int
    columns: tuple[Column, ...] = ()

    # -- what the protocols report -------------------------------------------------------

    def metadata(self) -> list[dict[str, Any]]:
        """The v2 ``inputs`` of the model metadata."""
        if self.kind == "matrix" and not self.columns:
            return [{"name": "input-0", "datatype": FP64, "shape": [-1, self.n_features]}]
        return [{"name": c.name, "datatype": c.datatype, "shape": [-1]} for c in self.columns]

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in fitted order."""
        return tuple(c.name for c in self.columns)

    # -- requests into model inputs ------------------------------------------------------

    def one_row(self, value: Any) -> bool:
        """Whether a JSON value that :meth:`rows` accepted is one row (answered with one prediction)."""
        if self.kind == "text":
            return isinstance(value, str)
        return isinstance(value, dict) or (isinstance(value, list) and bool(value)
                                           and not isinstance(value[0], (list, dict)))

    def rows(self, value: Any, what: str = "features") -> Any:
        """JSON rows: one row or a list of rows, each a list in column order or an object by column name."""
        if isinstance(value, dict):
            value = [value]
        if self.kind == "text":
            docs = [value] if isinstance(value, str) else value
            return self.from_columns({"text": docs}, what)
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            return self.records(value, what)
        if self.kind == "matrix":
            return matrix(value, self.n_features, what)
        if not isinstance(value, list) or not value:
            raise HTTPError(400, f"{what} must be a row or a non-empty list of rows")
        table = [value] if not isinstance(value[0], list) else value
        for i, row in enumerate(table):
            if not isinstance(row, list) or len(row) != self.n_features:
                raise HTTPError(400, f"{what} row {i} must be a list of {self.n_features} values in the order "
                                     f"{', '.join(self.names)} (or an object keyed by column name)")
        return self.from_columns({c.name: [row[j] for row in table] for j, c in enumerate(self.columns)}, what)

    def records(self, records: Sequence[Any], what: str = "records") -> Any:
        """A list of objects keyed by column name."""
        if not records:
            raise HTTPError(400, f"{what} has no rows")
        if self.kind == "matrix" and not self.columns:
            raise HTTPError(400, f"{what}: this model's columns have no names (it was not fitted on a DataFrame); "
                                 f"send rows of {self.n_features} numbers")
        names = set(self.names)
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise HTTPError(400, f"{what} row {i} must be an object keyed by column name")
            unknown = set(record) - names
            if unknown:
                raise HTTPError(400, f"{what} row {i} has unknown column {sorted(unknown)[0]!r}; "
                                     f"the model's columns are {', '.join(self.names)}")
        return self.from_columns({c.name: [r.get(c.name) for r in records] for c in self.columns}, what)

    def from_columns(self, values: Mapping[str, Sequence[Any] | np.ndarray], what: str = "inputs") -> Any:
        """Columns by name (each a list or a 1-D array, equally long): the model's input (a
        :class:`Frame` for a frame model).

        A missing column is refused, except a string column, which is then all missing.
        """
        unknown = set(values) - set(self.names)
        if unknown:
            raise HTTPError(400, f"{what}: unknown column {sorted(unknown)[0]!r}; the model's columns are "
                                 f"{', '.join(self.names)}")
        lengths = {len(v) for v in values.values()}
        if len(lengths) != 1:
            raise HTTPError(400, f"{what}: columns of different lengths {sorted(lengths)}")
        n = lengths.pop()
        if n == 0:
            raise HTTPError(400, f"{what} has no rows")
        arrays = {}
        for column in self.columns:
            raw = values.get(column.name)
            if raw is None:
                if column.datatype != BYTES and column.read:
                    raise HTTPError(400, f"{what}: column {column.name!r} is missing")
                raw = [None] * n
            arrays[column.name] = _column(raw, column, what)
        if self.kind == "text":
            return arrays["text"]
        if self.kind == "matrix":
            return np.column_stack([arrays[c.name] for c in self.columns])
        return Frame(arrays, self.names, categories={c.name: c.categories for c in self.columns if c.categories})

    def warm(self) -> Any:
        """One row of valid input (zeros, empty strings) to warm the model up with."""
        if self.kind == "matrix":
            return np.zeros((1, self.n_features))
        return self.from_columns({c.name: [0.0 if c.datatype != BYTES else ""] for c in self.columns}, "warm-up")

    def probe(self, strings: Mapping[str, Sequence[str]], bounds: tuple[int, ...] = (1, 3, 2)) -> Frame:
        """Requests of a frame model merged (``bounds``): numbers of several magnitudes and signs, and
        the strings each column is known to take (``strings``, else ``""``)."""
        n = sum(bounds)
        rng = np.random.default_rng(0)
        columns: dict[str, list[Any]] = {}
        for column in self.columns:
            if column.datatype == BYTES:
                known = list(strings.get(column.name) or [""])
                columns[column.name] = [known[i % len(known)] for i in range(n)]
            else:
                columns[column.name] = (rng.standard_normal(n) * 10.0 ** rng.integers(-2, 4, n)).tolist()
        frame = self.from_columns(columns, "probe")
        return Frame(frame.columns, frame.names, bounds, frame.categories)


def _as_sent(raw: Sequence[Any] | np.ndarray) -> np.ndarray:
    """A column the model drops: kept as sent, never converted (null as NaN)."""
    values = raw.ravel().tolist() if isinstance(raw, np.ndarray) else raw
    out = np.empty(len(values), dtype=object)
    out[:] = [np.nan if v is None else v for v in values]
    return out


def _string(value: Any, column: Column, what: str) -> Any:
    """One value of a string column: a string (bytes decoded), or NaN for null."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return np.nan
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise HTTPError(400, f"{what}: column {column.name!r} holds strings (or null), got {value!r}")


def _strings(values: Sequence[Any], column: Column, what: str) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = _string(v, column, what)
    return out


def _numbers(values: Sequence[Any], column: Column, what: str) -> np.ndarray:
    if not all(_is_number(v) for v in values):
        bad = next(v for v in values if not _is_number(v))
        raise HTTPError(400, f"{what}: column {column.name!r} holds numbers (or null), got {str(bad)[:40]!r}")
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _column(raw: Sequence[Any] | np.ndarray, column: Column, what: str) -> np.ndarray:
    if not column.read:
        return _as_sent(raw)
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "biuf":
        if column.datatype == BYTES:
            raise HTTPError(400, f"{what}: column {column.name!r} holds strings, got {raw.dtype} numbers")
        return raw.astype(np.float64).ravel()
    values = list(raw.ravel()) if isinstance(raw, np.ndarray) else raw
    return (_strings if column.datatype == BYTES else _numbers)(values, column, what)


def matrix(value: Any, n_features: int, what: str = "features") -> np.ndarray:
    """A JSON value (one row or a list of rows of numbers) as a 2-D float64 array; 400 otherwise.

    ``null`` is read as NaN (a missing value). Strings, booleans, ragged rows and a wrong number
    of features are refused.

    Examples
    --------
    >>> matrix([1, 2.5, None], 3).tolist()
    [[1.0, 2.5, nan]]
    """
    try:
        raw = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise HTTPError(400, f"{what} must be a list of numbers or of equal-length rows: {exc}") from None
    if raw.dtype.kind == "O":
        if not all(_is_number(v) for v in raw.flat):
            raise HTTPError(400, f"{what} must hold only numbers (or null for a missing value)")
    elif raw.dtype.kind not in "biuf":
        raise HTTPError(400, f"{what} must hold numbers, got {'strings' if raw.dtype.kind == 'U' else raw.dtype}")
    return check_rows(np.asarray(raw, dtype=np.float64), n_features, what)


def check_rows(X: np.ndarray, n_features: int, what: str = "features") -> np.ndarray:
    """``X`` as 2-D rows of ``n_features`` (one row may come 1-D); 400 otherwise."""
    if X.ndim not in (1, 2):
        raise HTTPError(400, f"{what} must be one row or a list of rows, got {X.ndim} dimensions")
    if X.shape[0] == 0:
        raise HTTPError(400, f"{what} has no rows")
    if X.ndim == 1:
        X = X.reshape(1, -1)
    if X.shape[1] != n_features:
        raise HTTPError(400, f"{what} has {X.shape[1]} features per row; the model expects {n_features}")
    return X


# -- deriving the inputs from the fitted model ---------------------------------------------


def _first_step(estimator: Any) -> Any:
    while hasattr(estimator, "steps") and estimator.steps:
        estimator = estimator.steps[0][1]
    return estimator


def _last_step(estimator: Any) -> Any:
    return estimator.steps[-1][1] if hasattr(estimator, "steps") and estimator.steps else estimator


def _string_columns(transformer: Any, n: int) -> list[bool]:
    """Which of the ``n`` columns ``transformer`` (or the first steps of its pipeline) reads as strings."""
    steps = [s for _, s in transformer.steps] if hasattr(transformer, "steps") else [transformer]
    for step in steps:
        name = type(step).__name__
        if name in _TEXT_VECTORIZERS:
            return [True] * n
        if name in _ENCODERS and hasattr(step, "categories_"):
            return [np.asarray(c).dtype.kind in "OUS" for c in step.categories_]
        stats = getattr(step, "statistics_", None)
        if name == "SimpleImputer" and isinstance(stats, np.ndarray):
            return [stats.dtype.kind in "OUS"] * n
        if name not in ("FunctionTransformer", "MissingIndicator"):
            break  # a numeric step: what it reads are numbers
    return [False] * n


def pandas_categories(estimator: Any) -> dict[int, list[Any]]:
    """The categories of each pandas ``category`` column LightGBM was fitted on, by column index.

    The booster keeps them (``pandas_categorical``) in the order of its categorical features,
    which are the features whose ``feature_infos`` list values.
    """
    booster = getattr(_first_step(estimator), "_Booster", None)
    categories = getattr(booster, "pandas_categorical", None)
    if not categories or not hasattr(booster, "dump_model"):
        return {}
    infos = booster.dump_model(num_iteration=1).get("feature_infos", {})
    categorical = [i for i, info in enumerate(infos.values()) if isinstance(info, dict) and info.get("values")]
    return dict(zip(categorical, categories, strict=True)) if len(categorical) == len(categories) else {}


def known_strings(estimator: Any) -> dict[int, list[str]]:
    """The string categories each column's encoder was fitted on, by column index (for probes)."""
    native = {i: [c for c in cats if isinstance(c, str)] for i, cats in pandas_categories(estimator).items()}
    if native:
        return {i: strings for i, strings in native.items() if strings}
    transformer = _column_transformer(estimator)
    if transformer is None:
        return {}
    fitted = dict((name, t) for name, t, _ in transformer.transformers_)
    out: dict[int, list[str]] = {}
    for name, indices in transformer._transformer_to_input_indices.items():
        part = fitted.get(name)
        steps = [s for _, s in part.steps] if hasattr(part, "steps") else [part]
        encoder = next((s for s in steps if hasattr(s, "categories_")), None)
        if encoder is None or len(encoder.categories_) != len(indices):
            continue
        for i, categories in zip(indices, encoder.categories_, strict=True):
            strings = [c for c in np.asarray(categories, dtype=object).tolist() if isinstance(c, str)]
            if strings:
                out[int(i)] = strings
    return out


def _catboost_categorical(estimator: Any) -> set[str]:
    """The names of the categorical features of the CatBoost model that ends ``estimator``: CatBoost reads
    them as strings and encodes them itself, so a column passed on to one unchanged is a string column."""
    last = _last_step(estimator)
    if not (hasattr(last, "get_cat_feature_indices") and getattr(last, "is_fitted", lambda: False)()):
        return set()
    names = last.feature_names_ or []
    return {str(names[i]) for i in last.get_cat_feature_indices() if i < len(names)}


def _column_transformer(estimator: Any) -> Any:
    first = _first_step(estimator)
    if hasattr(first, "_transformer_to_input_indices") and hasattr(first, "transformers_"):
        return first
    preprocessor = getattr(first, "_preprocessor", None)  # HistGradientBoosting's categorical encoder
    if preprocessor is not None and hasattr(preprocessor, "_transformer_to_input_indices"):
        return preprocessor
    return None


def _feature_names(estimator: Any, first: Any, alone: bool, catboost: set[str], n: int) -> Any:
    """The string names of the ``n`` features the estimator was fitted on, or None."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None and alone and catboost:  # CatBoost names its features feature_names_
        names = first.feature_names_
    if names is None or len(names) != n or not all(isinstance(s, str) for s in names):
        return None
    return names


def _names_columns(columns: Any) -> bool:
    """Whether a ColumnTransformer's column selection picks columns by name."""
    return bool(isinstance(columns, str) or callable(columns)
                or (isinstance(columns, list) and columns and isinstance(columns[0], str)))


def _is_passthrough(part: Any) -> bool:
    # scikit-learn fits "passthrough" as an identity FunctionTransformer.
    return part == "passthrough" or (type(part).__name__ == "FunctionTransformer" and part.func is None)


def _read_part(part: Any, prefix: str, indices: Any, names: Any, catboost: set[str], strings: list[bool]) -> None:
    """Mark in ``strings`` which of the columns at ``indices`` the fitted transformer ``part`` reads as strings."""
    if _is_passthrough(part):  # a column passed on keeps its name, or takes the transformer's prefix
        for i in indices:
            strings[int(i)] = bool({str(names[i]), f"{prefix}__{names[i]}"} & catboost)
        return
    if part is None or isinstance(part, str) or not len(indices):
        return
    for i, is_string in zip(indices, _string_columns(part, len(indices)), strict=True):
        strings[int(i)] = is_string


def _read_transformer(transformer: Any, names: Any, catboost: set[str], strings: list[bool]) -> set[int]:
    """Mark the string columns of a ColumnTransformer's parts in ``strings``; the columns it drops."""
    fitted = dict((name, t) for name, t, _ in transformer.transformers_)
    dropped: set[int] = set()
    for name, indices in transformer._transformer_to_input_indices.items():
        part = fitted.get(name)
        if isinstance(part, str) and part == "drop":
            dropped.update(int(i) for i in indices)
        _read_part(part, name, indices, names, catboost, strings)
    return dropped


def _columns(names: Any, strings: list[bool], dropped: set[int], native: dict[int, list[Any]]) -> tuple[Column, ...]:
    return tuple(Column(str(s), BYTES, read=False) if i in dropped else
                 Column(str(s), BYTES if strings[i] else FP64, categories=tuple(native[i]) if i in native else None)
                 for i, s in enumerate(names))


def describe_inputs(estimator: Any) -> Inputs | None:
    """The :class:`Inputs` of a fitted estimator, or None when it takes none of them.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> describe_inputs(LinearRegression().fit([[0.0, 1.0], [1.0, 0.0]], [1.0, 2.0]))
    Inputs(kind='matrix', n_features=2, columns=())
    """
    first = _first_step(estimator)
    if type(first).__name__ in _TEXT_VECTORIZERS and getattr(first, "input", "content") == "content":
        return Inputs("text", 1, (Column("text", BYTES),))
    n = getattr(estimator, "n_features_in_", None)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        return None
    catboost = _catboost_categorical(estimator)
    alone = first is _last_step(estimator)
    names = _feature_names(estimator, first, alone, catboost, n)
    if names is None:
        return Inputs("matrix", int(n))
    # CatBoost reading the request's columns itself reads its categorical features as strings.
    strings = [alone and str(s) in catboost for s in names]
    dropped: set[int] = set()
    by_name = False
    transformer = _column_transformer(estimator)
    if transformer is not None:
        by_name = any(_names_columns(c) for _, _, c in getattr(transformer, "transformers", ()))
        dropped = _read_transformer(transformer, names, catboost, strings)
    native = pandas_categories(estimator)
    for i, categories in native.items():
        strings[i] = any(isinstance(c, str) for c in categories)
    return Inputs("frame" if any(strings) or by_name or native else "matrix", int(n),
                  _columns(names, strings, dropped, native))
