"""``write_atomic``: every byte in order despite short writes, and nothing lost when a save fails."""

from __future__ import annotations

import os
import stat
import time

import numpy as np
import pytest

import aprender
from aprender.format import _io
from aprender.preprocessing import StandardScaler


def _model() -> StandardScaler:
    return StandardScaler().fit(np.arange(12.0).reshape(4, 3))


def test_short_writes_are_resumed_where_they_stopped(tmp_path, monkeypatch) -> None:
    # writev may write less than asked (a signal, a pipe, a file past 2 GiB); every byte must still land once.
    real = os.writev
    calls = []

    def short(fd, buffers):
        calls.append(len(buffers))
        return real(fd, [bytes(memoryview(b"".join(bytes(b) for b in buffers))[:5])])

    monkeypatch.setattr(os, "writev", short)
    chunks = [b"header", np.arange(6, dtype=np.int16), b"", memoryview(b"tail-bytes"), np.float64(2.5)]
    target = tmp_path / "raw.bin"
    _io.write_atomic(target, chunks)
    expected = b"header" + np.arange(6, dtype=np.int16).tobytes() + b"tail-bytes" + np.float64(2.5).tobytes()
    assert target.read_bytes() == expected
    assert len(calls) == -(-len(target.read_bytes()) // 5)


def test_more_buffers_than_one_writev_takes(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(_io, "_IOV_MAX", 3)
    chunks = [bytes([i]) * (i + 1) for i in range(10)]
    _io.write_atomic(tmp_path / "many.bin", chunks)
    assert (tmp_path / "many.bin").read_bytes() == b"".join(chunks)


@pytest.mark.parametrize("suffix", [".apr", ".safetensors"])
def test_a_write_failing_half_way_keeps_the_old_file(suffix: str, tmp_path, monkeypatch) -> None:
    target = tmp_path / f"m{suffix}"
    aprender.save(_model(), target)
    before = target.read_bytes()

    def disk_full(fd, chunks):
        os.write(fd, b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_io, "_write_all", disk_full)
    with pytest.raises(OSError, match="No space left"):
        aprender.save(StandardScaler().fit([[1.0], [2.0]]), target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_failed_rename_leaves_no_temporary(tmp_path, monkeypatch) -> None:
    target = tmp_path / "m.apr"
    aprender.save(_model(), target)
    before = target.read_bytes()

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", dst)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError):
        aprender.save(StandardScaler().fit([[1.0], [2.0]]), target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_the_saved_file_has_the_umask_mode(tmp_path) -> None:
    target = tmp_path / "m.safetensors"
    aprender.save(_model(), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_io._UMASK


def test_saving_over_a_file_in_the_folder_path_names_the_folder(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match=f"the folder '{blocker}' is not a directory"):
        aprender.save(_model(), blocker / "m.apr")
    assert blocker.read_bytes() == b"x"


@pytest.mark.parametrize("suffix", [".apr", ".safetensors"])
def test_read_only_and_empty_arrays_are_written_from_their_memory(suffix: str, tmp_path) -> None:
    # SafeTensors takes each tensor's address: a read-only array (a model loaded with mmap=True)
    # or an empty one cannot be exported writable and takes the other way to it.
    model = _model()
    model.mean_.flags.writeable = False
    model.n_samples_seen_ = np.zeros(0, dtype=np.int64)
    target = tmp_path / f"m{suffix}"
    aprender.save(model, target)
    loaded = aprender.load(target)
    assert loaded.mean_.tobytes() == model.mean_.tobytes()
    assert loaded.n_samples_seen_.shape == (0,) and loaded.n_samples_seen_.dtype == np.int64


@pytest.fixture
def listed(monkeypatch) -> list:
    """The folders ``os.listdir`` has listed since the test began."""
    calls: list = []
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda folder: calls.append(folder) or real(folder))
    return calls


def test_the_folder_is_listed_again_only_once_it_has_changed(tmp_path, listed, dead_pid) -> None:
    # A save looks for stale temporaries of its destination; in an unchanged folder it
    # already found none, and a listdir of a large folder costs more than a small save.
    target = tmp_path / "m.apr"
    for _ in range(3):
        aprender.save(_model(), target)
    assert len(listed) == 1
    stale = tmp_path / f".m.apr.{dead_pid}.0123456789ab.tmp"  # what a killed save leaves: the folder changes
    _next_tick()
    stale.write_bytes(b"partial")
    aprender.save(_model(), target)
    assert len(listed) == 2 and not stale.exists()
    _next_tick()
    aprender.save(_model(), tmp_path / "other.apr")  # another destination has not looked yet
    assert len(listed) == 3
    aprender.save(_model(), target)  # the other save changed the folder
    assert len(listed) == 4


def _next_tick() -> None:
    # Kernels before Linux 6.13 stamp directories with the clock tick (1-10 ms): a change in
    # the same tick as the last save would leave the folder's mtime as that save recorded it.
    time.sleep(0.02)


def test_a_live_writers_temporary_keeps_the_folder_being_listed(tmp_path, listed) -> None:
    # A temporary whose writer is alive may be left behind if that writer is killed
    # later, which does not change the folder: every save must look again.
    live = tmp_path / f".m.apr.{os.getpid()}.0123456789ab.tmp"
    live.write_bytes(b"x")
    target = tmp_path / "m.apr"
    for _ in range(3):
        aprender.save(_model(), target)
    assert len(listed) == 3 and live.exists()


@pytest.mark.parametrize("o_tmpfile", [True, False], ids=["O_TMPFILE", "named-temporary"])
def test_model_folders_and_cards_write_atomically_through_the_one_helper(o_tmpfile: bool, tmp_path,
                                                                        monkeypatch) -> None:
    """save_pretrained's config.json and README.md go through format._io: umask mode, no temporary left on failure."""
    pytest.importorskip("matplotlib")
    if not o_tmpfile:
        monkeypatch.setattr(_io, "_LINKAT", None)  # the path of systems without O_TMPFILE
    monkeypatch.setattr(_io, "_MODE", 0o640)  # as under umask 027: every file must follow the helper's mode
    folder = tmp_path / "line"
    aprender.save_pretrained(_model(), folder)
    for name in ("config.json", "README.md", "model.safetensors"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o640, name
    config = (folder / "config.json").read_bytes()
    real = _io._write_all

    def config_disk_full(fd, chunks):
        chunks = list(chunks)
        if not bytes(chunks[0]).startswith(b"{"):  # the weights (their 8-byte header length comes first)
            return real(fd, chunks)
        os.write(fd, b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_io, "_write_all", config_disk_full)
    with pytest.raises(OSError, match="No space left"):
        aprender.save_pretrained(StandardScaler().fit([[1.0], [2.0]]), folder)
    assert (folder / "config.json").read_bytes() == config
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "config.json", "model.safetensors"]
