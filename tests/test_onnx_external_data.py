"""An ONNX file whose tensors name another file is refused; the named file is never opened (issue 36, item 5).

Each crafted model is valid protobuf that lies only in meaning: an initializer (or a
``Constant`` node's tensor, or one inside an ``If`` branch) with ``data_location = EXTERNAL``
pointing at a secret relative to the working directory, through ``..``, at an absolute
path, or through a symlink in the model's own folder. Every reader aprender has for ONNX
(``inspect``, ``validate``, ``load_tensors`` and the command line's ``inspect --tensors``,
``inspect --json`` and ``validate``) must refuse it with a ``FormatError`` naming the
tensor and location, and nothing of the secret may reach any output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_run import invoke
from onnx import helper, numpy_helper

import aprender
from aprender.exceptions import FormatError
from aprender.format import onnx as apr_onnx

#: The secret's bytes as float32: distinctive numbers that would show in ``inspect --tensors``.
SECRET = np.array([4242.125, -1717.5, 31337.0, 2.5e-7], dtype="<f4")
SECRET_TEXTS = ("4242.12", "-1717.5", "31337", "2.5e-07")


def _external(name: str, location: str) -> onnx.TensorProto:
    tensor = numpy_helper.from_array(np.zeros(4, dtype=np.float32), name)
    onnx.external_data_helper.set_external_data(tensor, location=location, offset=0, length=SECRET.nbytes)
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    return tensor


def _model(where: str, location: str) -> onnx.ModelProto:
    """A one-node ``Add`` model whose external tensor sits at ``where``."""
    x = helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [None, 4])
    y = helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [None, 4])
    tensor = _external("W", location)
    inits, nodes = [], []
    if where == "initializer":
        inits.append(tensor)
    elif where == "constant":
        nodes.append(helper.make_node("Constant", [], ["W"], value=tensor))
    else:  # inside a subgraph: the then-branch of an If
        branch = helper.make_graph([helper.make_node("Constant", [], ["B"], value=tensor)], "then", [],
                                   [helper.make_tensor_value_info("B", onnx.TensorProto.FLOAT, [4])])
        nodes.append(helper.make_node("Constant", [], ["C"], value=numpy_helper.from_array(np.array(True), "C")))
        nodes.append(helper.make_node("If", ["C"], ["W"], then_branch=branch, else_branch=branch))
    nodes.append(helper.make_node("Add", ["X", "W"], ["Y"]))
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A secret in the working directory, one beside the model's folder, and a symlink to it inside."""
    work, models = tmp_path / "work", tmp_path / "work" / "models"
    models.mkdir(parents=True)
    for secret in (work / "secret.bin", tmp_path / "outside.bin"):
        secret.write_bytes(SECRET.tobytes())
    (models / "link.bin").symlink_to(work / "secret.bin")
    monkeypatch.chdir(work)
    return {"cwd": "secret.bin", "dotdot": "../secret.bin", "absolute": str(tmp_path / "outside.bin"),
            "symlink": "link.bin", "etc": "/etc/passwd"}


LOCATIONS = ("cwd", "dotdot", "absolute", "symlink", "etc")
PLACES = ("initializer", "constant", "subgraph")


def _write(layout: dict[str, str], place: str, location: str) -> Path:
    path = Path("models") / f"{place}-{location}.onnx"
    path.write_bytes(_model(place, layout[location]).SerializeToString())
    return path


def test_the_crafted_file_reads_the_secret_through_onnx(layout) -> None:
    """The lie is real: onnx's own reader resolves the relative location against the working directory."""
    path = _write(layout, "initializer", "cwd")
    init = onnx.load(str(path), load_external_data=False).graph.initializer[0]
    np.testing.assert_array_equal(numpy_helper.to_array(init), SECRET)


@pytest.mark.parametrize("location", LOCATIONS)
@pytest.mark.parametrize("place", PLACES)
def test_every_reader_refuses_external_data(layout, place, location, monkeypatch) -> None:
    def opened(*args, **kwargs):
        raise AssertionError("external data was opened")

    monkeypatch.setattr(onnx.external_data_helper, "load_external_data_for_tensor", opened)
    path = _write(layout, place, location)
    for read in (aprender.inspect, aprender.validate, apr_onnx.load_tensors):
        with pytest.raises(FormatError, match=r"tensor 'W' keeps its data in another file \(location '") as info:
            read(path)
        assert repr(layout[location]) in str(info.value)


@pytest.mark.parametrize("location", LOCATIONS)
def test_the_command_line_shows_nothing_of_the_secret(layout, location, capsys) -> None:
    path = _write(layout, "initializer", location)
    for args in (("inspect", "--tensors", path), ("inspect", "--json", path), ("validate", path)):
        run = invoke(capsys, *args)
        assert run.code == 1, (args, run)
        assert "keeps its data in another file" in run.err
        for text in (*SECRET_TEXTS, "root:"):
            assert text not in run.out + run.err, (args, text)


def test_a_self_contained_file_still_reads(tmp_path: Path) -> None:
    """The rule refuses only external data: the same graph with its tensor inside the file reads as before."""
    model = _model("initializer", "x")
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(SECRET, "W"))
    path = tmp_path / "inline.onnx"
    path.write_bytes(model.SerializeToString())
    assert aprender.validate(path).format == "onnx"
    np.testing.assert_array_equal(apr_onnx.load_tensors(path)["W"], SECRET)
    assert [t.name for t in aprender.inspect(path).tensors] == ["W"]
