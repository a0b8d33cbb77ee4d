"""The file-mode contract: strict octal strings, never the umask.

``SYMCC_ULFM_SNAPSHOT_FILE_MODE`` governs snapshots, receipts, layouts and the WAL;
``SYMCC_SHARED_CORPUS_FILE_MODE`` governs public corpus objects. A value is exactly four
characters, a leading ``0`` then three octal digits (``0640``). Anything that a reader could
take two ways (``644``, ``0o644``) or that is not a mode (``0999``, ``rw-r--r--``, empty) is
rejected, as is a world-writable mode or one that denies the owner read and write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ModeError

SNAPSHOT_MODE_VAR = "SYMCC_ULFM_SNAPSHOT_FILE_MODE"
CORPUS_MODE_VAR = "SYMCC_SHARED_CORPUS_FILE_MODE"
DEFAULT_SNAPSHOT_MODE = 0o600
DEFAULT_CORPUS_MODE = 0o644

_STRICT = re.compile(r"0[0-7]{3}")
_ACCEPTED = "four characters, a leading 0 and three octal digits, e.g. 0600, 0640 or 0644"
_SAFE = "expected owner read/write and no write for others, e.g. 0600, 0640, 0644 or 0660"


def parse_mode(field: str, text: str) -> int:
    """Parse one strict octal mode string; the error names ``field`` and the accepted form."""
    if not isinstance(text, str) or not _STRICT.fullmatch(text):
        raise ModeError(field, f"{text!r} is not a strict octal file mode; expected {_ACCEPTED}")
    mode = int(text, 8)
    if mode & 0o002:
        raise ModeError(field, f"{text} is world-writable; shared state must never be world-writable ({_SAFE})")
    if mode & 0o600 != 0o600:
        raise ModeError(field, f"{text} denies the owner read/write ({_SAFE})")
    return mode


def format_mode(mode: int) -> str:
    return f"0{mode:03o}"


def directory_mode(file_mode: int) -> int:
    """The mode of directories that hold files of ``file_mode``: search bit wherever read is granted.

    ``0600`` gives ``0700``, ``0640`` gives ``0750``, ``0660`` gives ``0770`` (a group-shared
    state directory), ``0644`` gives ``0755``.
    """
    return 0o700 | (file_mode & 0o077) | ((file_mode & 0o044) >> 2)


@dataclass(frozen=True)
class FileModes:
    snapshot: int = DEFAULT_SNAPSHOT_MODE
    corpus: int = DEFAULT_CORPUS_MODE

    @property
    def snapshot_dir(self) -> int:
        return directory_mode(self.snapshot)

    @property
    def corpus_dir(self) -> int:
        return directory_mode(self.corpus)

    def as_env(self) -> dict[str, str]:
        return {SNAPSHOT_MODE_VAR: format_mode(self.snapshot), CORPUS_MODE_VAR: format_mode(self.corpus)}


def modes_from_env(env: Mapping[str, str]) -> FileModes:
    """Read both variables from ``env`` (an unset variable takes its default; a set one must be valid)."""
    snapshot = env.get(SNAPSHOT_MODE_VAR)
    corpus = env.get(CORPUS_MODE_VAR)
    return FileModes(
        snapshot=DEFAULT_SNAPSHOT_MODE if snapshot is None else parse_mode(SNAPSHOT_MODE_VAR, snapshot),
        corpus=DEFAULT_CORPUS_MODE if corpus is None else parse_mode(CORPUS_MODE_VAR, corpus),
    )
