"""What a file says reaches the terminal inert: every command, every string field hostile (issue 36, item 5).

Each file below puts the same hostile text in every string it can hold: user metadata keys
and values, tensor names, the class key and a hyperparameter (both refused, so the text
reaches the *error* line), GGUF keys and values, ONNX metadata_props, graph name, doc string,
producer and input name. The text holds OSC 52 (writes the clipboard), SGR 8 (hides text), a
C1 CSI, DEL, a bidi override and rich markup. Every command that reads such a file, in
every output mode, must print no control character other than newline, no ESC, C1, DEL or
Cf character, and show the markup literally (it is escaped, not interpreted).

click strips CSI sequences itself when stdout is not a terminal; the tests turn that off so
that what they see is what a terminal would receive.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import click
import gguf
import numpy as np
import pytest
from cli_run import invoke
from onnx import TensorProto, helper
from safetensors.numpy import save_file as save_foreign_safetensors

import aprender
from aprender._display import unsafe_characters
from aprender.codec import ModelState, to_state
from aprender.codec._nodes import preview
from aprender.exceptions import FormatError
from aprender.format import safetensors
from aprender.linear_model import LinearRegression

HOSTILE = "\x1b]52;c;SGFja2Vk\x07\x1b[8m\u202e\x9b[2J\x7f\u2066[bold]B[/bold][link=http://x]L[/link]"
#: GGUF tensor names hold at most 63 bytes.
SHORT = "\x1b]52;c;QQ==\x07\u202e[b]t"


def _hostile_state(edit) -> ModelState:
    state = to_state(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
    meta = copy.deepcopy(state.meta)
    edit(meta)
    return ModelState(tensors=dict(state.tensors), meta=meta)


def _gguf(path: Path) -> None:
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name(HOSTILE)
    writer.add_string(f"x.{HOSTILE}", HOSTILE)
    writer.add_tensor(SHORT, np.arange(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _onnx(path: Path) -> None:
    x = helper.make_tensor_value_info(HOSTILE, TensorProto.FLOAT, [None, 1])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])
    graph = helper.make_graph([helper.make_node("Identity", [HOSTILE], ["Y"])], HOSTILE, [x], [y], doc_string=HOSTILE)
    model = helper.make_model(graph, producer_name=HOSTILE, doc_string=HOSTILE,
                              opset_imports=[helper.make_opsetid("", 17)])
    helper.set_model_props(model, {HOSTILE: HOSTILE, "aprender": HOSTILE})
    path.write_bytes(model.SerializeToString())


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
    paths = {fmt: folder / f"meta.{fmt}" for fmt in ("apr", "safetensors", "gguf")}
    for path in paths.values():
        aprender.save(model, path, metadata={"name": HOSTILE, HOSTILE: {HOSTILE: [HOSTILE]}})
    paths["clean"] = folder / "clean.apr"
    aprender.save(model, paths["clean"])
    for name, edit in (("class", lambda meta: meta["model"].update({"class": HOSTILE})),
                       ("param", lambda meta: meta["model"]["params"].update({"fit_intercept": HOSTILE})),
                       ("version", lambda meta: meta["versions"].update({"sklearn": HOSTILE}))):
        paths[name] = folder / f"bad-{name}.safetensors"
        paths[name].write_bytes(safetensors.state_to_bytes(_hostile_state(edit)))
    paths["foreign_st"] = folder / "foreign.safetensors"
    save_foreign_safetensors({HOSTILE: np.arange(4, dtype=np.float32)}, str(paths["foreign_st"]),
                             metadata={HOSTILE: HOSTILE})
    paths["foreign_gguf"] = folder / "foreign.gguf"
    _gguf(paths["foreign_gguf"])
    paths["onnx"] = folder / "hostile.onnx"
    _onnx(paths["onnx"])
    return paths


@pytest.fixture(autouse=True)
def terminal_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(click.utils, "should_strip_ansi", lambda *args, **kwargs: False)


def _assert_inert(run, what) -> None:
    text = run.out + run.err
    bad = sorted({f"U+{ord(ch):04X}" for ch in unsafe_characters(text) if ch != "\n"})
    assert not bad, (what, bad, text[:2000])
    assert ("Traceback" in text) == ("--debug" in what), (what, text[:2000])  # a refusal is one line


def _commands(files: dict[str, Path], out: Path) -> list[tuple[str, ...]]:
    runs: list[tuple[str, ...]] = []
    for key, path in files.items():
        runs += [("inspect", path), ("inspect", "--tensors", path), ("inspect", "--json", path),
                 ("validate", path), ("validate", "--json", path)]
        if key not in ("onnx", "foreign_st", "foreign_gguf"):
            runs += [("card", path, "-o", out / f"{key}.md"), ("convert", path, "-o", out / f"{key}.apr"),
                     ("diff", path, files["clean"]), ("diff", "--json", path, files["clean"])]
        if key in ("class", "param"):  # the traceback quotes the message too
            runs += [("--debug", "validate", path)]
        if key in ("foreign_st", "foreign_gguf"):
            runs += [("import", path, "-o", out / f"{key}-import.apr"), ("diff", path, files["clean"])]
    return runs


def test_no_command_prints_what_a_terminal_would_act_on(files, tmp_path, capsys) -> None:
    ran = 0
    for args in _commands(files, tmp_path):
        _assert_inert(invoke(capsys, *args), args)
        ran += 1
    cards = sorted(tmp_path.glob("*.md"))
    assert len(cards) >= 3
    for card in cards:  # a model card is read in terminals too
        assert set(unsafe_characters(card.read_text())) <= {"\n"}, card
    assert ran >= 50


@pytest.mark.parametrize("key", ["apr", "safetensors", "gguf", "foreign_st"])
def test_inspect_shows_the_text_escaped_not_dropped(files, key, capsys, monkeypatch) -> None:
    """The escapes and the markup are visible: the reader sees that the file holds them."""
    monkeypatch.setenv("COLUMNS", "1000")  # wide enough that no cell folds the text being looked for
    run = invoke(capsys, "inspect", files[key])
    assert run.code == 0, run.err
    assert "\\x1b]52;c;SGFja2Vk\\x07" in run.out
    assert "\\u202e" in run.out
    if key != "foreign_st":  # its only string cell shown in full is the tensor name, in a folded column
        assert "[link=http://x]L[/link]" in run.out


def test_json_keeps_the_values_and_escapes_them(files, capsys) -> None:
    run = invoke(capsys, "inspect", "--json", files["apr"])
    assert run.code == 0
    assert run.json["metadata"]["user"]["name"] == HOSTILE  # JSON readers get the file's text back exactly
    assert "\\u202e" in run.out and "\\u009b" in run.out


@pytest.mark.parametrize("key", ["class", "param"])
def test_error_lines_quote_the_file_escaped(files, key, capsys) -> None:
    run = invoke(capsys, "validate", files[key])
    assert run.code == 1
    assert "\\x1b" in run.err and "\x1b" not in run.err


def test_a_warning_quoting_the_file_is_escaped(files, capsys) -> None:
    """The version skew warning quotes the file's scikit-learn version: inert from the library and the CLI."""
    with pytest.warns(UserWarning) as caught:
        aprender.load(files["version"])
    assert all(not unsafe_characters(str(w.message)) for w in caught)
    run = invoke(capsys, "validate", files["version"])
    assert run.code == 0 and "warning: " in run.err and "\\x1b]52" in run.err


def test_exception_messages_are_escaped() -> None:
    """``str(exc)`` of every AprenderError is inert, whoever formatted it, and one line: a name's newline
    would start a line of output of its own (``invalid: ... 'w`` then ``valid: ...``)."""
    exc = FormatError(f"at '{HOSTILE}': bad\nsecond line")
    assert unsafe_characters(str(exc)) == [] and "bad\\x0asecond line" in str(exc)
    assert "\\x1b]52" in str(exc) and "[link=http://x]" in str(exc)
    assert not unsafe_characters(preview(HOSTILE, 200)) and not unsafe_characters(preview([HOSTILE]))


def _bypasses(path: Path) -> list[str]:
    """Calls in a CLI module that print without ``_render``: click.echo, print, stream writes,
    traceback printing, and a rich ``.print`` of anything but a ``table``/``kv_table``/``tree`` or a literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func, where = node.func, f"{path.name}:{node.lineno}"
        if isinstance(func, ast.Name) and func.id == "print":
            found.append(where)
        elif isinstance(func, ast.Attribute):
            owner = ast.unparse(func.value)
            if (owner, func.attr) == ("click", "echo") or func.attr in ("print_exception", "print_exc", "secho") or (
                    func.attr == "write" and owner in ("sys.stdout", "sys.stderr")):
                found.append(where)
            elif func.attr == "print" and node.args:
                arg = node.args[0]
                made = isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id in (
                    "table", "kv_table", "tree")
                if not (made or (isinstance(arg, ast.Constant) and isinstance(arg.value, str))):
                    found.append(where)
    return found


def test_every_cli_print_goes_through_render() -> None:
    """A new print in aprender/cli must use _render's say/echo/warn/emit_json/table/kv_table/tree, which escape."""
    import aprender.cli

    modules = [p for p in Path(aprender.cli.__file__).parent.glob("*.py") if p.name != "_render.py"]
    assert len(modules) > 10
    assert [hit for path in sorted(modules) for hit in _bypasses(path)] == []
