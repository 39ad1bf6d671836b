"""The ``aprender`` / ``apr`` command line, driven through ``main(argv)``.

inspect, validate, convert/export, import, quantize and diff; exit codes and error
lines; the seed's chained flow; and the installed scripts in real subprocesses.
Signing and encryption are in test_cli_crypto.py.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gguf
import ml_dtypes
import numpy as np
import pytest
from cli_run import Run, flip_byte, invoke, one_error_line
from safetensors.numpy import save_file as save_foreign_safetensors
from zoo import assert_identical_outputs, iris

import aprender
from aprender.cli import _progress as progress
from aprender.codec import to_state
from aprender.format import apr
from aprender.linear_model import LogisticRegression
from aprender.preprocessing import StandardScaler


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """``cli(*args)``: :func:`invoke` with this test's capture."""
    return functools.partial(invoke, capsys)


@pytest.fixture(scope="module")
def model() -> LogisticRegression:
    X, y = iris()
    return LogisticRegression(max_iter=1000).fit(X, y)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, model: LogisticRegression) -> dict[str, Path]:
    """The model saved in each format aprender reads, plus foreign files."""
    folder = tmp_path_factory.mktemp("cli")
    paths = {fmt: folder / f"iris.{fmt}" for fmt in ("safetensors", "apr", "gguf")}
    for path in paths.values():
        aprender.save(model, path, metadata={"name": "iris-logreg"})
    rng = np.random.default_rng(0)
    paths["hf"] = folder / "hf.safetensors"
    save_foreign_safetensors({"embed.weight": rng.normal(size=(8, 4)).astype(np.float16),
                              "ids": np.arange(8, dtype=np.int32),
                              "norm": np.array([1.0, np.nan, -2.0, np.nan], dtype=ml_dtypes.bfloat16)},
                             str(paths["hf"]), metadata={"format": "pt"})
    paths["llama"] = folder / "llama.gguf"
    writer = gguf.GGUFWriter(paths["llama"], "llama")
    writer.add_block_count(1)
    writer.add_name("tiny")
    writer.add_token_list(["a", "b", "c"])
    writer.add_tensor("token_embd.weight", rng.normal(size=(4, 64)).astype(np.float32))
    blocks = gguf.quants.quantize(rng.normal(size=(2, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("blk.0.attn_q.weight", blocks, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", rng.normal(size=64).astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return paths


# -- help and usage -------------------------------------------------------------------------

COMMANDS = ["inspect", "validate", "convert", "export", "import", "quantize", "keygen", "sign", "verify", "encrypt",
            "decrypt", "diff"]


def test_help_lists_every_command(cli) -> None:
    run = cli("--help")
    assert run.code == 0
    for command in COMMANDS:
        assert f"  {command} " in run.out


def test_the_help_table_is_each_commands_own_short_help() -> None:
    """``--help`` lists the commands from aprender.cli._app.COMMANDS without importing them: it must not drift."""
    import click

    from aprender.cli._app import COMMANDS as TABLE
    from aprender.cli._app import cli as group
    from aprender.format._formats import describe

    ctx = click.Context(group)
    assert [name for name in TABLE] == group.list_commands(ctx)
    for name, (_, _, short_help) in TABLE.items():
        command = group.get_command(ctx, name)
        assert command.get_short_help_str(1000) == describe(short_help), name  # {formats}: the table's
        assert not command.hidden


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(cli, command: str) -> None:
    run = cli(command, "--help")
    assert run.code == 0
    assert run.out.startswith(f"Usage: aprender {command} ")
    assert "--json" in run.out


def test_bare_command_shows_help_and_exits_2(cli) -> None:
    run = cli()
    assert run.code == 2
    assert run.err.startswith("Usage: aprender [OPTIONS] COMMAND [ARGS]...")


def test_unknown_option_is_a_usage_error(cli, files) -> None:
    run = cli("inspect", files["apr"], "--bogus")
    assert run.code == 2
    line = one_error_line(run)
    assert line.startswith("error: No such option") and "--bogus" in line
    assert line.endswith("(see 'aprender inspect --help')")


def test_missing_input_is_a_usage_error(cli, tmp_path: Path) -> None:
    run = cli("validate", tmp_path / "nope.apr")
    assert run.code == 2
    assert "does not exist" in one_error_line(run)


# -- inspect --------------------------------------------------------------------------------


def test_inspect_json_reports_the_model(cli, files, model) -> None:
    run = cli("inspect", files["safetensors"], "--json")
    assert run.code == 0
    report = run.json
    state = to_state(model)
    assert report["format"] == "safetensors"
    assert report["class"] == "aprender.linear_model.LogisticRegression"
    assert report["model_type"] == {"name": "LOGISTIC_REGRESSION", "code": 2}
    assert report["hyperparameters"]["max_iter"] == 1000
    assert report["metadata"] == {"user": {"name": "iris-logreg"}}
    assert report["versions"]["aprender"] == aprender.__version__
    assert report["flags"] == {"compressed": None, "encrypted": False, "signed": False, "quantization": None}
    assert [(t["name"], t["dtype"], t["shape"], t["nbytes"]) for t in report["tensors"]] == [
        (name, a.dtype.name, list(a.shape), a.nbytes) for name, a in sorted(state.tensors.items())]
    assert report["n_parameters"] == sum(a.size for a in state.tensors.values())
    assert report["file_size"] == files["safetensors"].stat().st_size


def test_inspect_human_output_is_a_table(cli, files) -> None:
    run = cli("inspect", files["apr"])
    assert run.code == 0
    assert "LOGISTIC_REGRESSION (0x0002)" in run.out
    assert "user.name" in run.out and "iris-logreg" in run.out
    assert "│ coefficients │ float64 │ 3x4   │    96 │" in run.out


def test_inspect_shows_metadata_text_verbatim(cli, model, tmp_path: Path) -> None:
    """A file's text is printed as written: ':warning:' stays that, not rich's emoji."""
    path = tmp_path / "emoji.apr"
    aprender.save(model, path, metadata={"name": ":warning: [bold]x[/bold]"})
    run = cli("inspect", path)
    assert run.code == 0
    assert ":warning: [bold]x[/bold]" in run.out


def test_inspect_tensor_statistics(cli, files, model) -> None:
    report = cli("inspect", files["gguf"], "--tensors", "--json").json
    stats = {t["name"]: t["stats"] for t in report["tensors"]}
    # The file holds coef_ row-major; numpy's pairwise mean depends on memory order (scikit-learn
    # 1.9 keeps coef_ Fortran-ordered), so the reference is the mean of the same C-ordered array.
    coef = np.ascontiguousarray(model.coef_)
    assert stats["coefficients"] == {"min": coef.min(), "max": coef.max(), "mean": coef.mean(), "nan": 0}
    assert stats["classes_"] == {"min": 0.0, "max": 2.0, "mean": 1.0, "nan": 0}


def test_inspect_counts_nans_of_a_foreign_file(cli, files) -> None:
    report = cli("inspect", files["hf"], "--tensors", "--json").json
    assert report["class"] is None and report["model_type"] is None
    assert report["metadata"] == {"format": "pt"}
    norm = next(t for t in report["tensors"] if t["name"] == "norm")
    assert norm["dtype"] == "bfloat16"
    assert norm["stats"] == {"min": -2.0, "max": 1.0, "mean": -0.5, "nan": 2}


def test_inspect_foreign_gguf(cli, files) -> None:
    report = cli("inspect", files["llama"], "--quantization", "--json").json
    assert report["format"] == "gguf" and report["class"] is None
    assert report["metadata"]["general.architecture"] == "llama"
    assert report["metadata"]["tokenizer.ggml.tokens"] == "<array of 3>"
    rows = {t["name"]: (t["dtype"], t["shape"]) for t in report["tensors"]}
    assert rows == {"token_embd.weight": ("float32", [4, 64]), "blk.0.attn_q.weight": ("q8_0", [2, 64]),
                    "output_norm.weight": ("float16", [64])}
    assert report["quantization"]["bits_per_weight"] == {"q8_0": 8.5}


def test_inspect_onnx(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "iris.onnx"
    assert cli("convert", files["apr"], "--output", out).code == 0
    report = cli("inspect", out, "--json").json
    assert report["format"] == "onnx"
    assert report["class"] == "aprender.linear_model.LogisticRegression"
    assert report["extra"]["inputs"] == [{"name": "X", "dtype": "float32", "shape": [None, 4]}]
    from aprender.cluster import KMeans

    kmeans = tmp_path / "kmeans.onnx"
    KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [1.0], [5.0], [6.0]]).save_onnx(kmeans)
    tensors = {t["name"]: t["stats"] for t in cli("inspect", kmeans, "--tensors", "--json").json["tensors"]}
    assert {"min": 0.5, "max": 5.5, "mean": 3.0, "nan": 0} in tensors.values()  # the centroids, from the backend


def test_inspect_quantization_details(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "q4.apr"
    assert cli("quantize", files["apr"], "--type", "q4_0", "--output", out).code == 0
    report = cli("inspect", out, "--quantization", "--json").json
    assert report["flags"]["quantization"] == "q4_0"
    q = report["quantization"]
    assert q["type"] == "q4_0" and q["block_size"] == 32 and q["bits_per_weight"] == {"q4_0": 4.5}
    # 3 rows of 4 weights: one 18-byte block per row, instead of 12 float64
    assert q["tensors"] == [{"name": "coefficients", "type": "q4_0", "shape": [3, 4], "original_dtype": "float64",
                             "nbytes": 54, "original_nbytes": 96, "ratio": 96 / 54}]
    coefficients = next(t for t in report["tensors"] if t["name"] == "coefficients")
    assert coefficients["shape"] == [3, 4]
    # no block padding counted: the parameters of the model before quantization
    assert report["n_parameters"] == sum(a.size for a in apr.read_state(files["apr"]).tensors.values())


# -- validate -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["safetensors", "apr", "gguf"])
def test_validate_a_sound_file(cli, files, fmt: str) -> None:
    run = cli("validate", files[fmt], "--json")
    assert run.code == 0
    assert run.json["valid"] is True and run.json["error"] is None
    assert "model rebuilt through the allow-list" in run.json["checks"]


def test_validate_a_corrupted_apr(cli, files, tmp_path: Path) -> None:
    bad = flip_byte(files["apr"], tmp_path / "bad.apr", files["apr"].stat().st_size - 40)
    run = cli("validate", bad, "--json")
    assert run.code == 1
    assert run.json["valid"] is False
    assert run.json["error"]["type"] == "ChecksumMismatch"
    assert one_error_line(run).startswith("invalid: checksum mismatch in ")


def test_validate_a_truncated_safetensors(cli, files, tmp_path: Path) -> None:
    bad = tmp_path / "cut.safetensors"
    bad.write_bytes(files["safetensors"].read_bytes()[:-10])
    run = cli("validate", bad)
    assert run.code == 1
    assert run.out == ""
    assert "[FormatError]" in one_error_line(run)


def test_validate_a_truncated_gguf(cli, files, tmp_path: Path) -> None:
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(files["gguf"].read_bytes()[:-7])
    run = cli("validate", bad)
    assert run.code == 1
    assert "[FormatError]" in one_error_line(run)


def test_validate_foreign_files(cli, files) -> None:
    for name in ("hf", "llama"):
        run = cli("validate", files[name], "--json")
        assert run.code == 0, run.err
        assert run.json["checks"][-1] == "tensors read (no aprender model: raw tensors)"


def test_validate_onnx_runs_the_checker(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "m.onnx"
    cli("convert", files["safetensors"], "-o", out)
    assert cli("validate", out).code == 0
    out.write_bytes(out.read_bytes()[:-20])
    assert cli("validate", out).code == 1


def test_progress_bar_on_request_and_for_large_files(cli, files, monkeypatch) -> None:
    run = cli("validate", files["apr"], "--progress")
    assert run.code == 0 and "100%" in run.err
    assert "100%" not in cli("validate", files["apr"]).err
    monkeypatch.setattr(progress, "LARGE", files["apr"].stat().st_size)
    assert "100%" in cli("validate", files["apr"]).err
    assert "100%" not in cli("validate", files["apr"], "--no-progress").err


# -- convert --------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["safetensors", "apr", "gguf"])
@pytest.mark.parametrize("target", ["safetensors", "apr", "gguf"])
def test_convert_every_pair_keeps_the_model(cli, files, model, tmp_path: Path, source: str, target: str) -> None:
    out = tmp_path / f"out.{target}"
    run = cli("convert", files[source], "--format", target, "--output", out)
    assert run.code == 0, run.err
    assert run.out.startswith(f"converted {files[source]} ({source}, ")
    assert_identical_outputs(model, aprender.load(out), iris()[0])
    # nothing is lost on the way: same metadata and tensors as the source
    assert cli("diff", files[source], out).code == 0


def test_convert_is_deterministic(cli, files, tmp_path: Path) -> None:
    for fmt in ("safetensors", "apr", "gguf"):
        first, second = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
        cli("convert", files["safetensors"], "-o", first)
        cli("convert", files["safetensors"], "-o", second)
        assert first.read_bytes() == second.read_bytes()


def test_export_is_convert(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "m.gguf"
    run = cli("export", files["apr"], "--format", "gguf", "--output", out, "--json")
    assert run.code == 0
    assert run.json["format"] == "gguf" and run.json["output_size"] == out.stat().st_size


def test_convert_to_onnx_predicts_the_same(cli, files, model, tmp_path: Path) -> None:
    import onnxruntime as ort

    X = iris()[0]
    for dtype, tolerance in (("f32", 1e-5), ("f64", 1e-12)):
        out = tmp_path / f"m-{dtype}.onnx"
        assert cli("convert", files["gguf"], "-o", out, "--dtype", dtype).code == 0
        session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        labels, probabilities = session.run(None, {"X": X.astype(np.float32 if dtype == "f32" else np.float64)})
        np.testing.assert_array_equal(labels, model.predict(X))
        np.testing.assert_allclose(probabilities, model.predict_proba(X), rtol=0, atol=tolerance)


def test_convert_dtype_and_compression(cli, files, model, tmp_path: Path) -> None:
    out = tmp_path / "m32.apr"
    run = cli("convert", files["safetensors"], "-o", out, "--dtype", "f32", "--compress", "zstd")
    assert run.code == 0
    info = aprender.inspect(out)
    assert info.compressed == "zstd"
    assert {t.name: t.dtype for t in info.tensors}["coefficients"] == "float32"
    assert info.metadata["user"] == {"name": "iris-logreg"}
    loaded = aprender.load(out)
    np.testing.assert_array_equal(loaded.coef_, model.coef_.astype(np.float32).astype(np.float64))


def test_convert_quantized_gguf(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "q.gguf"
    assert cli("convert", files["apr"], "-o", out, "--quantize", "q8_0").code == 0
    assert aprender.inspect(out).quantization == "q8_0"
    assert cli("validate", out).code == 0


def test_convert_quantized_to_safetensors_dequantizes(cli, files, model, tmp_path: Path) -> None:
    quantized, out = tmp_path / "q.apr", tmp_path / "deq.safetensors"
    cli("quantize", files["apr"], "--type", "q8_0", "-o", quantized)
    run = cli("convert", quantized, "-o", out)
    assert run.code == 0
    assert run.err == "warning: SafeTensors holds no GGML blocks: the q8_0 tensors are written dequantized\n"
    np.testing.assert_allclose(aprender.load(out).coef_, model.coef_, atol=0.02)


@pytest.mark.parametrize(("args", "message"), [
    (["--format", "safetensors", "--quantize", "q8_0"], "safetensors cannot hold GGML blocks"),
    (["--format", "gguf", "--compress", "zstd"], "compression applies to .apr output only"),
    (["--format", "onnx", "--dtype", "f16"], "ONNX export takes f32 or f64"),
])
def test_convert_refuses_what_the_target_cannot_hold(cli, files, tmp_path: Path, args, message: str) -> None:
    run = cli("convert", files["apr"], "-o", tmp_path / "out", *args)
    assert run.code == 2
    assert message in one_error_line(run)
    assert not (tmp_path / "out").exists()


def test_convert_output_format_must_match_its_suffix(cli, files, tmp_path: Path) -> None:
    run = cli("convert", files["apr"], "--format", "gguf", "-o", tmp_path / "m.safetensors")
    assert run.code == 2
    assert "'m.safetensors' has the suffix of safetensors, not gguf" in one_error_line(run)
    run = cli("convert", files["apr"], "-o", tmp_path / "m.bin")
    assert run.code == 2 and "pass --format" in one_error_line(run)
    assert cli("convert", files["apr"], "--format", "gguf", "-o", tmp_path / "m.bin").code == 0
    assert aprender.inspect(tmp_path / "m.bin").format == "gguf"


def test_never_overwrites_without_force(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "m.apr"
    out.write_bytes(b"keep me")
    run = cli("convert", files["safetensors"], "-o", out)
    assert run.code == 2
    assert one_error_line(run) == f"error: '{out}' exists; pass --force to overwrite it (see 'aprender convert --help')"
    assert out.read_bytes() == b"keep me"
    assert cli("convert", files["safetensors"], "-o", out, "--force").code == 0
    assert out.read_bytes()[:4] == b"APR\x00"


def test_convert_refuses_onnx_input(cli, files, tmp_path: Path) -> None:
    onnx_file = tmp_path / "m.onnx"
    cli("convert", files["apr"], "-o", onnx_file)
    run = cli("convert", onnx_file, "-o", tmp_path / "back.apr")
    assert run.code == 1
    assert "ONNX, which aprender exports but cannot read back" in one_error_line(run)


def test_errors_are_one_line_unless_debug(cli, files, tmp_path: Path) -> None:
    bad = flip_byte(files["apr"], tmp_path / "bad.apr", 100)
    run = cli("convert", bad, "-o", tmp_path / "x.gguf")
    assert run.code == 1
    assert one_error_line(run).startswith("error: ")
    run = cli("--debug", "convert", bad, "-o", tmp_path / "x.gguf")
    assert run.code == 1
    assert run.err.startswith("Traceback (most recent call last):")
    assert run.err.strip().splitlines()[-1] == one_error_line(cli("convert", bad, "-o", tmp_path / "x.gguf"))
    assert "Traceback" in cli("convert", bad, "-o", tmp_path / "x.gguf", "--debug").err
    assert not (tmp_path / "x.gguf").exists()
    # validate reports a bad file itself; --debug still shows where it failed
    assert "Traceback" not in cli("validate", bad).err
    run = cli("validate", bad, "--debug")
    assert run.code == 1 and run.err.startswith("Traceback (most recent call last):")


# -- quantize -------------------------------------------------------------------------------


def test_quantize_prints_sizes_before_and_after(cli, files, model, tmp_path: Path) -> None:
    out = tmp_path / "q8.apr"
    run = cli("quantize", files["apr"], "--type", "q8_0", "--output", out)
    assert run.code == 0
    before, after = files["apr"].stat().st_size, out.stat().st_size
    assert f"│ File                  │ {before:>12,} │ {after:>11,} │" in run.out
    assert "│ Quantized tensors (1) │           96 │         102 │" in run.out
    report = cli("quantize", files["gguf"], "--type", "q4_1", "-o", tmp_path / "q.gguf", "--json").json
    assert (report["tensors"], report["tensor_bytes_before"], report["tensor_bytes_after"]) == (
        ["coefficients"], 96, 60)
    assert report["input_size"] == files["gguf"].stat().st_size
    np.testing.assert_allclose(aprender.load(out).coef_, model.coef_, atol=0.02)


def test_quantize_failures(cli, files, tmp_path: Path) -> None:
    scaler = tmp_path / "scaler.apr"
    aprender.save(StandardScaler().fit(iris()[0]), scaler)
    run = cli("quantize", scaler, "--type", "q8_0", "-o", tmp_path / "sq.apr")
    assert run.code == 1
    assert "StandardScaler has no tensor that can be quantized" in one_error_line(run)
    once = tmp_path / "once.apr"
    cli("quantize", files["apr"], "--type", "q8_0", "-o", once)
    run = cli("quantize", once, "--type", "q4_0", "-o", tmp_path / "twice.apr")
    assert run.code == 1 and "already quantized (q8_0)" in one_error_line(run)
    run = cli("quantize", files["apr"], "--type", "q8_0", "-o", tmp_path / "q.safetensors")
    assert run.code == 2 and "safetensors cannot hold GGML blocks" in one_error_line(run)
    assert not any(p.name in ("sq.apr", "twice.apr", "q.safetensors") for p in tmp_path.iterdir())


# -- import ---------------------------------------------------------------------------------


def test_import_foreign_safetensors_keeps_raw_tensors(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "hf.apr"
    run = cli("import", files["hf"], "--output", out, "--json")
    assert run.code == 0
    assert run.json["model_type"] == "CUSTOM" and run.json["n_tensors"] == 3
    state = apr.read_state(out)
    original = aprender.format.safetensors.load_tensors(files["hf"])
    assert sorted(state.tensors) == sorted(original)
    for name, array in original.items():
        assert (state.tensors[name].dtype, state.tensors[name].shape) == (array.dtype, array.shape)
        assert state.tensors[name].tobytes() == array.tobytes()  # bit for bit, NaNs included
    assert state.meta["model_type"] == 0xFF
    assert state.meta["source"] == {"format": "safetensors", "metadata": {"format": "pt"}}
    assert cli("inspect", out, "--json").json["model_type"] == {"name": "CUSTOM", "code": 255}
    assert cli("validate", out, "--json").json["checks"][-1] == "tensors read (raw tensors, model type Custom)"
    aprender.validate(out)  # the library's validate checks it the same way
    assert cli("diff", files["hf"], out).code == 0


def test_import_foreign_gguf_dequantizes_blocks(cli, files, tmp_path: Path) -> None:
    out = tmp_path / "llama.apr"
    run = cli("import", files["llama"], "-o", out, "--dtype", "f32")
    assert run.code == 0
    assert run.err == "warning: 1 GGML block tensors were dequantized to float32\n"
    state = apr.read_state(out)
    reader = gguf.GGUFReader(files["llama"])
    by_name = {t.name: t for t in reader.tensors}
    q = by_name["blk.0.attn_q.weight"]
    np.testing.assert_array_equal(state.tensors["blk.0.attn_q.weight"],
                                  gguf.quants.dequantize(q.data, q.tensor_type))
    np.testing.assert_array_equal(state.tensors["output_norm.weight"],
                                  by_name["output_norm.weight"].data.astype(np.float32))
    assert {a.dtype for a in state.tensors.values()} == {np.dtype(np.float32)}
    assert state.meta["source"]["dequantized"] == {"blk.0.attn_q.weight": "q8_0"}
    assert state.meta["source"]["metadata"]["general.name"] == "tiny"


def test_import_refuses_aprender_files_and_raw_tensors_refuse_gguf(cli, files, tmp_path: Path) -> None:
    run = cli("import", files["gguf"], "-o", tmp_path / "x.apr")
    assert run.code == 2
    assert "was written by aprender (aprender.linear_model.LogisticRegression); use 'convert'" in one_error_line(run)
    raw = tmp_path / "raw.apr"
    cli("import", files["hf"], "-o", raw)
    run = cli("convert", raw, "-o", tmp_path / "raw.gguf")
    assert run.code == 1 and "raw tensors (model type Custom) can go to .safetensors or .apr" in one_error_line(run)
    run = cli("quantize", raw, "--type", "q8_0", "-o", tmp_path / "rawq.apr")
    assert run.code == 1 and "only models can be quantized" in one_error_line(run)
    assert cli("convert", raw, "-o", tmp_path / "raw.safetensors").code == 0
    assert cli("diff", raw, tmp_path / "raw.safetensors").code == 0


def test_a_pickle_is_refused_with_a_conversion_that_works_as_written(cli, tmp_path: Path) -> None:
    import re
    import shlex
    import subprocess
    import sys

    import joblib

    X, y = iris()
    fitted = LogisticRegression(max_iter=1000).fit(X, y)
    joblib.dump(fitted, tmp_path / "legacy.joblib")
    run = cli("convert", tmp_path / "legacy.joblib", "--format", "apr", "-o", tmp_path / "out.apr")
    assert run.code == 1 and not (tmp_path / "out.apr").exists()
    command = re.search(r'convert it once: (python -c ".*?")', one_error_line(run)).group(1)
    argv = [sys.executable, *shlex.split(command)[1:]]  # the user's python is this one
    subprocess.run(argv, cwd=tmp_path, check=True)
    converted = aprender.load(tmp_path / "legacy.apr")
    assert np.array_equal(converted.predict_proba(X), fitted.predict_proba(X))
    renamed = tmp_path / "model.bin"  # a pickle by its bytes, whatever its name
    renamed.write_bytes((tmp_path / "legacy.joblib").read_bytes())
    assert "is a pickle" in one_error_line(cli("inspect", renamed))


# -- diff -----------------------------------------------------------------------------------


def test_diff_identical_across_formats(cli, files) -> None:
    run = cli("diff", files["apr"], files["gguf"])
    assert run.code == 0
    assert run.out == f"identical: {files['apr']} and {files['gguf']} (4 tensors, metadata equal)\n"


def test_diff_reports_changes(cli, files, model, tmp_path: Path) -> None:
    X, y = iris()
    other = LogisticRegression(max_iter=1000, C=0.5).fit(X, y)
    path = tmp_path / "other.apr"
    aprender.save(other, path, metadata={"name": "iris-c05"})
    run = cli("diff", files["safetensors"], path, "--json")
    assert run.code == 1
    result = run.json
    assert {m["key"]: (m["a"], m["b"]) for m in result["metadata"]} == {
        "model.params.C": (1.0, 0.5), "user.name": ("iris-logreg", "iris-c05")}
    rows = {t["name"]: t for t in result["tensors"]}
    assert rows["coefficients"]["status"] == "values"
    assert rows["coefficients"]["max_abs_diff"] == float(np.abs(model.coef_ - other.coef_).max())
    assert rows["classes_"]["status"] == "equal"
    human = cli("diff", files["safetensors"], path)
    assert human.code == 1 and "model.params.C" in human.out and "coefficients" in human.out


def test_diff_names_the_changed_leaves_of_pipelines(cli, tmp_path: Path) -> None:
    from aprender.compose import ColumnTransformer
    from aprender.pipeline import make_pipeline
    from aprender.preprocessing import StandardScaler

    X, y = iris()
    for name, C, columns in (("a", 1.0, [0, 1]), ("b", 0.1, [0, 2])):
        scale = ColumnTransformer([("scaled", StandardScaler(), columns)], remainder="passthrough")
        aprender.save(make_pipeline(scale, LogisticRegression(C=C, max_iter=1000)).fit(X, y), tmp_path / f"{name}.apr")
    result = cli("diff", tmp_path / "a.apr", tmp_path / "b.apr", "--json").json
    changed = {m["key"]: (m["a"], m["b"]) for m in result["metadata"]}
    assert changed["model.params.steps.1.logisticregression.params.C"] == (1.0, 0.1)
    assert changed["model.params.steps.0.columntransformer.params.transformers.0.2"] == ([0, 1], [0, 2])
    assert all(len(str(a)) < 40 and len(str(b)) < 40 for a, b in changed.values())  # leaves, not whole subtrees


def test_diff_quantized_and_tolerance(cli, files, model, tmp_path: Path) -> None:
    quantized = tmp_path / "q.apr"
    cli("quantize", files["apr"], "--type", "q8_0", "-o", quantized)
    result = cli("diff", files["apr"], quantized, "--json").json
    row = next(t for t in result["tensors"] if t["name"] == "coefficients")
    assert (row["dtype_a"], row["dtype_b"], row["status"]) == ("float64", "q8_0", "dtype")
    restored = aprender.load(quantized).coef_
    assert row["max_abs_diff"] == float(np.abs(model.coef_ - restored).max())
    assert [m["key"] for m in result["metadata"]][-1] == "quantization.type"
    hf_copy = tmp_path / "hf2.safetensors"
    tensors = aprender.format.safetensors.load_tensors(files["hf"])
    tensors["embed.weight"] = tensors["embed.weight"] + np.float16(0.001)
    save_foreign_safetensors(tensors, str(hf_copy), metadata={"format": "pt"})
    assert cli("diff", files["hf"], hf_copy).code == 1
    assert cli("diff", files["hf"], hf_copy, "--atol", "0.01").code == 0


# -- the seed's flow, and the installed scripts --------------------------------------------


def test_seed_flow_fit_save_convert_quantize_inspect_validate(cli, tmp_path: Path) -> None:
    import onnxruntime as ort

    X, y = iris()
    fitted = LogisticRegression(max_iter=1000).fit(X, y)
    fitted.save_safetensors(tmp_path / "model.safetensors")
    for source, target in (("safetensors", "gguf"), ("safetensors", "onnx"), ("gguf", "apr")):
        run = cli("convert", tmp_path / f"model.{source}", "--format", target, "--output", tmp_path / f"model.{target}")
        assert run.code == 0, run.err
    assert cli("quantize", tmp_path / "model.apr", "--type", "q4_0", "--output", tmp_path / "model-q4.apr").code == 0
    report = cli("inspect", tmp_path / "model-q4.apr", "--quantization", "--json").json
    assert report["quantization"]["type"] == "q4_0"
    assert report["class"] == "aprender.linear_model.LogisticRegression"
    for name in ("model.safetensors", "model.gguf", "model.onnx", "model.apr", "model-q4.apr"):
        assert cli("validate", tmp_path / name).code == 0, name
    assert_identical_outputs(fitted, aprender.load(tmp_path / "model.gguf"), X)
    session = ort.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(["label"], {"X": X.astype(np.float32)})[0], fitted.predict(X))
    assert (aprender.load(tmp_path / "model-q4.apr").predict(X) == fitted.predict(X)).mean() > 0.9


def _script(name: str) -> str:
    path = Path(sys.executable).parent / name
    assert path.is_file(), f"console script {name} is not installed: run `pip install -e .`"
    return str(path)


def test_installed_apr_script(files, tmp_path: Path) -> None:
    done = subprocess.run([_script("apr"), "inspect", str(files["apr"]), "--json"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model_type"]["name"] == "LOGISTIC_REGRESSION"
    bad = flip_byte(files["apr"], tmp_path / "bad.apr", 70)
    done = subprocess.run([_script("aprender"), "validate", str(bad)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("invalid: ") and done.stderr.count("\n") == 1


def test_python_dash_m_aprender(files, tmp_path: Path) -> None:
    out = tmp_path / "m.gguf"
    done = subprocess.run([sys.executable, "-m", "aprender", "convert", str(files["safetensors"]), "-o", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:4] == b"GGUF"
    done = subprocess.run([sys.executable, "-m", "aprender", "convert", str(files["safetensors"]), "-o", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "exists; pass --force" in done.stderr


@pytest.mark.parametrize("command", [
    ("inspect", "{bad}", "--json"),
    ("convert", "{bad}", "--format", "apr", "--output", "{out}", "--json"),
    ("import", "{bad}", "--output", "{out}", "--json"),
    ("validate", "{bad}", "--json"),
    ("verify", "{bad}", "--json"),
    ("quantize", "{bad}", "--type", "q8_0", "--output", "{out}", "--json"),
    ("diff", "{bad}", "{bad}", "--json"),
], ids=lambda c: c[0])
def test_json_failures_print_one_error_object(cli, tmp_path: Path, command: tuple[str, ...]) -> None:
    bad = tmp_path / "bad.apr"
    bad.write_bytes(b"APR\x00" + bytes(100))
    args = [a.format(bad=bad, out=tmp_path / "out.apr") for a in command]
    run = cli(*args)
    assert run.code == 1
    error = run.json["error"]
    assert set(error) == {"type", "message"} and error["type"] in {"FormatError", "ChecksumMismatch",
                                                                 "UnsupportedVersion", "SignatureInvalid"}
    assert str(bad) in error["message"]


def test_help_and_docs_agree_on_onnx(cli) -> None:
    help_text = " ".join(cli("--help").out.split())
    # the top-level help names the suffixes from the table (no backend imported); convert's names the exports
    assert ".safetensors, .apr, .gguf or .onnx; an export-only format (named in 'convert --help') is written by " \
           "convert and read by inspect and validate" in help_text
    assert "(onnx: f32 or f64 export)" in " ".join(cli("convert", "--help").out.split())
    docs = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    assert "`.onnx` is\n  written by `convert` and read by `inspect` and `validate`" in docs


@pytest.mark.parametrize("name", ["hf", "llama", "apr", "gguf", "safetensors"])
def test_library_and_cli_validate_agree(cli, files, name: str) -> None:
    """One meaning of valid: what aprender.validate reports is what apr validate prints, foreign files included."""
    report = aprender.validate(files[name])
    run = cli("validate", files[name], "--json")
    assert run.code == 0
    assert run.json["valid"] and run.json["checks"] == list(report.checks) and report.complete
    assert report.model is (name not in ("hf", "llama"))
    if not report.model:
        assert report.checks[-1] == "tensors read (no aprender model: raw tensors)"


def test_convert_a_dataframe_pipeline_to_onnx_with_and_without_sample_rows(cli, tmp_path: Path) -> None:
    import onnx
    import onnxruntime as ort
    import pandas as pd

    from aprender.compose import ColumnTransformer
    from aprender.format.onnx import input_feed
    from aprender.pipeline import make_pipeline
    from aprender.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.normal(40, 9, 60), "home city": rng.choice(["Lyon", "Nice"], 60)})
    target = rng.integers(0, 2, 60)
    columns = ColumnTransformer([("n", StandardScaler(), ["age"]), ("c", OneHotEncoder(), ["home city"])])
    model = make_pipeline(columns, LogisticRegression()).fit(frame, target)
    aprender.save(model, tmp_path / "frame.apr")
    frame.assign(target=target).to_csv(tmp_path / "rows.csv", index=False)  # an extra column, as data files have
    typed = cli("convert", tmp_path / "frame.apr", "--format", "onnx", "-o", tmp_path / "typed.onnx")
    assert typed.code == 0, typed.err  # the fitted encoder and scaler type the columns
    run = cli("convert", tmp_path / "frame.apr", "--format", "onnx", "-o", tmp_path / "frame.onnx",
              "--sample", tmp_path / "rows.csv")
    assert run.code == 0, run.err
    for name, source in (("typed", "synthesized"), ("frame", "sample+synthesized")):
        onx = onnx.load(tmp_path / f"{name}.onnx")
        assert [i.name for i in onx.graph.input] == ["age", "home city"]
        assert json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])["source"] == source
        labels, _ = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, input_feed(onx, frame))
        assert np.array_equal(labels, model.predict(frame))
    wrong = cli("convert", tmp_path / "frame.apr", "--format", "apr", "-o", tmp_path / "x.apr",
                "--sample", tmp_path / "rows.csv")
    assert wrong.code == 2 and "ONNX inputs only" in wrong.err


@pytest.mark.parametrize("tag", [["dict"], {"t": "tensor"}, 7])
def test_diff_walks_a_node_whose_tag_is_not_a_string(cli, files, tmp_path: Path, tag) -> None:
    """A file writes the codec's ``__t__`` tags: a list, dict or number there is walked, never hashed."""
    import copy

    from aprender.codec import ModelState
    from aprender.format import safetensors as st

    state = st.read_state(files["safetensors"])
    meta = copy.deepcopy(state.meta)
    meta["model"]["params"]["C"] = {"__t__": tag, "v": 2.0}
    path = tmp_path / "tagged.safetensors"
    path.write_bytes(st.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))
    run = cli("diff", files["safetensors"], path, "--json")
    assert run.code == 1, run.out
    keys = {m["key"] for m in run.json["metadata"]}
    assert any(key.startswith("model.params.C") for key in keys), keys
