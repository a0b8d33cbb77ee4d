"""Which afl-fuzz settings each afl-fuzz of a campaign runs with: AFL++'s advice for many instances.

AFL++'s guide to fuzzing on several cores (``docs/fuzzing_in_depth.md``, section 3c "Using
multiple cores"), in short: one main instance, and every other instance (a secondary) differs from
the rest. One or two of them fuzz with CmpLog, at least one of those following transformations
(``-l 2AT``); of the others about one in ten uses the MOpt mutator (``-L 0``), one in ten the old
sequential queue cycling (``-Z``), half to seven in ten run without trimming
(``AFL_DISABLE_TRIM``), and each runs its own power schedule (``-p``: ``fast``, the default, then
``explore``, ``coe``, ``lin``, ``quad``, ``exploit``, ``rare``). :func:`variant` applies that by an
instance's position among the campaign's afl-fuzz processes (:func:`position`):

* position 0 is the main instance (afl-fuzz's ``-M``): CmpLog ``-l 2AT`` when the campaign has a
  CmpLog build, the default schedule;
* position *k* >= 1 is a secondary (``-S``) with schedule ``SECONDARY_SCHEDULES[(k - 1) mod 6]``;
  CmpLog at AFL++'s default level (``-l 2``) at position 2 when there are at least four instances
  (so that at most half of a small campaign pays CmpLog's extra executions); MOpt at positions 3,
  13, 23, ...; ``-Z`` at 7, 17, ...; no trimming at the odd positions (half of the secondaries).

The positions: the campaign's ``afl`` workers of a generation in layout order (group by group,
each group's workers in order), then, when analysis workers are lent to ``afl`` while idle, those
workers in the same order (``lent-afl/``). ``plain`` (the option ``afl.diversity: "off"``) gives
every instance the same settings: a main instance without CmpLog, nothing varied (the plain
``-M`` arrangement, a study's baseline).

Pure: the executor turns a :class:`Variant` into afl-fuzz's command line and environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .layout import Layout

SECONDARY_SCHEDULES = ("explore", "coe", "lin", "quad", "exploit", "rare")
MAIN_CMPLOG = "2AT"  # level 2 (larger files), arithmetic and transformational solving
SECONDARY_CMPLOG = "2"  # AFL++'s default level
SECOND_CMPLOG_POSITION, SECOND_CMPLOG_FROM = 2, 4  # the second CmpLog instance, in campaigns of >= 4
MOPT_EVERY, MOPT_AT = 10, 3  # one in ten: positions 3, 13, ...
SEQUENTIAL_EVERY, SEQUENTIAL_AT = 10, 7  # one in ten: positions 7, 17, ...


@dataclass(frozen=True)
class Variant:
    """One afl-fuzz's settings: main (``-M``) or secondary (``-S``), the CmpLog level (None: no
    CmpLog), the power schedule (None: afl-fuzz's default, ``fast``), MOpt, sequential queue
    cycling, trimming off."""

    main: bool = True
    cmplog: str | None = None
    schedule: str | None = None
    mopt: bool = False
    sequential: bool = False
    no_trim: bool = False

    def options(self) -> list[tuple[str, str | None]]:
        """afl-fuzz's options for these settings, each with its value (None: a flag alone), but
        ``-M``/``-S`` and ``-c`` (the executor's)."""
        chosen = [("-l", self.cmplog), ("-p", self.schedule), ("-L", "0" if self.mopt else None)]
        return [(flag, value) for flag, value in chosen if value is not None] + ([("-Z", None)] if self.sequential else [])

    def env(self) -> dict[str, str]:
        return {"AFL_DISABLE_TRIM": "1"} if self.no_trim else {}

    def to_json(self) -> dict[str, Any]:
        return {"role": "main" if self.main else "secondary", "cmplog": self.cmplog, "schedule": self.schedule,
                "mopt": self.mopt, "sequential": self.sequential, "no_trim": self.no_trim}


PLAIN = Variant()


def variant(index: int, count: int, cmplog: bool) -> Variant:
    """The settings of the afl-fuzz at position ``index`` of ``count`` (see the module docstring);
    ``cmplog``: whether the campaign has a CmpLog build."""
    if not 0 <= index < count:
        raise ValueError(f"position {index} of {count} afl-fuzz instances")
    if index == 0:
        return Variant(main=True, cmplog=MAIN_CMPLOG if cmplog else None)
    second_cmplog = cmplog and count >= SECOND_CMPLOG_FROM and index == SECOND_CMPLOG_POSITION
    return Variant(main=False, cmplog=SECONDARY_CMPLOG if second_cmplog else None,
                   schedule=SECONDARY_SCHEDULES[(index - 1) % len(SECONDARY_SCHEDULES)],
                   mopt=index % MOPT_EVERY == MOPT_AT, sequential=index % SEQUENTIAL_EVERY == SEQUENTIAL_AT,
                   no_trim=index % 2 == 1)


def instances(layout: Layout, kind: str, lender: str | None) -> list[tuple[int, bool]]:
    """The fuzzers of ``kind`` of a generation, in position order, each as (worker, lent): the
    workers of ``kind`` in layout order, then, when ``lender`` (the campaign's analysis kind) lends
    its idle workers to ``kind``, those workers in the same order. A group without kinds
    (``Group.kinds`` empty) is all of the analysis kind."""
    kinds = [(w, k) for g in layout.groups for w, k in zip(g.workers, g.kinds or (None,) * len(g.workers),
                                                              strict=True)]
    own = [(w, False) for w, k in kinds if k == kind]
    lent = [(w, True) for w, k in kinds if lender is not None and k in (None, lender)]
    return own + lent


def position(layout: Layout, stable: int, kind: str, lender: str | None, lent: bool) -> tuple[int, int]:
    """(index, count) of worker ``stable``'s fuzzer of ``kind`` among :func:`instances`: its own,
    or (``lent``) the one it runs while idle."""
    found = instances(layout, kind, lender)
    if (stable, lent) not in found:
        raise ValueError(f"worker {stable} runs no {'lent ' if lent else ''}{kind} fuzzer in generation "
                         f"{layout.generation}")
    return found.index((stable, lent)), len(found)
