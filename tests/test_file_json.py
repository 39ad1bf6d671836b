"""JSON a file supplies is parsed by one reader with the metadata's rules (aprender/codec/_state.py:parse_json).

A model folder's ``config.json`` and an ONNX model's ``aprender.*`` properties were parsed
with ``json.loads``: a 400 KB ``config.json`` of nested brackets made ``from_pretrained`` raise
``RecursionError`` (no ``AprenderError``), and a property nested as deep escaped the
``ValueError`` that ``read_props`` expects. Every parse of JSON in the package is either
``parse_json`` or listed below with the reason its input is not a file's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import aprender
from aprender.exceptions import FormatError
from aprender.format.onnx._props import read_props
from aprender.preprocessing import StandardScaler

PACKAGE = Path(aprender.__file__).parent
DEEP = "[" * 200_000 + "]" * 200_000

#: Modules that parse JSON themselves, and why what they parse is no file's.
OWN_INPUT = {
    "codec/_state.py": "parse_json itself",
    "_display.py": "a doctest reading back json_printable's own output",
    "codec/schemas/xgboost_models.py": "XGBoost's save_config of a booster rebuilt from checked arrays",
    "codec/handlers/xgboost_booster.py": "a fitted booster's own JSON dump, at save",
    "codec/handlers/lightgbm_booster.py": "a fitted booster's own model string, at save",
    "codec/handlers/_catboost_categorical.py": "a fitted CatBoost model's own JSON dump, at save",
    "codec/handlers/catboost_booster.py": "a fitted CatBoost model's own JSON dump, at save",
    "codec/handlers/_booster_json.py": "the parser of those dumps",
    "format/onnx/_boosters.py": "a loaded booster's own JSON dump",
    "format/onnx/_dtype_choice.py": "the parity record aprender wrote into the graph it is exporting",
    "serve/_tensors.py": "request bodies, by orjson (which refuses nesting past 1024 levels) in the parser process",
    "serve/_errors.py": "request bodies, by orjson",
    "serve/_app.py": "request bodies, by orjson",
    "serve/_repository.py": "a served folder's settings file, by orjson (depth-limited), refused as a whole",
}
PARSE = re.compile(r"\b(json\.loads?|orjson\.loads|_DECODER\.decode)\(")


def test_every_json_parse_is_parse_json_or_has_a_reason() -> None:
    parsing = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if PARSE.search(p.read_text())}
    assert parsing <= set(OWN_INPUT), f"parse a file's JSON with aprender.codec._state.parse_json: " \
                                      f"{sorted(parsing - set(OWN_INPUT))}"
    assert set(OWN_INPUT) <= parsing, f"no longer parse JSON, drop them: {sorted(set(OWN_INPUT) - parsing)}"


@pytest.mark.parametrize("config", [DEEP, '{"a": NaN}', "\ufeff{}", '{"x": ' * 300 + "1" + "}" * 300],
                         ids=["nested-200000", "nan", "bom", "nested-300"])
def test_a_folders_config_is_parsed_with_the_metadata_rules(config: str, tmp_path: Any) -> None:
    folder = tmp_path / "m"
    StandardScaler().fit([[0.0], [4.0]]).save_pretrained(folder)
    (folder / "config.json").write_text(config, encoding="utf-8")
    with pytest.raises(FormatError, match=r"config\.json"):
        aprender.from_pretrained(folder)


def test_a_folder_still_loads(tmp_path: Any) -> None:
    folder = tmp_path / "m"
    StandardScaler().fit([[0.0], [4.0]]).save_pretrained(folder)
    assert aprender.from_pretrained(folder).mean_.tolist() == [2.0]


def test_an_onnx_property_nested_too_deep_stays_text() -> None:
    props = read_props({"aprender.params": DEEP, "aprender.user": '{"name": "m"}'})
    assert props == {"params": DEEP, "user": {"name": "m"}}
