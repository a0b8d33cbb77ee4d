"""One atheris fuzzer on a Python target, as the ``atheris`` system runs it (``python -m``).

``python -m symcc_ulfm.compare.systems.atheris_driver SPEC MODULES CRASHES -- LIBFUZZER_ARGS...``
resolves ``SPEC`` (:func:`symcc_ulfm.targets.resolve_target`), imports ``MODULES`` (a JSON list;
empty: the target's own), instruments the functions of the files the concolic executor traces
(the target's files and those modules': ``atheris.instrument_func`` on each; instrumenting
everything loaded, ``atheris.instrument_all()``, takes longer than a short window) and fuzzes
with libFuzzer's arguments (the corpus directory first).

An exception the target raises by design (its documented rejections, as the concolic executor's
default ``expected_exceptions``) is an ordinary run. Any other exception is a crash: its input is
written to ``CRASHES/<sha256>`` (the first :data:`MAX_CRASHES` distinct ones) and fuzzing goes on, as afl-fuzz and our campaign go on after a
crash (libFuzzer alone would stop at the first). What kills the process (a native crash, a
timeout, running out of memory) is libFuzzer's to report, under its ``-artifact_prefix``.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import json
import os
import sys
import tempfile
import types

MAX_CRASHES = 1000  # crashing inputs one process writes (the measurer keeps one per signature)
_kept: set[str] = set()


def main(argv: list[str]) -> None:
    spec, modules, crashes = argv[1], json.loads(argv[2]), argv[3]
    libfuzzer = argv[argv.index("--") + 1:]
    import atheris

    from symcc_ulfm.targets import resolve_target

    info = resolve_target(spec)
    imported = [importlib.import_module(name) for name in modules or info.modules]
    traced = set(info.files) | {m.__file__ for m in imported if getattr(m, "__file__", None)}
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and obj.__code__.co_filename in traced:
            atheris.instrument_func(obj)
    from symcc_ulfm.executors.concolic.tracing.run_outcome import Expected
    from symcc_ulfm.targets import rejections

    module, _, function = spec.rpartition(":")
    expected = Expected(info.expected if info.builtin else rejections.expected_for(module, function))
    target = info.function

    def one(data: bytes) -> None:
        try:
            target(data)
        except Exception as exc:  # noqa: BLE001 - every exception is either expected or a finding
            if exc not in expected:
                keep(crashes, data)

    atheris.Setup([argv[0], *libfuzzer], one)
    atheris.Fuzz()


def keep(folder: str, data: bytes) -> None:
    """Write a crashing input as ``folder/<sha256>`` (atomically: a listing never sees it half written)."""
    name = hashlib.sha256(data).hexdigest()
    if name in _kept or len(_kept) >= MAX_CRASHES:
        return
    _kept.add(name)
    path = os.path.join(folder, name)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(temp, path)


if __name__ == "__main__":
    main(sys.argv)
