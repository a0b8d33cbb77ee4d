"""Seed inputs from another tool's directory (``launch --seeds DIR``, ``explore --seeds DIR``, the
symcc executor's ``seeds`` option): the one reader of them.

Three layouts are recognised, in this order:

* an **AFL++ instance** (``OUT/default``: a ``queue/`` directory beside ``fuzzer_stats``,
  ``cmdline`` or ``fuzzer_setup``, or beside no file at all): the files of its ``queue/``;
* an **AFL++ output directory** (``OUT``: subdirectories that are instances, ``default``, ``main``,
  ``secondary*``, any ``-M``/``-S`` name): the ``queue/`` of each instance, instances by name;
* otherwise a **plain directory** of files, one input each: a SymCC or atheris seed directory, or a
  libFuzzer corpus (flat files named by their SHA-1); subdirectories are not entered.

Only ``queue/`` is read, never ``crashes/`` or ``hangs/``: those are findings to replay, not
inputs to search from; to start from them anyway name the directory itself (``OUT/default/crashes``,
read as a plain directory). The bookkeeping AFL++ keeps beside its inputs is never taken for one:
dot-files and dot-directories (``.state/``, ``.cur_input``, ``.synced/``) and the names in
:data:`METADATA` (``fuzzer_stats``, ``plot_data``, ``cmdline``, ``fuzz_bitmap``, ``README.txt``...).

Seed directories are input from elsewhere, so hostile: nothing is followed through a symbolic
link, and a link or a special file (FIFO, device, socket) where a seed would be is refused by
name (exit 2) rather than skipped silently; every file is opened without following links and
without blocking, bounded in size (:data:`MAX_SEED_BYTES`) before it is read. Duplicates by
content are folded into one seed that keeps every name it was found under (relative to the
directory given), in the order first found; the seed record keeps those names, so that
``export --layout afl`` names a seed ``orig:NAME`` as AFL++ does. No seed at all is exit 2.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError

MAX_SEED_BYTES = 16 << 20
MAX_SEEDS = 100_000
METADATA = frozenset({
    "fuzzer_stats", "fuzzer_setup", "plot_data", "cmdline", "fuzz_bitmap", "target_hash", "README.txt",
    "is_main_node", "sync_time",
})
_INSTANCE_MARKS = ("fuzzer_stats", "cmdline", "fuzzer_setup")


@dataclass
class SeedSet:
    """The seeds read from a directory: contents, each seed's names, what kind of directory it was."""

    layout: str  # "plain", "afl-instance" or "afl-output"
    seeds: list[bytes] = field(default_factory=list)
    names: dict[str, list[str]] = field(default_factory=dict)  # SHA-256 -> names it was found under
    notes: list[str] = field(default_factory=list)

    def add(self, data: bytes, name: str) -> None:
        sha256 = hashlib.sha256(data).hexdigest()
        if sha256 not in self.names:
            self.seeds.append(data)
            self.names[sha256] = []
        self.names[sha256].append(name)


def read_seeds(path: str | Path, field: str = "--seeds") -> SeedSet:
    """The seeds of ``path`` (module docstring); ConfigError (exit 2) naming ``field`` otherwise."""
    root = Path(path)
    top = _open_dir(root, field, f"{path}: not a directory of seed files")
    try:
        entries = _entries(top, root, field)
        if _is_instance(top, entries):
            found = SeedSet("afl-instance")
            _read_queue(top, root, "", found, field)
        else:
            instances = [name for name, kind in entries if kind == "dir" and _is_instance_at(top, name)]
            if instances:
                found = SeedSet("afl-output")
                for name in instances:
                    sub = _open_dir_at(top, name, root / name, field)
                    try:
                        _read_queue(sub, root / name, f"{name}/", found, field)
                    finally:
                        os.close(sub)
            else:
                found = SeedSet("plain")
                _read_files(top, root, "", entries, found, field)
    finally:
        os.close(top)
    if not found.seeds:
        where = {"plain": "no regular file to use as a seed",
                 "afl-instance": "an AFL++ instance whose queue/ holds no input",
                 "afl-output": "an AFL++ output directory whose instances' queue/ hold no input"}[found.layout]
        raise ConfigError(field, f"{root} holds {where} (metadata such as fuzzer_stats, plot_data and dot-files "
                                 "are not seeds)")
    return found


def read_seed_blobs(path: str | Path, field: str) -> tuple[bytes, ...]:
    """Only the contents (the symcc executor's ``seeds`` option)."""
    return tuple(read_seeds(path, field).seeds)


def _read_queue(instance: int, where: Path, prefix: str, found: SeedSet, field: str) -> None:
    try:
        queue = _open_dir_at(instance, "queue", where / "queue", field)
    except FileNotFoundError:
        found.notes.append(f"{where}: an AFL++ instance without queue/")
        return
    try:
        _read_files(queue, where / "queue", f"{prefix}queue/", _entries(queue, where / "queue", field), found, field)
    finally:
        os.close(queue)


def _read_files(dir_fd: int, where: Path, prefix: str, entries: list[tuple[str, str]], found: SeedSet,
                field: str) -> None:
    skipped = 0
    for name, kind in entries:
        if kind == "dir":
            skipped += 1
            continue
        if kind != "file":
            raise ConfigError(field, f"{where / name} is a {kind}, not a regular file; seeds are read without "
                                     "following links (copy the file there instead)")
        found.add(_read_regular(dir_fd, name, where, field), prefix + name)
    if skipped:
        found.notes.append(f"{where}: {skipped} subdirector{'y' if skipped == 1 else 'ies'} not entered")


def _entries(dir_fd: int, where: Path, field: str) -> list[tuple[str, str]]:
    """``(name, kind)`` of the entries that may be inputs, by name: no dot-files, no metadata."""
    names = sorted(n for n in os.listdir(dir_fd) if not n.startswith(".") and n not in METADATA)
    if len(names) > MAX_SEEDS:
        raise ConfigError(field, f"{where} holds {len(names)} entries, more than {MAX_SEEDS}")
    out = []
    for name in names:
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue  # gone meanwhile
        out.append((name, _kind(mode)))
    return out


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return {stat.S_IFLNK: "symbolic link", stat.S_IFIFO: "FIFO", stat.S_IFSOCK: "socket"}.get(
        stat.S_IFMT(mode), "device or special file")


def _is_instance(dir_fd: int, entries: list[tuple[str, str]]) -> bool:
    """A ``queue/`` beside AFL++'s own files, or beside no file at all."""
    if ("queue", "dir") not in entries:
        return False
    return any(_exists(dir_fd, mark) for mark in _INSTANCE_MARKS) or not any(kind == "file" for _, kind in entries)


def _is_instance_at(dir_fd: int, name: str) -> bool:
    try:
        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        return stat.S_ISDIR(_mode(sub, "queue"))
    finally:
        os.close(sub)


def _exists(dir_fd: int, name: str) -> bool:
    return _mode(dir_fd, name) != 0


def _mode(dir_fd: int, name: str) -> int:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return 0


def _open_dir(path: Path, field: str, message: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        why = "a symbolic link, not followed" if os.path.islink(path) else exc.strerror
        raise ConfigError(field, f"{message} ({why})") from None


def _open_dir_at(dir_fd: int, name: str, where: Path, field: str) -> int:
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(field, f"{where}: not a directory ({exc.strerror}; links are not followed)") from None


def _read_regular(dir_fd: int, name: str, directory: Path, field: str) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise ConfigError(field, f"{directory / name}: cannot open it as a regular file ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(field, f"{directory / name} changed into a {_kind(info.st_mode)} while read")
        if info.st_size > MAX_SEED_BYTES:
            raise ConfigError(field, f"{directory / name} has {info.st_size} bytes, more than a seed may "
                                     f"({MAX_SEED_BYTES})")
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, MAX_SEED_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_SEED_BYTES:
                raise ConfigError(field, f"{directory / name} grew past {MAX_SEED_BYTES} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)
