"""One budget per load: a file's values cannot widen, or cost parse work, far past its bytes.

Three hostile files that are valid in every byte and lie only in what they cost: one long
string among many short ones (a numpy string array's one itemsize widens them all), a
GGUF key-value array of 600,000 one-byte items (parsed one numpy view at a time), and a
GGUF pipeline whose params hold a long tree-shaped list. Each is refused, and the peak RSS
of its load, measured in a fresh interpreter (``VmHWM``), stays small. Real models with
long strings and large vocabularies still load, and the one knob lets a trusted file past.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gguf import GGUFValueType
from peak_rss import peak_growths

from aprender import _budget
from aprender.codec import parse_json, to_state
from aprender.codec._state import JSON_BYTES_PER_VALUE, JSON_VALUE_ALLOWANCE
from aprender.exceptions import LoadBudgetExceeded
from aprender.format import apr, gguf, safetensors
from aprender.format.gguf import _reader as gguf_reader
from aprender.linear_model import LinearRegression
from aprender.pipeline import Pipeline
from aprender.preprocessing import LabelEncoder, StandardScaler

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


def labels(values: list[str]) -> dict:
    """A fitted LabelEncoder's state whose ``classes_`` are ``values`` (sorted, distinct)."""
    state = to_state(LabelEncoder().fit(["a", "b"]))
    width = max(len(v) for v in values)
    state.meta["model"]["attrs"]["classes_"] = {"__t__": "strarray", "dtype": f"<U{width}", "shape": [len(values)],
                                                "v": values}
    return state


def wide_strings(n: int, width: int) -> list[str]:
    """``n`` short distinct sorted strings, then one of ``width`` characters that sorts last."""
    return [f"a{i:07d}" for i in range(n)] + ["z" * width]


def tree(depth: int) -> list:
    return [] if depth == 0 else [tree(depth - 1), tree(depth - 1)]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("budget")
    paths = {name: str(d / name) for name in ("wide.safetensors", "wide.apr", "items.gguf", "tree.gguf")}
    # 4 bytes x 100,000 characters x 10,001 strings = 4 GB of <U100000 from ~230 KB.
    state = labels(wide_strings(10_000, 100_000))
    safetensors.write_state(state, paths["wide.safetensors"])
    apr.write_state(state, paths["wide.apr"])
    # 600,000 uint8 items in one key-value array: 600 KB that parsed in 10 s into 90 MB of views.
    state = to_state(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]))
    writer_general = gguf._add_general

    def add_items(writer: Any, s: Any) -> None:
        writer_general(writer, s)
        writer.add_key_value("general.junk", [0] * 600_000, GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT8)

    gguf._add_general = add_items
    try:
        gguf.write_state(state, paths["items.gguf"])
    finally:
        gguf._add_general = writer_general
    # A pipeline whose params hold a binary tree of 2**18 empty lists: 1.3 MB that cost 227 MiB and 13 s.
    state = to_state(Pipeline([("s", StandardScaler())]).fit([[0.0], [1.0]]))
    state.meta["model"]["params"]["transform_input"] = tree(18)
    gguf.write_state(state, paths["tree.gguf"])
    return paths


def test_hostile_files_are_refused_within_a_small_peak(hostile: dict[str, str]) -> None:
    results = peak_growths({path: f"aprender.load({path!r})" for path in hostile.values()})
    for name, path in hostile.items():
        result = results[path]
        assert result["error"] is not None and result["error"][0] == "LoadBudgetExceeded", (name, result)
        # Each file is under 2.5 MB; before the budget they cost 227 MiB to 4 GB.
        assert result["growth"] < 64 * MiB, (name, result["growth"])
    assert "string array <U100000[10001]" in results[hostile["wide.apr"]]["error"][2]
    assert "MAX_EXPANSION" in results[hostile["wide.safetensors"]]["error"][2]
    assert "key-value arrays hold more than" in results[hostile["items.gguf"]]["error"][2]
    assert "aprender.params" in results[hostile["tree.gguf"]]["error"][2]


def test_the_knob_lets_a_trusted_wide_file_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,001 strings of 10,000 characters' width: 80 MB from 26 KB, past 16 x 26 KB + 64 MiB.
    path = tmp_path / "wide.safetensors"
    values = wide_strings(2_000, 10_000)
    safetensors.write_state(labels(values), path)
    with pytest.raises(LoadBudgetExceeded, match=r"at 'classes_': string array <U10000\[2001\]"):
        safetensors.load_file(path)
    monkeypatch.setattr(_budget, "MAX_EXPANSION", None)
    assert list(safetensors.load_file(path).classes_) == values


def test_long_strings_within_the_budget_load(tmp_path: Path) -> None:
    # One 50,000-character label among 300 short ones: 60 MB of <U50000, inside the 64 MiB every load has.
    values = wide_strings(300, 50_000)
    path = tmp_path / "labels.gguf"
    gguf.write_state(labels(values), path)
    assert list(gguf.load_file(path).classes_) == values


def test_json_values_are_capped_per_byte() -> None:
    n = 4 * JSON_VALUE_ALLOWANCE
    dense = "[" + ",".join(["0"] * n) + "]"
    assert n > len(dense) // JSON_BYTES_PER_VALUE + JSON_VALUE_ALLOWANCE
    with pytest.raises(LoadBudgetExceeded, match=r"'m': more than [\d,]+ JSON values in [\d,]+ bytes"):
        parse_json(dense, "'m'")
    # A vocabulary of as many words (6 bytes or more per value) is real metadata and parses.
    vocabulary = json.dumps({f"w{i}": i for i in range(n)}, separators=(",", ":"))
    assert len(parse_json(vocabulary, "'m'")) == n


def test_gguf_array_items_are_capped_per_byte(tmp_path: Path) -> None:
    path = tmp_path / "tokens.gguf"
    state = to_state(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]))
    writer_general = gguf._add_general
    # A tokenizer-like array of 20,000 strings: far inside the allowance, so still read.
    tokens = [f"tok{i}" for i in range(20_000)]

    def add_tokens(writer: Any, s: Any) -> None:
        writer_general(writer, s)
        writer.add_array("tokenizer.ggml.tokens", tokens)

    gguf._add_general = add_tokens
    try:
        gguf.write_state(state, path)
    finally:
        gguf._add_general = writer_general
    assert gguf.load_file(path).predict([[2.0]]).tolist() == pytest.approx([2.0])
    reader = gguf_reader.open_any(path, "t")
    assert reader.get_field("tokenizer.ggml.tokens").contents()[-1] == "tok19999"


def test_threat_model_states_the_constants_in_force() -> None:
    text = " ".join((ROOT / "docs" / "threat-model.md").read_text().split())
    assert f"= {_budget.EXPANSION} x the bytes the file gave the load" in text
    assert f"+ {_budget.ALLOWANCE // MiB} MiB" in text
    assert f"at most one value per {JSON_BYTES_PER_VALUE} bytes beyond {JSON_VALUE_ALLOWANCE:,} values" in text
    assert (f"one per {gguf_reader.ARRAY_BYTES_PER_ITEM} bytes of file beyond "
            f"{gguf_reader.ARRAY_ITEM_ALLOWANCE:,}") in text
