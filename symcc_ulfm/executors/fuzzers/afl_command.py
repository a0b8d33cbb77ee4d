"""The ``afl`` kind's afl-fuzz command line: its own options that shape it (``extra_args``,
``diversity``, ``position``), checked, and the flags of one afl-fuzz from its variant
(``core.afl_diversity``), the CmpLog build and the extra flags.

``-c`` is the kind's: afl-fuzz executes a ``-c`` path itself, with the main target's command line,
so the kind passes the confining launcher's interpreter (the first word of the target's command,
``..sandbox.landlock.command``) with ``--cmplog BUILD`` in that command: the CmpLog build runs
confined like the main build. A ``-c`` in ``extra_args`` (alone, in a cluster of flags, or as
another option's attached value) would run a binary unconfined and is refused. A flag of the
variant that ``extra_args`` gives as well (``-p``, ``-L``, ``-l``, ``-Z``) is left to
``extra_args``: the explicit setting wins.
"""

from __future__ import annotations

from typing import Any

from ...core.afl_diversity import PLAIN, Variant, variant
from ...errors import PolicyError

DIVERSITY = ("guide", "off")  # the guide's variants by position, or every afl-fuzz the same plain -M
MAX_INSTANCES = 1_000_000  # afl-fuzz's own bound on instances of one campaign (-M id/max)
_VARIED = ("-p", "-L", "-l", "-Z")  # the flags a variant may set


def check_extra(extra: Any) -> list[str]:
    field = "executor_options.afl.extra_args"
    if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
        raise PolicyError(field, f"{extra!r}: expected a list of strings")
    if any(arg.startswith("-") and not arg.startswith("--") and "c" in arg for arg in extra):
        raise PolicyError(field, "-c (also in a cluster such as -dc or -c./cmplog, or as another option's attached "
                                 "value): the afl kind gives afl-fuzz the CmpLog build itself (cmplog_binary), "
                                 "confined like its target; a -c of its own would run unconfined")
    return list(extra)


def check_diversity(value: Any) -> str:
    if value not in DIVERSITY:
        raise PolicyError("executor_options.afl.diversity", f"{value!r}: expected one of {', '.join(DIVERSITY)}")
    return value


def check_position(value: Any) -> tuple[int, int]:
    """``[index, count]``: which afl-fuzz of the campaign's this is (the runtime's; default: the only one)."""
    if value is None:
        return 0, 1
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
            and 0 <= value[0] < value[1] <= MAX_INSTANCES):
        raise PolicyError("executor_options.afl.position", f"{value!r}: expected [INDEX, COUNT] with "
                                                           f"0 <= INDEX < COUNT <= {MAX_INSTANCES}")
    return value[0], value[1]


def variant_of(diversity: str, position: tuple[int, int], cmplog: bool) -> Variant:
    return PLAIN if diversity == "off" else variant(*position, cmplog)


def flags(chosen: Variant, extra: list[str], cmplog_launcher: str | None) -> list[str]:
    """afl-fuzz's flags for ``chosen`` but ``-M``/``-S``: ``-c`` (the launcher, when the variant
    runs CmpLog and the campaign has a build for it), the variant's own flags but those
    ``extra`` sets, then ``extra``."""
    given = {arg[:2] for arg in extra if arg[:2] in _VARIED}
    varied = [arg for flag, value in chosen.options() if flag not in given
              for arg in (flag, *([] if value is None else [value]))]
    cmplog = ["-c", cmplog_launcher] if chosen.cmplog and cmplog_launcher else []
    return [*cmplog, *varied, *extra]
