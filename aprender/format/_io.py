"""File helpers shared by every backend: atomic writes and checked opens."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_path", "existing_file", "open_existing", "write_bytes_atomic"]

# mkstemp creates 0600 files; saved models get the usual mode the umask allows.
# Read once: os.umask can only be queried by setting it, which is not thread-safe.
_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` on success.

    The temporary file lives in the destination folder so the final
    ``os.replace`` is atomic: readers see the old file or the complete new one,
    never a partial write, and an exception or a killed process leaves the old
    file untouched. On any error the temporary file is removed. The data is not
    fsync'ed (pickle, joblib and safetensors do not either; it would make saving
    a large model several times slower), so surviving a power cut is left to
    the filesystem's rename-over-replace ordering.
    """
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        what = "is not a directory" if folder.exists() else "does not exist"
        raise FileNotFoundError(f"cannot save '{target}': the folder '{folder}' {what}")
    if target.is_dir():
        raise IsADirectoryError(f"cannot save to '{target}': it is a directory; name a file in it")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def existing_file(path: str | os.PathLike) -> Path:
    """``path`` as a Path; :class:`FileNotFoundError` naming it if it is not a file."""
    p = Path(path)
    if not p.is_file():
        if p.is_dir():
            raise FileNotFoundError(f"'{p}' is a directory, not a model file")
        raise FileNotFoundError(f"no such model file: '{p}'")
    return p


def open_existing(path: str | os.PathLike, buffering: int = -1) -> BinaryIO:
    """Open a model file for reading; :class:`FileNotFoundError` names it (or says it is a directory).

    One ``open`` call, no ``stat`` before it: on a small model's load the extra system
    call costs as much as a third of what pickle needs for the whole load.
    """
    try:
        return open(path, "rb", buffering=buffering)
    except IsADirectoryError:
        raise FileNotFoundError(f"'{os.fspath(path)}' is a directory, not a model file") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"no such model file: '{os.fspath(path)}'") from None
