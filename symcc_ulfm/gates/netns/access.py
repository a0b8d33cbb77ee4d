"""Can the unprivileged host-B user reach the interpreter, the packages and the state directory?

A second Unix user needs search permission on every ancestor of the venv, the package source
(an editable install points into the checkout) and the state directory. A fresh clone under a
0700 directory (``mktemp -d``, pytest's ``/tmp/pytest-of-root``) blocks it. :func:`probe` runs
the real check as that user; :class:`SearchGrants` adds ``o+x`` -- search only, never read or
write -- to the blocking ancestors, journals each original mode before changing it, and
restores them at teardown (a crashed run's journal is restored by the next run).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from ...errors import ConfigError
from ...mpi.access_probe import mpi4py_dir


def probe(prefix: list[str], state_dir: Path, python: str | None = None) -> str | None:
    """Run the access probe (``mpi.access_probe``) through ``prefix`` (e.g. setpriv as the uid); None when it passes."""
    command = [*prefix, python or sys.executable, "-m", "symcc_ulfm.mpi.access_probe", str(state_dir)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def targets(state_dir: Path) -> list[Path]:
    """What a rank must reach: the interpreter (as called and resolved), site-packages, the source."""
    import symcc_ulfm

    return [Path(sys.executable), Path(sys.executable).resolve(), mpi4py_dir(), Path(symcc_ulfm.__file__).parent,
            Path(state_dir)]


def _can_search(info: os.stat_result, uid: int, gid: int) -> bool:
    mode = info.st_mode
    if info.st_uid == uid:
        return bool(mode & stat.S_IXUSR)
    if info.st_gid == gid:
        return bool(mode & stat.S_IXGRP)
    return bool(mode & stat.S_IXOTH)


def blocking(paths: Iterable[Path], uid: int, gid: int) -> list[Path]:
    """Ancestor directories of ``paths`` that deny ``uid``/``gid`` (no supplementary groups) search."""
    found: dict[Path, None] = {}
    for path in paths:
        for ancestor in reversed(Path(os.path.abspath(path)).parents):
            if not _can_search(os.stat(ancestor), uid, gid):
                found[ancestor] = None
    return list(found)


class SearchGrants:
    """``o+x`` on blocking directories, undone by :meth:`restore` (from a journal, crash-proof)."""

    def __init__(self, journal: Path, echo: Callable[[str], None] = print):
        self.journal = Path(journal)
        self.echo = echo

    def _entries(self) -> list[dict]:
        try:
            return json.loads(self.journal.read_text())
        except FileNotFoundError:
            return []

    def _save(self, entries: list[dict]) -> None:
        temp = self.journal.with_name(self.journal.name + ".tmp")
        temp.write_text(json.dumps(entries, indent=1))
        os.replace(temp, self.journal)

    def grant(self, directories: Iterable[Path], uid: int) -> list[dict]:
        entries = self._entries()
        done = []
        for directory in directories:
            old = stat.S_IMODE(os.stat(directory).st_mode)
            entry = {"path": str(directory), "mode": old, "granted": old | stat.S_IXOTH}
            self._save([*entries, entry])  # journal first: a crash right after chmod is still undone
            entries.append(entry)
            os.chmod(directory, entry["granted"])
            self.echo(f"access: granted o+x on {directory} ({old:04o} -> {entry['granted']:04o}) so that uid {uid} "
                      "can reach the interpreter, the package and the state; restored at teardown")
            done.append(entry)
        return done

    def restore(self, label: str = "teardown") -> list[dict]:
        """Put every journaled mode back (newest first) and remove the journal; idempotent."""
        entries = self._entries()
        for entry in reversed(entries):
            path = Path(entry["path"])
            if path.is_dir() and stat.S_IMODE(os.stat(path).st_mode) == entry["granted"]:
                os.chmod(path, entry["mode"])
                self.echo(f"{label}: restored mode {entry['mode']:04o} of {path}")
            elif path.is_dir():
                self.echo(f"{label}: {path} was changed by someone else since the grant; left as it is")
        self.journal.unlink(missing_ok=True)
        return entries


def ensure_access(prefix: list[str], state_dir: Path, uid: int, gid: int, grants: SearchGrants) -> list[dict]:
    """Probe as the uid; if blocked, grant search on the blocking ancestors and probe again."""
    problem = probe(prefix, state_dir)
    if problem is None:
        return []
    granted = grants.grant(blocking(targets(state_dir), uid, gid), uid)
    problem = probe(prefix, state_dir)
    if problem is not None:
        raise ConfigError("host-B access", f"uid {uid} cannot run the ranks even with search permission on the "
                                       f"ancestors ({problem}); the venv, the checkout and the state directory must "
                                       "be readable by other users (see docs/multinode.md)")
    return granted
