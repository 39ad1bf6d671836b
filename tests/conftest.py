"""Test configuration shared by every test module."""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import version

# Before numpy is imported (pytest-xdist's workers inherit these): one floating-point code path on
# every x86-64 machine. OpenBLAS's AVX-512 kernels and numpy's AVX-512 loops round differently from
# the AVX2 ones, and OpenBLAS's sum in an order that follows memory alignment: on such a CPU even a
# copy of the same input changes the last bits of a prediction (pickle's loads included). The golden
# files' outputs and the bit-identical roundtrips are checked at the AVX2 level, which every such CI
# machine has; docs/compatibility.md says what this means for users.
if platform.machine().lower() in ("x86_64", "amd64"):
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
    # numpy names its AVX-512 targets X86_V4, AVX512_ICL and AVX512_SPR from 2.4 on, AVX512F to
    # AVX512_ICL before (the lower bound's 2.2), and warns of a name it does not dispatch on.
    _numpy = tuple(int(part) for part in version("numpy").split(".")[:2])
    os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512_ICL AVX512_SPR" if _numpy >= (2, 4) else
                          "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL")

import pytest
from threadpoolctl import threadpool_limits

# tests/support/ holds the helpers test modules share (zoo.py, state_edit.py, ...), imported
# as plain modules; no test module imports another.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "support"))

from zoo import CASES, Case  # needs the sys.path entry above

# pytest-xdist already runs one worker per core: BLAS and OpenMP threads on top of
# that oversubscribe the machine and made some fits 10-20x slower. The limit reaches
# only libraries already loaded: zoo's imports load numpy's, scipy's and scikit-learn's.
threadpool_limits(1)


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
