"""A save killed with SIGKILL leaves the old file loadable and no temporary file behind.

A child process saves a large model over and over to the same destination; the
parent waits until the child has a temporary file open in the destination folder
(the save is under way), kills it with SIGKILL, and checks the folder. On Linux,
.apr and GGUF saves write to an unnamed ``O_TMPFILE`` file, so nothing is left even
before the next save; the ``safetensors`` package, which streams large files like
this one, writes a named temporary of its own, which the next save of the same
destination removes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import aprender
from aprender.preprocessing import StandardScaler

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="O_TMPFILE and /proc are Linux's")

_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import aprender
    from aprender.preprocessing import StandardScaler

    X = np.random.default_rng(1).normal(size=(2, 1_000_000))  # 24 MB of fitted state
    model = StandardScaler().fit(X)
    print("ready", flush=True)
    while True:
        aprender.save(model, sys.argv[1])
""")


def _writing(pid: int, folder: Path, target: Path) -> bool:
    """True while process ``pid`` has a file open in ``folder`` other than ``target``."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        links = [os.readlink(fds / fd) for fd in os.listdir(fds)]
    except OSError:
        return False
    return any(link.startswith(f"{folder}/") and link != str(target) for link in links)


def _small() -> StandardScaler:
    return StandardScaler().fit(np.arange(6.0).reshape(3, 2))


@pytest.mark.parametrize("suffix", [".apr", ".gguf", ".safetensors"])
def test_killed_save_keeps_the_old_file_and_leaves_no_temporary(suffix: str, tmp_path) -> None:
    target = tmp_path / f"model{suffix}"
    aprender.save(_small(), target)
    old = target.read_bytes()
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        while not _writing(child.pid, tmp_path, target):
            assert child.poll() is None, "the saving process died by itself"
            time.sleep(0.001)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    # The destination holds the old file or a complete new one, never a partial write.
    loaded = aprender.load(target)
    if target.read_bytes() == old:
        np.testing.assert_array_equal(loaded.mean_, _small().mean_)
    else:
        assert loaded.mean_.shape == (1_000_000,)
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p != target)
    if suffix != ".safetensors":
        assert leftovers == []
    aprender.save(_small(), target)  # the next save of the destination removes what a killed one left
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]
    np.testing.assert_array_equal(aprender.load(target).scale_, _small().scale_)


def test_temporaries_of_live_writers_and_other_destinations_are_kept(tmp_path, dead_pid) -> None:
    from aprender.format._io import remove_stale_temporaries

    target = tmp_path / "m.apr"
    live = tmp_path / f".m.apr.{os.getpid()}.0123456789ab.tmp"  # this process is alive
    other = tmp_path / ".other.apr.999999999.0123456789ab.tmp"  # another destination
    lookalike = tmp_path / ".m.apr.notapid.tmp"
    for p in (live, other, lookalike):
        p.write_bytes(b"x")
    stale = tmp_path / f".m.apr.{dead_pid}.0123456789ab.tmp"
    stale.write_bytes(b"partial")
    assert remove_stale_temporaries(target) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (live, other, lookalike))
