"""Whether a state directory may be used: nobody but its owner can change what it holds.

``launch`` may run as root and the ranks write into the state directory by name, so a directory
that another user can write into (or rename away) lets that user point any of those writes
elsewhere: ``job-output.txt -> /etc/shadow`` would have root append to it, ``logs -> /elsewhere``
would have root's ranks write there. Before anything is written, :func:`check_state_dir`
refuses (exit 2, naming the path):

* a state directory that is a symbolic link, is not owned by the running user, or is writable
  by others; writable by its group only under the multinode contract, a set-group-ID directory
  shared by the users of one group (``docs/multinode.md``);
* an ancestor (of the resolved path) owned by someone other than the running user or root, or
  writable by group or others without the sticky bit (then anyone allowed to write it could
  rename the state directory and put a link in its place);
* an entry of the layout (``store.paths``) that is a symbolic link or not of its type: a
  directory where a file belongs, a FIFO where a log belongs.

Every file below is then opened without following a symbolic link at its last component, and
directories are created without following one (``dirs.ensure_dir``). Members of the shared
group are trusted as the multinode contract says: they run ranks on the same state.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..errors import ConfigError, StoreError, UnsafeFile
from .paths import LAYOUT_DIRS, LAYOUT_FILES, PER_RANK_DIRS
from .reads import MODE_HINT

_FIELD = "state_dir"


def check_state_dir(root: Path) -> None:
    """Refuse a state directory (existing or to be created) another user could change; see the module."""
    root = Path(os.path.abspath(root))
    existing = root
    while not os.path.lexists(existing):
        existing = existing.parent
    if existing == root:
        _check_root(root)
        parent = root.parent
    else:
        parent = existing
    _check_ancestors(Path(os.path.realpath(parent)), root)
    if existing == root:
        check_layout(root)


def _check_root(root: Path) -> None:
    info = os.lstat(root)
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(_FIELD, f"{root} is a symbolic link; give the state directory itself")
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(_FIELD, f"{root} is not a directory")
    if info.st_uid != os.geteuid():
        raise ConfigError(_FIELD, f"{root} is owned by uid {info.st_uid}, not by the user running launch "
                                  f"(uid {os.geteuid()}); use a directory of your own")
    _check_writers(root, info, shared_group_ok=True)


def _check_ancestors(path: Path, root: Path) -> None:
    euid = os.geteuid()
    for directory in (path, *path.parents):
        info = os.stat(directory)
        if info.st_uid not in (euid, 0):
            raise ConfigError(_FIELD, f"{directory}, above the state directory {root}, is owned by uid "
                                      f"{info.st_uid}: that user could replace the state directory")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            raise ConfigError(_FIELD, f"{directory}, above the state directory {root}, is writable by "
                                      f"{_writers(info.st_mode)} (mode {stat.S_IMODE(info.st_mode):04o}) without the "
                                      "sticky bit: they could replace the state directory")


def _check_writers(path: Path, info: os.stat_result, shared_group_ok: bool) -> None:
    mode = info.st_mode
    if mode & stat.S_IWOTH:
        raise ConfigError(_FIELD, f"{path} is writable by others (mode {stat.S_IMODE(mode):04o}); "
                                  "remove their write permission (chmod o-w) or use another directory")
    if mode & stat.S_IWGRP and not (shared_group_ok and mode & stat.S_ISGID):
        raise ConfigError(_FIELD, f"{path} is writable by its group (mode {stat.S_IMODE(mode):04o}) without being a "
                                  "set-group-ID directory of the multinode contract (docs/multinode.md); "
                                  "chmod g-w, or g+s for a group that shares the state")


def _writers(mode: int) -> str:
    return "others" if mode & stat.S_IWOTH else "its group"


def check_layout(root: Path) -> None:
    """Every entry of the layout that exists has its type and is no symbolic link; directories
    are not writable by others (by their group only in a set-group-ID state)."""
    try:
        _check_layout(Path(root))
    except OSError as exc:
        hint = f"; {MODE_HINT}" if exc.errno == errno.EACCES else ""
        raise StoreError(f"cannot check {exc.filename or root}: {exc.strerror or exc}{hint}") from exc


def _check_layout(root: Path) -> None:
    for rel in LAYOUT_DIRS:
        info = _lstat(root / rel)
        if info is None:
            continue
        if not stat.S_ISDIR(info.st_mode):
            _refuse(root / rel, info, "a directory")
        _check_writers(root / rel, info, shared_group_ok=True)
    for rel in LAYOUT_FILES:
        info = _lstat(root / rel)
        if info is not None and not stat.S_ISREG(info.st_mode):
            _refuse(root / rel, info, "a regular file")
    if _lstat(root / "logs") is not None:
        for name in os.listdir(root / "logs"):
            info = _lstat(root / "logs" / name)
            if info is not None and not stat.S_ISREG(info.st_mode):
                _refuse(root / "logs" / name, info, "a log")
    for rel in PER_RANK_DIRS:  # staging/worker-<w>, scratch/worker-<w>, query-store/master-<m>
        if _lstat(root / rel) is not None:
            for name in os.listdir(root / rel):
                info = _lstat(root / rel / name)
                if info is not None and not stat.S_ISDIR(info.st_mode):
                    _refuse(root / rel / name, info, "a directory")


def check_entries(directory: Path) -> None:
    """Every entry of ``directory`` is a regular file (by ``lstat``: nothing is opened), else UnsafeFile."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    for name in names:
        info = os.lstat(directory / name)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"{directory / name} is {_kind(info.st_mode)} where a regular file belongs")


def _refuse(path: Path, info: os.stat_result, belongs: str) -> None:
    """A symbolic link is someone redirecting our writes (exit 2); any other wrong type a file the
    runtime must not open (UnsafeFile, exit 4)."""
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(_FIELD, f"{path} is a symbolic link where {belongs} belongs; refusing to follow it")
    raise UnsafeFile(f"{path} is {_kind(info.st_mode)} where {belongs} belongs")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a special file"
