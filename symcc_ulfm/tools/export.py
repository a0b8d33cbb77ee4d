"""``symcc-ulfm export DIR OUT --layout afl``: a campaign's corpus (or an ``explore --out``
directory's inputs) as AFL++ lays one out.

``OUT/queue/`` holds every corpus object the campaign expanded (the seeds first, then the rest
by SHA-256): all but the inputs of ``crash``, ``hang`` and ``oom`` findings, which it never
expands either. ``OUT/crashes/`` holds the inputs of ``crash``, ``oom`` and ``exception``
findings (atheris and libFuzzer report an uncaught exception or a memory exhaustion as a crash;
an exception's input is in the queue as well, since the campaign expands it), ``OUT/hangs/``
those of ``hang`` findings.
File names follow AFL's ``id:NNNNNN,...`` convention, so AFL++ (``-i OUT/queue``, or ``-i -``
resuming a copy) and SymCC's fuzzing helper read them as their own; the SHA-256 in the name
ties each file to its corpus object. ``OUT`` must not exist yet: nothing is overwritten.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from ..core.finding import TERMINAL_KINDS
from ..core.modes import FileModes
from ..errors import ConfigError
from ..evidence.rundir import enclosing_run
from ..store.atomic import write_new
from ..store.dirs import ensure_dir
from .sources import StateSource, open_source

LAYOUTS = ("afl",)
_FILE_MODE = 0o644
_DIR_MODE = 0o755


def _sig(signature: str) -> str:
    """AFL's ``sig:NN`` for a death by a signal, else the finding's kind."""
    name = signature.split(" ", 1)[0]
    try:
        return f"sig:{int(signal.Signals[name]):02d}"
    except KeyError:
        return "sig:00"


def export(path: str | Path, out: str | Path, modes: FileModes, layout: str = "afl") -> dict:
    """Export a state, run or ``explore --out`` directory (:mod:`.sources`) into ``out``."""
    if layout not in LAYOUTS:
        raise ConfigError("--layout", f"{layout!r}: expected one of {', '.join(LAYOUTS)}")
    source = open_source(path, modes)
    out = Path(out)
    if isinstance(source, StateSource):
        run = enclosing_run(source.root)
        protected = run.root if run is not None else source.root
        names, is_seed = source.corpus.names(), source.corpus.is_seed
    else:
        protected, names, is_seed = source.root, source.names(), set(source.seeds).__contains__
    target = Path(os.path.realpath(out.parent)) / out.name
    if target == Path(os.path.realpath(protected)) or Path(os.path.realpath(protected)) in target.parents:
        raise ConfigError("OUT", f"{out} is inside {protected}; export writes outside the campaign's own files "
                                 "(its state, its run directory and their seal)")
    if out.exists() or out.is_symlink():
        raise ConfigError("OUT", f"{out} exists; export writes a new directory and overwrites nothing")
    found = source.findings()
    counts = {"queue": 0, "crashes": 0, "hangs": 0}
    for directory in counts:
        ensure_dir(out / directory, _DIR_MODE)

    def put(where: str, suffix: str, sha256: str) -> None:
        write_new(out / where / f"id:{counts[where]:06d},{suffix},sha256:{sha256}", source.read_input(sha256),
                  _FILE_MODE)
        counts[where] += 1

    stopped = set()
    for item in found:
        where = "hangs" if item.kind == "hang" else "crashes"
        for sha256 in sorted(item.inputs):
            put(where, f"{_sig(item.signature)},kind:{item.kind},finding:{item.id}", sha256)
            if item.kind in TERMINAL_KINDS:
                stopped.add(sha256)
    for name in sorted(names, key=lambda n: (not is_seed(n), n)):
        if name not in stopped:
            put("queue", "orig:seed" if is_seed(name) else "src:symcc-ulfm", name)
    return {"out": str(out), "layout": layout, **counts, "findings": len(found), "source": source.kind}
