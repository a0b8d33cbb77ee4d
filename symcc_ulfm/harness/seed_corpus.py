"""A harness's seed corpus, ``NAME_seed_corpus.zip`` as OSS-Fuzz ships one, unpacked into a
directory of seeds as an archive from a stranger is: nothing it names is trusted.

The archive is opened without following a symlink; each entry is read through a bound
(``AFL_MAX_FILE``, the largest input afl-fuzz takes) whatever size it declares, and the
archive as a whole through :data:`MAX_TOTAL_BYTES` and ``MAX_SEEDS`` entries (as many as a seed
directory may hold). No entry's name
becomes a path: a seed is written as the SHA-256 of its bytes, a new regular file in a new
directory, so a repeated input is one seed. An entry that is a directory is passed over; one that
is a symbolic link or another special file, whose name is absolute or climbs out with ``..``,
that is encrypted, damaged, empty or too large is skipped and counted by its reason.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import ConfigError
from ..executors.fuzzers.afl_sync import AFL_MAX_FILE
from ..executors.seed_dirs import MAX_SEEDS

MAX_TOTAL_BYTES = 256 << 20
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Unpacked:
    seeds: int
    skipped: dict[str, int] = field(default_factory=dict)  # why -> entries


def unpack(archive: Path, dest: Path) -> Unpacked:
    """The seeds of zip file ``archive`` written into the new directory ``dest`` (module docstring);
    ConfigError when ``archive`` is no regular file or no zip archive."""
    try:
        fd = os.open(archive, _OPEN)
    except OSError as error:
        why = "a symbolic link, not followed" if error.errno == errno.ELOOP else error.strerror
        raise ConfigError("seed corpus", f"{archive}: {why}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError("seed corpus", f"{archive}: not a regular file")
        try:
            with zipfile.ZipFile(handle) as zipped:
                return _unpack(zipped, dest)
        except zipfile.BadZipFile as error:
            raise ConfigError("seed corpus", f"{archive}: not a zip archive ({error})") from None


def _unpack(zipped: zipfile.ZipFile, dest: Path) -> Unpacked:
    dest.mkdir(mode=0o755)
    skipped: Counter[str] = Counter()
    seeds, total = 0, 0
    for number, entry in enumerate(zipped.infolist()):
        if number >= MAX_SEEDS:
            skipped[f"past the first {MAX_SEEDS} entries"] += len(zipped.infolist()) - number
            break
        if entry.is_dir():
            continue
        why = _refused(entry)
        data = None
        if why is None:
            data, why = _read(zipped, entry)
        if why is None and total + len(data) > MAX_TOTAL_BYTES:
            why = f"past {MAX_TOTAL_BYTES} bytes in all"
        if why is not None:
            skipped[why] += 1
            continue
        total += len(data)
        try:
            fd = os.open(dest / hashlib.sha256(data).hexdigest(), os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            skipped["a repeated input"] += 1
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        seeds += 1
    return Unpacked(seeds, dict(sorted(skipped.items())))


def _refused(entry: zipfile.ZipInfo) -> str | None:
    """Why an entry is skipped before a byte of it is read, or None."""
    kind = stat.S_IFMT(entry.external_attr >> 16)
    if kind == stat.S_IFLNK:
        return "a symbolic link"
    if kind not in (0, stat.S_IFREG):
        return "not a regular file"
    name = PurePosixPath(entry.filename.replace("\\", "/"))
    if name.is_absolute() or ".." in name.parts:
        return "a name outside the archive (absolute or ..)"
    if entry.flag_bits & 0x1:
        return "encrypted"
    return None


def _read(zipped: zipfile.ZipFile, entry: zipfile.ZipInfo) -> tuple[bytes, str | None]:
    """The entry's bytes, read through ``AFL_MAX_FILE`` whatever size it declares."""
    try:
        with zipped.open(entry) as member:
            data = member.read(AFL_MAX_FILE + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as error:
        return b"", f"unreadable ({type(error).__name__})"
    if len(data) > AFL_MAX_FILE:
        return b"", f"larger than {AFL_MAX_FILE} bytes"
    if not data:
        return b"", "empty"
    return data, None
