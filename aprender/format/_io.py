"""aprender's file helpers, used by every backend and beyond: atomic writes, checked opens, file digests.

The model folders (``save_pretrained``), model cards, the MLflow flavor and the
server's repository use these too: one atomic write (honouring the umask, leaving no
temporary file behind) and one SHA-256 of a file.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from aprender.exceptions import FormatError

__all__ = ["existing_file", "fill", "open_model_file", "sha256_file", "write_atomic", "write_path_atomic"]

# Saved models get the usual mode the umask allows. Read once: os.umask can only be
# queried by setting it, which is not thread-safe.
_UMASK = os.umask(0)
os.umask(_UMASK)
_MODE = 0o666 & ~_UMASK
_AT_FDCWD, _AT_SYMLINK_FOLLOW = -100, 0x400


def _libc_linkat() -> Any:
    """Linux's ``linkat`` (os.link calls link(2), which cannot name an O_TMPFILE file), or None."""
    if sys.platform != "linux" or not hasattr(os, "O_TMPFILE"):
        return None
    try:
        linkat = ctypes.CDLL(None, use_errno=True).linkat
    except (OSError, AttributeError):
        return None
    linkat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    return linkat


_LINKAT = _libc_linkat()


def _link_fd(fd: int, name: str) -> None:
    """Give the unnamed O_TMPFILE file ``fd`` the name ``name``."""
    if _LINKAT(_AT_FDCWD, f"/proc/self/fd/{fd}".encode(), _AT_FDCWD, os.fsencode(name), _AT_SYMLINK_FOLLOW) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), name)


def _temporary_name(target: str) -> str:
    """``.{name}.{pid}.{random}.tmp`` beside ``target``: whose it is and for which destination."""
    folder, name = os.path.split(target)
    return os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def remove_stale_temporaries(target: str | os.PathLike) -> list[Path]:
    """Remove temporaries of ``target`` left by saves that were killed; return what was removed.

    A temporary is stale only when both hold: the process named in it is gone, and
    nobody holds the lock every writer keeps on its temporary (so a writer in another
    PID namespace sharing the folder is left alone). Only names of the exact form
    :func:`_temporary_name` gives for this destination are considered.
    """
    return _scan_temporaries(os.fspath(target))[0]


def _scan_temporaries(target: str) -> tuple[list[Path], bool]:
    """Remove the stale temporaries of ``target``; return them, and whether a live writer's were seen."""
    removed: list[Path] = []
    live = False
    folder, base = os.path.split(target)
    prefix = f".{base}."
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return removed, live
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid, _, token = name[len(prefix) : -len(".tmp")].partition(".")
        if not (pid.isdigit() and len(token) == 12):
            continue
        if _pid_alive(int(pid)):
            live = True
            continue
        stale = Path(folder, name)
        try:
            fd = os.open(stale, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _remove(stale)  # flock is released with the descriptor
            removed.append(stale)
        except OSError:
            live = True
        finally:
            os.close(fd)
    return removed, live


#: Destinations this process saved whose folder then held no temporary of theirs, with the
#: folder's mtime right after that save. While the mtime is unchanged nothing was created
#: or removed in the folder since, so the next save there need not list it: a listdir
#: costs milliseconds in a folder of thousands of files, more than the whole small save.
#: Where directory timestamps are coarse (Linux before 6.13 gives them the clock tick,
#: 1-10 ms), a temporary left in the same tick as this process's save is found only once
#: something else changes the folder: a stray file, never a damaged model.
_CLEAN: dict[str, int] = {}
_CLEAN_LIMIT = 4096


def _folder(target: str) -> str:
    return os.path.dirname(target) or "."


def _before_save(target: str) -> bool:
    """Remove ``target``'s stale temporaries, unless its folder is unchanged since a clean save.

    Returns whether the folder holds no temporary of ``target`` now, so that the save
    about to be made can be remembered in :data:`_CLEAN` (:func:`_after_save`).
    """
    known = _CLEAN.pop(target, None)
    if known is not None:
        try:
            if os.stat(_folder(target)).st_mtime_ns == known:
                return True
        except OSError:
            pass
    return not _scan_temporaries(target)[1]


def _after_save(target: str, clean: bool) -> None:
    if not clean:
        return
    try:
        mtime = os.stat(_folder(target)).st_mtime_ns
    except OSError:
        return
    if len(_CLEAN) >= _CLEAN_LIMIT:
        _CLEAN.clear()
    _CLEAN[target] = mtime


def _open_temporary(target: str) -> tuple[int, str | None]:
    """Open a temporary file for ``target`` in its folder: ``(fd, name)``.

    On Linux the file is created with ``O_TMPFILE``: it has no name (``name`` is
    None) until :func:`_commit` links it, so a killed process leaves nothing behind.
    Elsewhere (or on filesystems without ``O_TMPFILE``) it is a named file that the
    next save of the same destination removes (:func:`remove_stale_temporaries`).
    The caller locks it (every writer holds the lock until its temporary is renamed)
    and closes it.
    """
    if _LINKAT is not None:
        try:
            return os.open(_folder(target), os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, _MODE), None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise
    name = _temporary_name(target)
    return os.open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600), name


def _commit(fd: int, name: str | None, target: str) -> None:
    if name is None:  # an O_TMPFILE file, created with _MODE: give it a (locked, marked) name, then rename it
        name = _temporary_name(target)
        _link_fd(fd, name)
    else:  # a named temporary, created private until complete
        os.fchmod(fd, _MODE)
    try:
        os.replace(name, target)
    except BaseException:
        _unlink(name)
        raise


def _unlink(name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name)


def _check_destination(target: str) -> None:
    """Raise the error that names what is wrong with ``target`` as a destination: its folder or itself."""
    folder = _folder(target)
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise FileNotFoundError(f"cannot save '{target}': the folder '{folder}' {what}") from None
    if os.path.isdir(target):
        raise IsADirectoryError(f"cannot save to '{target}': it is a directory; name a file in it") from None


def _target(path: str | os.PathLike) -> str:
    """The destination of a save, once it is known to be a file in an existing folder; stale temporaries of
    it are removed."""
    target = os.fspath(path)
    _check_destination(target)
    remove_stale_temporaries(target)
    return target


#: Buffers one ``writev`` call takes at most (POSIX's minimum for IOV_MAX is 16; Linux allows 1024).
_IOV_MAX = 1024


def _write_all(fd: int, chunks: Iterable[Any]) -> None:
    """Write every buffer of ``chunks`` to ``fd``, in order, in as few system calls as ``writev`` allows."""
    views = [view for view in (memoryview(chunk).cast("B") for chunk in chunks) if view.nbytes]
    i = 0
    while i < len(views):
        written = os.writev(fd, views[i : i + _IOV_MAX])
        while written:  # skip what was written: whole buffers, then the start of a partly written one
            size = views[i].nbytes
            if written < size:
                views[i] = views[i][written:]
                break
            written -= size
            i += 1


def write_atomic(path: str | os.PathLike, chunks: Iterable[Any]) -> None:
    """Write the buffers ``chunks`` (bytes, memoryviews, C-contiguous arrays) to ``path`` atomically.

    Readers see the old file or the complete new one, never a partial write, and an
    exception or a killed process leaves the old file untouched; see
    :func:`write_path_atomic` for how. This is the small-model path, so it makes no
    system call a successful save does not need: a missing folder or a directory in
    the way is looked into only once the open or the rename has failed, and the
    buffers go out through ``writev`` straight from their memory, without a file object.
    """
    target = os.fspath(path)
    clean = _before_save(target)
    _through_temporary(target, lambda fd, name: _write_all(fd, chunks))
    _after_save(target, clean)


def write_path_atomic(path: str | os.PathLike, write: Callable[[Path], None], *, own_temporary: bool = False) -> None:
    """Call ``write`` with a path to write; once it returns, the file atomically replaces ``path``.

    Readers see the old file or the complete new one, never a partial write, and
    an exception or a killed process leaves the old file untouched. On Linux the
    path given is ``/proc/self/fd/N`` of an unnamed ``O_TMPFILE`` file in the
    destination folder, so a save killed at any point leaves no temporary file
    behind. Writers that make their own temporary file and rename it (the
    ``safetensors`` package) pass ``own_temporary=True`` and get a path inside a
    private folder beside the destination instead. Either way, temporaries of the
    same destination left by killed processes are removed first. The data is not
    fsync'ed (pickle, joblib and safetensors do not either; it would make saving
    a large model several times slower), so surviving a power cut is left to the
    filesystem's rename-over-replace ordering. Code that has its bytes in memory uses
    :func:`write_atomic`, which spares opening the temporary twice.
    """
    target = _target(path)
    if own_temporary:
        with _private_folder(target) as private:
            inner = private / os.path.basename(target)
            write(inner)
            os.chmod(inner, _MODE)
            os.replace(inner, target)
        return
    _through_temporary(target, lambda fd, name: write(Path(f"/proc/self/fd/{fd}") if name is None else Path(name)))


def _through_temporary(target: str, fill: Callable[[int, str | None], None]) -> None:
    """Open and lock a temporary for ``target``, let ``fill(fd, name)`` write it, then rename it over ``target``.

    If anything fails the temporary is gone and ``target`` untouched; a failed open or
    rename is explained by :func:`_check_destination` when the folder or the target is
    the cause.
    """
    try:
        fd, name = _open_temporary(target)
    except OSError:
        _check_destination(target)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        fill(fd, name)
        try:
            _commit(fd, name, target)
        except OSError:
            _check_destination(target)
            raise
    except BaseException:
        if name is not None:
            _unlink(name)
        raise
    finally:
        os.close(fd)


def _remove(temporary: Path) -> None:
    """Remove a temporary file, or a private folder and the files in it."""
    if temporary.is_dir() and not temporary.is_symlink():
        for leftover in temporary.iterdir():
            leftover.unlink(missing_ok=True)
        temporary.rmdir()
    else:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def _private_folder(target: str) -> Iterator[Path]:
    """A locked folder named like a temporary of ``target``, removed with whatever it holds."""
    folder = Path(_temporary_name(target))
    folder.mkdir(mode=0o700)
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield folder
    finally:
        _remove(folder)
        os.close(fd)


def fill(fd: int, view: memoryview, offset: int, where: str) -> None:
    """Read ``len(view)`` bytes of ``fd`` from ``offset`` into ``view``; FormatError if the file ends first.

    Positional reads (``preadv``), so several threads can fill parts of one buffer from
    one descriptor. A read may return less than asked (Linux stops one at about 2 GiB).
    """
    pos = 0
    while pos < len(view):
        n = os.preadv(fd, [view[pos:]], offset + pos)
        if not n:
            raise FormatError(f"{where}: the file changed size while being read")
        pos += n


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def existing_file(path: str | os.PathLike) -> Path:
    """``path`` as a Path; :class:`FileNotFoundError` naming it if it is not a file."""
    p = Path(path)
    if not p.is_file():
        if p.is_dir():
            raise FileNotFoundError(f"'{p}' is a directory, not a model file")
        raise FileNotFoundError(f"no such model file: '{p}'")
    return p


def open_model_file(path: str | os.PathLike) -> tuple[int, int]:
    """Open a model file for reading: its descriptor and size; :class:`FileNotFoundError` names it.

    A bare descriptor, one ``open`` and one ``fstat``: a file object would cost a small
    model's load a tenth of what pickle needs for all of it. The caller closes ``fd``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except IsADirectoryError:
        raise FileNotFoundError(f"'{os.fspath(path)}' is a directory, not a model file") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"no such model file: '{os.fspath(path)}'") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):  # Linux opens a directory for reading
            raise FileNotFoundError(f"'{os.fspath(path)}' is a directory, not a model file")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size
