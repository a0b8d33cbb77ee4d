"""Reading files of the state: regular files only, bounded in size, never through a link or a FIFO.

Every failure raises: :class:`UnsafeFile` (exit 4, naming the file) for what is not a regular
file or is over its limit, :class:`StoreError` otherwise (with :data:`MODE_HINT` when
permission is denied); a missing file raises ``FileNotFoundError``.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from ..core.limits import MAX_OBJECT_BYTES, MAX_SMALL_JSON_BYTES
from ..errors import IntegrityError, StoreError, UnsafeFile

MODE_HINT = (
    "files are written with the modes of SYMCC_ULFM_SNAPSHOT_FILE_MODE (state) and "
    "SYMCC_SHARED_CORPUS_FILE_MODE (corpus), default 0600/0644; when ranks run as different users on a "
    "shared state directory, set them (e.g. 0660 with a shared group) so that every rank can read them"
)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)



def read_bytes(path: Path | str, limit: int = MAX_OBJECT_BYTES) -> bytes:
    """Read a regular file of at most ``limit`` bytes, refusing anything else before reading.

    The open neither follows a symbolic link at the final component nor blocks on a FIFO; a
    link, a FIFO, a device, a directory or a file over ``limit`` is :class:`UnsafeFile` (exit 4,
    naming it). A missing file raises ``FileNotFoundError`` (callers often expect that); every
    other failure raises :class:`StoreError`.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(f"{path} is a symbolic link; refusing to follow it") from exc
        if exc.errno == errno.EACCES:
            raise StoreError(f"cannot read {path}: permission denied; {MODE_HINT}") from exc
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        check_regular(info, path, limit)
        data = read_to_end(fd, info.st_size, limit + 1)
        if len(data) > limit:
            raise UnsafeFile(f"{path} grew past the limit of {limit} bytes while it was read")
        return data
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def check_regular(info: os.stat_result, path: Path | str, limit: int) -> None:
    """Refuse (:class:`UnsafeFile`) an open file that is not a regular file of at most ``limit`` bytes."""
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{path} is not a regular file ({_kind(info.st_mode)}); refusing to read it")
    if info.st_size > limit:
        raise UnsafeFile(f"{path} has {info.st_size} bytes, more than the limit of {limit}")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a special file"


def read_to_end(fd: int, expected: int, limit: int | None = None) -> bytes:
    """The rest of the open regular file ``fd`` (at most ``limit`` bytes), read in requests one
    byte larger than ``expected``: a short read of a regular file is its end, so a file of the
    expected size takes one ``read`` instead of a second one that returns nothing."""
    chunks, total = [], 0
    while limit is None or total < limit:
        want = min(max(expected - total + 1, 4096), 1 << 20)
        if limit is not None:
            want = min(want, limit - total)
        chunk = os.read(fd, want)
        chunks.append(chunk)
        total += len(chunk)
        if len(chunk) < want:
            break
    return b"".join(chunks)


def read_json_object(path: Path | str) -> dict | None:
    """A small JSON object file (``outcome.json``, ``endpoint.json``): None while it is absent;
    one that is not a JSON object is an :class:`IntegrityError` naming it."""
    try:
        value = json.loads(read_bytes(path, limit=MAX_SMALL_JSON_BYTES))
    except FileNotFoundError:
        return None
    except (ValueError, RecursionError):
        raise IntegrityError(f"{path} is not valid JSON") from None
    if not isinstance(value, dict):
        raise IntegrityError(f"{path} is not a JSON object")
    return value
