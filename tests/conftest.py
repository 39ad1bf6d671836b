"""Test configuration shared by every test module."""

from __future__ import annotations

import os
import sys

import pytest
from threadpoolctl import threadpool_limits

# pytest-xdist already runs one worker per core: BLAS and OpenMP threads on top of
# that oversubscribe the machine and made some fits 10-20x slower.
threadpool_limits(1)

# tests/ holds shared helpers (zoo.py) imported as plain modules.
sys.path.insert(0, os.path.dirname(__file__))

from zoo import CASES, Case  # noqa: E402 -- needs the sys.path entry above


@pytest.fixture
def files_seem_longer(monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.fstat`` reports every file 10 bytes longer than it is: a file cut short while it is read."""
    real = os.fstat

    class Grown:
        def __init__(self, st: os.stat_result) -> None:
            self.st_mode, self.st_size = st.st_mode, st.st_size + 10

    monkeypatch.setattr(os, "fstat", lambda fd: Grown(real(fd)))


@pytest.fixture
def dead_pid() -> int:
    """The process id of a process that has exited."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


@pytest.fixture(params=CASES, ids=lambda c: c.id)
def case(request: pytest.FixtureRequest) -> Case:
    """Each fitted model of the zoo in turn."""
    return request.param


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """An empty selection (``-k`` matching nothing) is not a failure."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture(scope="session")
def serve_repository(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The small model repository the ``aprender serve`` tests share (serve_helpers.build_repository).

    Tests that change it work on a copy.
    """
    from serve_helpers import build_repository

    root = tmp_path_factory.mktemp("serve-repo")
    return root, build_repository(root)


@pytest.fixture(scope="module")
def serve_client(serve_repository: tuple):
    """An httpx client of a server on the whole shared repository (64 KiB body limit), one per module."""
    import httpx
    from serve_helpers import serving

    from aprender.serve import ServeConfig

    root, _ = serve_repository
    with serving(ServeConfig((str(root),), max_body_size=64 << 10)) as url, httpx.Client(base_url=url) as client:
        yield client
