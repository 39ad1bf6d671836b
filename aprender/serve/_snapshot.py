"""A private, immutable copy of a model file: what the server hashes, verifies and loads.

A repository is a folder that other programs write to. Were a model served from a memory
map of its file, a copy over it (``cp other.apr model.apr``) would change what the model
answers while the server still reported the old SHA-256, and truncating the file would kill
the server with SIGBUS on its next access. So every load first copies the file into a
*sealed memfd* (Linux): anonymous memory that no process can write, grow or shrink once
sealed. The digest, the signature check and the load all read that one copy, so the
SHA-256 a model reports is always that of the bytes it answers from, and nothing written
to the repository afterwards reaches it. A memory-mapped ``.apr`` stays zero-copy: its
arrays are views of the sealed pages, shared by the forked workers.

Where memfds are not available the copy goes to a file in a private temporary folder
(mode 0700), removed when the load is done.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from aprender.exceptions import AprenderError

__all__ = ["NotAFile", "OutsideRepository", "inside", "snapshot"]

_CHUNK = 1 << 20
_SEALS = getattr(fcntl, "F_SEAL_SEAL", 0) | getattr(fcntl, "F_SEAL_SHRINK", 0) | getattr(fcntl, "F_SEAL_GROW", 0) \
    | getattr(fcntl, "F_SEAL_WRITE", 0)


class OutsideRepository(AprenderError):
    """A model path that resolves (through a symbolic link) outside the folder it is served from."""


class NotAFile(AprenderError):
    """A model path that is not a regular file when it is opened (a FIFO, a device, a socket)."""


def inside(real: str, root: Path | None) -> bool:
    """Whether the resolved path ``real`` lies in ``root`` (any path when ``root`` is None)."""
    if root is None:
        return True
    base = os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _memfd() -> int | None:
    """A sealable memfd, or None where the system has none."""
    if not (hasattr(os, "memfd_create") and _SEALS and os.path.isdir("/proc/self/fd")):
        return None
    return os.memfd_create("aprender-model", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def _discard(memfd: int | None, copy: Path) -> None:
    if memfd is None:
        shutil.rmtree(copy.parent, ignore_errors=True)
    else:
        os.close(memfd)


def _copy(source: int, target: int, size: int) -> None:
    copied = 0
    while copied < size:
        chunk = os.read(source, min(_CHUNK, size - copied))
        if not chunk:  # the file shrank while it was copied: serve what it held when opened
            break
        os.write(target, chunk)
        copied += len(chunk)


@contextlib.contextmanager
def snapshot(path: Path, root: Path | None = None) -> Iterator[Path]:
    """Copy ``path`` into sealed private memory and yield a path that reads the copy.

    The file is opened first and its resolved name checked against ``root`` through the open
    descriptor, so a symbolic link swapped in between cannot point the copy elsewhere.

    Parameters
    ----------
    path : Path
        The model file.
    root : Path, optional
        The repository folder the file must resolve inside; ``None`` allows any target.

    Raises
    ------
    OutsideRepository
        ``path`` resolves outside ``root``.
    NotAFile
        ``path`` is not a regular file (a FIFO, a device, a socket).

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "model.bin").write_bytes(b"weights")
    7
    >>> with snapshot(folder / "model.bin", folder) as copy:
    ...     (folder / "model.bin").write_bytes(b"changed")
    ...     copy.read_bytes()
    7
    b'weights'
    """
    # non-blocking: opening a FIFO waits for a writer, for ever, in a thread no one can stop; the
    # repository scan saw a regular file, but the path can be swapped before this open
    source = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(source).st_mode):  # a device reads without end; a FIFO has no size
            raise NotAFile(f"'{path}' is not a regular file; a model file must be one")
        real = os.path.realpath(f"/proc/self/fd/{source}") if os.path.isdir("/proc/self/fd") \
            else os.path.realpath(path)
        if not inside(real, root):
            raise OutsideRepository(f"'{path}' resolves outside the repository '{root}'; aprender serve follows "
                                    "no link out of it unless started with --allow-outside-links")
        memfd = _memfd()
        if memfd is None:  # a file in a private folder (mode 0700), removed after the load
            folder = tempfile.mkdtemp(prefix="aprender-model-")
            copy = Path(folder) / "model"
            target = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        else:
            copy, target = Path(f"/proc/self/fd/{memfd}"), memfd
        try:
            _copy(source, target, os.fstat(source).st_size)
            if memfd is not None:
                fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, _SEALS)
        except BaseException:
            _discard(memfd, copy)
            raise
        finally:
            if memfd is None:
                os.close(target)
    finally:
        os.close(source)
    try:
        yield copy
    finally:
        _discard(memfd, copy)
