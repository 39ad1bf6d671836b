"""The README's Quickstart runs as written, in a fresh directory, and its CLI lines open what it wrote."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"

#: Makes the optional ONNX packages unimportable, as after a plain ``pip install .``.
_WITHOUT_ONNX = "import sys\nsys.modules.update(dict.fromkeys(['onnx', 'skl2onnx', 'onnxruntime']))\n"


def _quickstart() -> tuple[list[str], list[str]]:
    text = README.read_text()
    section = text[text.index("## Quickstart"):]
    section = section[: section.index("\n## ", 1)]
    python = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    console = [line[2:] for block in re.findall(r"```console\n(.*?)```", section, flags=re.S)
               for line in block.splitlines() if line.startswith("$ ")]
    return python, console


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_quickstart_runs_verbatim_with_the_core_install_then_the_onnx_extra(tmp_path: Path) -> None:
    python, console = _quickstart()
    assert len(python) == 2 and "save_onnx" in python[1] and "onnx" not in python[0].replace("iris", "")
    core = _run([sys.executable, "-c", _WITHOUT_ONNX + python[0]], tmp_path)
    assert core.returncode == 0, core.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iris-q8.gguf", "iris.apr", "iris.safetensors"]
    # the ONNX line, run after the first block in one process as a reader would paste them
    onnx = _run([sys.executable, "-c", python[0] + python[1]], tmp_path)
    assert onnx.returncode == 0, onnx.stderr
    assert (tmp_path / "iris.onnx").stat().st_size > 0
    assert console == ["apr inspect iris.apr", "apr convert iris.safetensors --format gguf --output iris.gguf"]
    for line in console:
        run = _run([sys.executable, "-m", "aprender", *line.split()[1:]], tmp_path)
        assert run.returncode == 0, run.stderr
    assert "LogisticRegression" in _run([sys.executable, "-m", "aprender", "inspect", "iris.apr"], tmp_path).stdout
    assert (tmp_path / "iris.gguf").exists()


def test_quickstart_example_leaves_the_files_the_cli_lines_open(tmp_path: Path) -> None:
    script = Path(__file__).parent.parent / "examples" / "quickstart.py"
    result = _run([sys.executable, str(script)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "predictions bit-identical: True" in result.stdout
    assert {"iris.safetensors", "iris.apr", "iris-q8.gguf", "iris.onnx"} <= {p.name for p in tmp_path.iterdir()}
    run = _run([sys.executable, "-m", "aprender", "inspect", "iris.apr"], tmp_path)
    assert run.returncode == 0 and "LogisticRegression" in run.stdout
