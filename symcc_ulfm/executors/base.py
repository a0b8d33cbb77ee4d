"""The executor contract shared by ``simulate``, ``concolic`` and ``symcc``.

A worker calls :meth:`Executor.run` on one input (a corpus object) and gets back candidate
children; it then measures each candidate's coverage with :meth:`Executor.coverage`, a
separate concrete run. The master decides what is unique (by content) and novel (adds an
edge or a hit-count class). Executors never touch the corpus, the WAL or MPI.

Coverage ids are AFL-style: ``edge_id * 8 + hit_class`` where ``hit_class`` is the bucket
index of the edge's hit count (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+). :func:`edge_of`
recovers the edge.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

HIT_CLASS_BOUNDS = (1, 2, 3, 4, 8, 16, 32, 128)


def hit_class(count: int) -> int:
    """AFL's hit-count bucket index (0..7) for a positive hit count."""
    if count <= 0:
        raise ValueError("hit count must be positive")
    bucket = 0
    for index, bound in enumerate(HIT_CLASS_BOUNDS):
        if count >= bound:
            bucket = index
    return bucket


def coverage_id(edge: int, count: int) -> int:
    return (edge << 3) | hit_class(count)


def edge_of(cov_id: int) -> int:
    return cov_id >> 3


@dataclass
class RunResult:
    """What one :meth:`Executor.run` produced.

    ``hints`` (optional, one per candidate) is small JSON-able search state that the candidate's
    own later run needs, such as the SAGE generation bound. It travels with the candidate through
    the manifest and the WORK message, because that run usually happens on another worker.
    """

    candidates: list[bytes]
    hints: list[dict[str, Any]] | None = None
    executions: int = 1
    solver_queries: int = 0
    solver_seconds: float = 0.0
    seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)


class Executor(abc.ABC):
    """One executor instance per process; cheap to call many times."""

    name: ClassVar[str]

    @abc.abstractmethod
    def identity(self) -> dict[str, Any]:
        """JSON-able description that becomes part of every work identity.

        Must change whenever the meaning of a run changes (target code digest, binary SHA-256,
        executor version, search parameters).
        """

    @abc.abstractmethod
    def seeds(self) -> list[bytes]:
        """Initial inputs of the campaign (published into the corpus at generation 0)."""

    @abc.abstractmethod
    def run(self, data: bytes, hint: dict[str, Any] | None = None) -> RunResult:
        """Expand one input into candidate children (bounded in time by the executor's options).

        ``hint`` is what an earlier run returned for this input in ``RunResult.hints``, if any;
        an executor must treat it as untrusted input and validate it.
        """

    @abc.abstractmethod
    def coverage(self, data: bytes) -> frozenset[int]:
        """Coverage ids of one concrete run of ``data`` (see module docstring)."""

    def close(self) -> None:  # noqa: B027 - optional hook, most executors hold nothing
        """Release resources (temporary directories, subprocesses)."""


@dataclass(frozen=True)
class ExecutorSpec:
    """What a campaign policy says about its executor; resolved by the registry."""

    name: str
    target: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
