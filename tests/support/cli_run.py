"""Driving the ``aprender`` command line in-process: ``invoke(capsys, *args)`` returns a :class:`Run`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aprender.cli import main

__all__ = ["Run", "flip_byte", "invoke", "one_error_line"]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def invoke(capsys: pytest.CaptureFixture[str], *args: Any) -> Run:
    """Run ``main`` on ``args`` and capture its exit code and output."""
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


def one_error_line(run: Run) -> str:
    """The single stderr line of a failed command (no traceback)."""
    lines = run.err.strip().splitlines()
    assert len(lines) == 1, run.err
    assert "Traceback" not in run.err
    return lines[0]


def flip_byte(path: Path, target: Path, offset: int) -> Path:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    target.write_bytes(bytes(data))
    return target
