"""Coverage ids: what every executor's measurements and the master's novelty are made of.

AFL-style: ``edge_id * 8 + hit_class`` where ``hit_class`` is the bucket index of the edge's hit
count (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+); :func:`edge_of` recovers the edge. Beside the edges
a concrete run measures, an executor may say which *branch directions* a candidate was solved to
take (``executors.base.RunResult.reaches``, :func:`branch_coverage`): a child of a symbolic run that
flips ``x == 31337`` inside one line of Python adds no line edge, but it does reach a direction no
input reached before, which is what the master's novelty (``keep = novel``) must see. Those ids
live above :data:`BRANCH_EDGES` (:func:`is_branch_coverage`), apart from every edge, and are not
counted as edges.
"""

from __future__ import annotations

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


BRANCH_EDGES = 1 << 59  # edge ids from here on are branch directions, not edges


def branch_coverage(site: int, taken: bool) -> int:
    """The coverage id of branch site ``site`` going ``taken``."""
    return coverage_id(BRANCH_EDGES | ((site % (1 << 57)) << 1) | int(taken), 1)


def is_branch_coverage(cov_id: int) -> bool:
    return edge_of(cov_id) >= BRANCH_EDGES
