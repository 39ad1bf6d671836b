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


ROOT = README.parent
#: The pages the README's detail moved to (issue 40): each must be linked from the README.
MOVED = ("docs/guide.md", "docs/estimators.md", "docs/integrations.md", "docs/development.md")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_fits_one_screen_and_leads_with_the_pitch() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < 200
    pitch = " ".join(lines[:10])
    for claim in ("pickle", "scikit-learn", "SafeTensors", ".apr", "GGUF", "ONNX", "aprender serve", "safe",
                  "bit-identically"):
        assert claim in pitch, claim


def test_the_readme_commands_are_the_quickstart_and_what_ci_runs() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks[0].strip() == "pip install . && python examples/quickstart.py"
    assert blocks[1].strip() in (ROOT / ".ci" / "run").read_text().splitlines()  # verbatim, as CI runs it


def test_every_link_of_the_readme_and_the_moved_pages_resolves() -> None:
    """Nothing the README used to hold is lost: each moved page is linked, and every link and anchor exists."""
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    assert set(MOVED) <= {link.partition("#")[0] for link in links}
    for page in [README, *(ROOT / p for p in MOVED)]:
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if "://" in link:
                continue
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            assert path.exists(), f"{page.name}: {link}"
            if anchor and path.suffix == ".md":
                anchors = {_anchor(h) for h in re.findall(r"^#+ (.*)$", path.read_text(), flags=re.M)}
                assert anchor in anchors, f"{page.name}: {link}"
