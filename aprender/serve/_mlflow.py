"""MLflow's scoring protocol: ``POST /invocations``, ``GET /ping``, ``GET /version``.

A client of ``mlflow models serve`` switches servers without a change: the JSON body holds
exactly one of ``dataframe_split`` (``{"columns": [...], "data": [[...]]}``),
``dataframe_records`` (``[{"column": value}, ...]``), ``instances`` or ``inputs`` (rows, or an
object of columns), and may hold ``params``, which are ignored; a ``text/csv`` body is a table
with a header row. The answer is ``{"predictions": [...]}``. MLflow serves one model: so does
this route when one is served; with several, ``?model=NAME`` (or ``NAME:VERSION``) names it.
"""

from __future__ import annotations

import io
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aprender import __version__
from aprender.serve._http import HTTPError, json_object, json_response, read_body, registry_of
from aprender.serve._inputs import Inputs

__all__ = ["routes"]

def _dataframe_split(value: Any, key: str, inputs: Inputs) -> Any:
    """``{"columns": [...], "data": [[...], ...]}``; rows by position when ``columns`` is missing."""
    if not isinstance(value, dict) or not isinstance(value.get("data"), list):
        raise HTTPError(400, "'dataframe_split' must be {\"columns\": [...], \"data\": [[...], ...]}")
    columns, data = value.get("columns"), value["data"]
    if columns is None:
        return inputs.rows(data, key)
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise HTTPError(400, "'dataframe_split': 'columns' must be a list of column names (strings)")
    if not all(isinstance(row, list) and len(row) == len(columns) for row in data):
        raise HTTPError(400, "'dataframe_split': every row of 'data' must have one value per column")
    return inputs.records([dict(zip(columns, row, strict=True)) for row in data], key)


def _dataframe_records(value: Any, key: str, inputs: Inputs) -> Any:
    """``[{"column": value}, ...]``."""
    if not isinstance(value, list):
        raise HTTPError(400, "'dataframe_records' must be a list of objects")
    return inputs.records(value, key)


def _rows_or_columns(value: Any, key: str, inputs: Inputs) -> Any:
    """Rows, or ``{"column": [values...]}``."""
    if isinstance(value, dict):
        if not all(isinstance(v, list) for v in value.values()):
            raise HTTPError(400, f"'{key}' as an object must map each column to a list of values")
        return inputs.from_columns(value, key)
    return inputs.rows(value, key)


#: The keys of which a JSON body holds exactly one, each with the reader of its value.
_READERS = {"dataframe_split": _dataframe_split, "dataframe_records": _dataframe_records,
            "instances": _rows_or_columns, "inputs": _rows_or_columns}
_KEYS = tuple(_READERS)


def _from_json(body: dict[str, Any], inputs: Inputs) -> Any:
    given = [k for k in _KEYS if k in body]
    if len(given) != 1:
        raise HTTPError(400, f"the body must hold exactly one of {', '.join(_KEYS)}; found "
                             f"{', '.join(given) or 'none'}")
    key = given[0]
    return _READERS[key](body[key], key, inputs)


def _from_csv(body: bytes, inputs: Inputs) -> Any:
    import pandas as pd

    try:
        table = pd.read_csv(io.BytesIO(body))
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPError(400, f"the CSV body cannot be read: {exc}") from None
    if inputs.kind == "matrix" and not inputs.columns:
        try:
            rows = table.to_numpy(dtype=float, na_value=None).tolist()
        except (ValueError, TypeError) as exc:  # a cell that is not a number
            raise HTTPError(400, f"the CSV body: {exc}") from None
        return inputs.rows(rows, "the CSV body")
    return inputs.from_columns({str(c): table[c].tolist() for c in table.columns}, "the CSV body")


async def invocations(request: Request) -> Response:
    registry = registry_of(request)
    version = registry.resolve_id(request.query_params.get("model"))
    model = await registry.get(version)
    body = await read_body(request)
    kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if kind == "text/csv":
        X = _from_csv(body, model.inputs)
    elif kind in ("application/json", ""):
        X = _from_json(json_object(body), model.inputs)
    else:
        raise HTTPError(415, f"content type {kind!r} is not supported; send application/json or text/csv")
    _, out = await registry.infer(version, X, ("predict",), model)
    return json_response({"predictions": out["predict"]})


async def ping(request: Request) -> Response:
    return Response("\n", media_type="application/json")


async def version(request: Request) -> Response:
    return Response(f"aprender {__version__}", media_type="text/plain")


routes = [
    Route("/invocations", invocations, methods=["POST"]),
    Route("/ping", ping, methods=["GET"]),
    Route("/version", version, methods=["GET"]),
]
