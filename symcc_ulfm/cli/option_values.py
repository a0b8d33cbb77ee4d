"""What several commands share: option values given as text (``--executor-option``,
``--timeout``), ``--seeds`` and ``--dictionary``, and their output as text or ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ConfigError


def emit(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(payload, sort_keys=True, indent=None))
    else:
        print(text)


def executor_options(pairs: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError("--executor-option", f"{pair!r} is not KEY=VALUE (VALUE is JSON or a plain string)")
        try:
            options[key] = json.loads(value)
        except RecursionError:
            raise ConfigError(f"--executor-option {key}", "the JSON value nests too deeply") from None
        except ValueError:
            options[key] = value
    return options


def timeouts(pairs: list[str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        try:
            out[key] = int(value) if key == "recovery_retries" else float(value)
        except ValueError:
            sep = ""
        if not sep or not key:
            raise ConfigError("--timeout", f"{pair!r} is not NAME=SECONDS (e.g. lease_s=30, recovery_step_s=10)")
    return out


def read_seeds(path: str | None):
    """``--seeds DIR`` (``executors.seed_dirs``: plain, AFL++ or libFuzzer), what it was said on stderr."""
    from ..executors.seed_dirs import read_seeds

    if not path:
        return None
    seeds = read_seeds(path)
    print(f"seeds: {len(seeds.seeds)} distinct inputs from {path} ({seeds.layout})", file=sys.stderr)
    for note in seeds.notes:
        print(f"note: {note}", file=sys.stderr)
    return seeds


def with_dictionary(options: dict[str, Any], path: str | None) -> dict[str, Any]:
    """``--dictionary FILE`` as the shared executor option (``executors.dictionary``)."""
    from ..executors.dictionary import OPTION, read_dictionary

    if path is None:
        return options
    if OPTION in options:
        raise ConfigError("--dictionary", f"given twice (also as --executor-option {OPTION}=...)")
    return {**options, OPTION: read_dictionary(path).option()}


def dictionary_used(path: str | None, kinds: tuple[str, ...]) -> None:
    from ..executors import uses_dictionary

    if path is not None and not uses_dictionary(kinds):
        raise ConfigError("--dictionary", f"no worker kind of this campaign ({', '.join(kinds)}) uses a dictionary; "
                                          "the concolic executor and the havoc and afl worker kinds do")
