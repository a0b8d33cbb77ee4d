"""SAGE-style generational search over one recorded path.

For every branch from the input's *bound* on, the search asks for an input that follows the same
path up to the branch and then goes the other way. Only the prefix constraints connected to the
branch through shared input bytes are sent (independence slicing with union-find, transitively
closed: anything less could break an untouched constraint); the model's bytes are patched into
the parent. When that query is UNSAT or times out, the negated branch alone is solved
(*optimistic* solving, as in SAGE and QSYM): such a child may diverge, and the executor tries to
repair it (see :func:`repair_query`).

Pruning, so that checksum and parsing loops do not explode:

* a site is negated at most ``site_budget`` times per run: its first occurrences after the
  bound (later ones are reached by the children, whose bound lies further down the path);
* a branch on the input's length is first negated with the length held; at most
  ``resize_budget`` per run are then solved with a free length (a loop reading to the end would
  otherwise fill the queue with padded copies). Such a query takes every prefix constraint, not
  a slice: a shorter child must keep every byte the path mentions;
* at most one optimistic child per site and run (each may cost the executor several repair
  re-executions, and a checksum loop would otherwise ask for one per iteration);
* a process-wide query cache remembers (site, direction, condition, slice) -> model or UNSAT, so
  the same question is never sent to z3 twice; a cached model is re-patched into the new parent;
* with the campaign's record of tried branches (``record``, ``core.master.branches``, in edge order):
  a branch is keyed by its site, a direction and its occurrence on the path (the 1st, 2nd, ...
  time the path reached the site, the :data:`MAX_VISITS`-th and later ones alike: a loop's
  iterations are branches of their own, as QSYM's map counts a branch's visits), as a
  ``core.coverage.branch_coverage`` id; a flip whose target key is in the record is skipped (some
  run of the campaign tried it, or a path took that direction there), each flip attempted (solved
  SAT, UNSAT or timed out) and each direction the path took join it, and the run reports the keys
  it added (:attr:`SearchStats.tried`).

Minimal change: a branch is first solved with every byte it does not read held at the parent's
value (:meth:`GenerationalSearch._local`), so that a child differs from its parent only where
it must.

Checksum-aware strategy: an equality ``A == B`` whose two sides read disjoint bytes (a stored
checksum or length against a value computed from other bytes) is first solved with ``A``'s
bytes held at their values, ``B == value(A)``: a small query that stays sound however ``A`` was
computed (pinned table lookups, bit loops).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ...core.coverage import branch_coverage
from .expressions import expr as E
from .expressions.path import PIN
from .expressions.z3conv import SAT, Converter, solve


@dataclass
class Child:
    data: bytes
    bound: int
    branch: int
    expect: int
    optimistic: bool
    prefix: tuple[tuple[int, bool], ...] = ()
    flipped: tuple[int, bool] | None = None  # the (site, direction) it was solved to take


@dataclass
class SearchStats:
    queries: int = 0
    solver_seconds: float = 0.0
    sat: int = 0
    unsat: int = 0
    unknown: int = 0
    optimistic: int = 0
    checksum: int = 0
    cache_hits: int = 0
    skipped_budget: int = 0
    skipped_tried: int = 0  # flips left out: their target was in the campaign's record
    attempts: int = 0
    tried: list[int] = field(default_factory=list)  # keys this run added to the record
    optimistic_sites: set = field(default_factory=set)

    def add(self, answer) -> None:
        self.queries += 1
        self.solver_seconds += answer.seconds
        setattr(self, answer.status, getattr(self, answer.status) + 1)


MAX_VISITS = 64  # occurrences of one site on a path that are branches of their own in the record


def signature(previous: int, site: int, taken: bool) -> int:
    """Running digest of a path's (site, direction) sequence, used to predict a child's path."""
    return hash((previous, site, taken))


class Slicer:
    """Prefix constraints grouped by connected input bytes (union-find over byte indices)."""

    def __init__(self) -> None:
        self._parent: dict[int, int] = {}
        self._members: dict[int, list[E.Node]] = {}

    def _find(self, x: int) -> int:
        parent = self._parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def add(self, node: E.Node) -> None:
        roots = set()
        for v in node.vars:
            if v not in self._parent:
                self._parent[v] = v
                self._members[v] = []
            roots.add(self._find(v))
        if not roots:
            return
        ordered = sorted(roots, key=lambda r: len(self._members[r]), reverse=True)
        main = ordered[0]
        for other in ordered[1:]:
            self._parent[other] = main
            self._members[main].extend(self._members.pop(other))
        self._members[main].append(node)

    def everything(self) -> list[E.Node]:
        return [node for members in self._members.values() for node in members]

    def slice(self, indices) -> list[E.Node]:
        roots = {self._find(v) for v in indices if v in self._parent}
        out: list[E.Node] = []
        for root in roots:
            out.extend(self._members[root])
        return out


class QueryCache:
    """Process-wide LRU: query key -> model (dict) or None for UNSAT/unknown."""

    def __init__(self, size: int = 65536) -> None:
        self.size = size
        self._data: OrderedDict[tuple, dict[int, int] | None] = OrderedDict()

    def get(self, key: tuple):
        if key in self._data:
            self._data.move_to_end(key)
            return True, self._data[key]
        return False, None

    def put(self, key: tuple, model) -> None:
        self._data[key] = model
        if len(self._data) > self.size:
            self._data.popitem(last=False)


def _split_equality(cond: E.Node):
    """(eq node, truth of eq when cond holds) if cond is ``a == b`` or ``not a == b``."""
    if cond.op == E.EQ:
        return cond, True
    if cond.op == E.NOT and cond.args[0].op == E.EQ:
        return cond.args[0], False
    return None, None


def _patch(data: bytes, model: dict[int, int]) -> bytes:
    """``data`` with the model's bytes; a model of the length first cuts or grows the input.

    The new bytes repeat the last one: a number that ran to the end of the input gets more digits,
    a name more letters (zero bytes would mostly end a text parser at once).
    """
    child = bytearray(data)
    size = model.get(E.LENGTH)
    if size is not None:
        child = child[:size] + bytes(child[-1:] or b"\x00") * max(0, size - len(child))
    for index, value in model.items():
        if index != E.LENGTH:
            child[index] = value
    return bytes(child)


def _pins(data: bytes, indices) -> list[E.Node]:
    return [E.make(E.EQ, (E.length(len(data)) if i == E.LENGTH else E.var(i, data[i]),
                          E.const(len(data) if i == E.LENGTH else data[i])))
            for i in sorted(indices)]


@dataclass
class GenerationalSearch:
    query_timeout_ms: int
    max_branches: int
    site_budget: int
    max_children: int
    cache: QueryCache = field(default_factory=QueryCache)
    resize_budget: int = 3

    def _ask(self, conv: Converter, constraints: list, stats: SearchStats):
        answer = solve(conv, constraints, self.query_timeout_ms, with_length=True)
        stats.add(answer)
        return answer

    def _checksum(self, data, cond, want_true, slicer, conv, stats):
        eq, eq_when_true = _split_equality(cond)
        if eq is None:
            return None
        left, right = eq.args
        if not (left.vars and right.vars) or not left.vars.isdisjoint(right.vars):
            return None
        free, held = (left, right) if len(left.vars) <= len(right.vars) else (right, left)
        want_eq = want_true == eq_when_true
        goal = E.make(E.EQ, (free, E.const(held.val)))
        if not isinstance(goal, E.Node):
            return None
        goal = goal if want_eq else E.negate(goal)
        context = slicer.slice(free.vars)
        touched = set().union(*(n.vars for n in context)) if context else set()
        answer = self._ask(conv, [*context, *_pins(data, touched & held.vars), goal], stats)
        if answer.status == SAT:
            stats.checksum += 1
            return answer.model
        return None

    def _local(self, data, goal, context, conv, stats):
        """A model that changes only the goal's own bytes, the others held at the parent's values.

        A prefix constraint over many bytes (an ASCII check over a whole decoded text) puts them all
        in the query, and z3 would hand back arbitrary values for bytes nothing asks to change.
        """
        touched = set().union(*(n.vars for n in context)) if context else set()
        held = touched - goal.vars - {E.LENGTH}
        if not held:
            return None
        answer = self._ask(conv, [*context, *_pins(data, held), goal], stats)
        return answer.model if answer.status == SAT else None

    def _solve_branch(self, data, cond, want_true, site, slicer, conv, stats, resize=False):
        """Model for "same prefix, branch goes ``want_true``": (model, optimistic) or (None, False).

        A branch that reads the input's length is first solved with the length held; ``resize``
        frees it, against every prefix constraint (and never optimistically).
        """
        goal = cond if want_true else E.negate(cond)
        if resize:
            context = slicer.everything()
        else:
            context = slicer.slice(goal.vars)
            if E.LENGTH in goal.vars:
                context = [*context, *_pins(data, {E.LENGTH})]
        key = (site, want_true, goal.h, hash(frozenset(n.h for n in context)))
        model = self._checksum(data, cond, want_true, slicer, conv, stats)
        if model is not None:
            return model, False  # not cached: it depends on this parent's value of the held side
        model = self._local(data, goal, context, conv, stats)
        if model is not None:
            return model, False  # not cached either: the held bytes are this parent's
        found, model = self.cache.get(key)
        if found:
            stats.cache_hits += 1
        else:
            model = self._ask(conv, [*context, goal], stats).model
            self.cache.put(key, model)
        if model is not None or not context or resize or site in stats.optimistic_sites:
            return model, False
        alone = [goal, *_pins(data, {E.LENGTH})] if E.LENGTH in goal.vars else [goal]
        loose = (site, want_true, tuple(n.h for n in alone))
        found, model = self.cache.get(loose)
        if found:
            stats.cache_hits += 1
        else:
            model = self._ask(conv, alone, stats).model
            self.cache.put(loose, model)
        if model is not None:
            stats.optimistic += 1
            stats.optimistic_sites.add(site)
        return model, model is not None

    def expand(self, data: bytes, entries: list, bound: int, deadline: float,
               record: set[int] | None = None) -> tuple[list[Child], SearchStats]:
        """The children of one path; with ``record`` (module docstring) pruned by it and added to it."""
        stats = SearchStats()
        visits: dict[int, int] = {}  # site -> times the path reached it so far (at most MAX_VISITS)
        conv = Converter()
        conv.note_length(len(data))
        slicer = Slicer()
        negated: dict[int, int] = {}
        resized = 0
        children: list[Child] = []
        seen = {data}
        prefix: list[tuple[int, bool]] = []
        sig = 0
        index = -1
        for kind, node, site in entries:
            if kind == PIN:
                slicer.add(node)
                continue
            index += 1
            taken = bool(node.val)
            target = None  # the flip's key in the record, when there is one
            if record is not None:
                visits[site] = min(visits.get(site, 0) + 1, MAX_VISITS)
                key = site * MAX_VISITS + visits[site] - 1
                _note(record, branch_coverage(key, taken), stats)
                target = branch_coverage(key, not taken)
            if index >= bound and target is not None and target in record:
                stats.skipped_tried += 1
            elif index >= bound and self._eligible(site, negated, stats):
                if len(children) >= self.max_children or stats.attempts >= self.max_branches:
                    break
                if time.monotonic() > deadline:
                    break
                stats.attempts += 1
                negated[site] = negated.get(site, 0) + 1
                if target is not None:
                    _note(record, target, stats)
                model, optimistic = self._solve_branch(data, node, not taken, site, slicer, conv, stats)
                if optimistic and model is not None and model.get(E.LENGTH, len(data)) != len(data):
                    model = None  # repair keeps changed bytes by position: a resized child cannot be repaired
                if model is None and E.LENGTH in node.vars and resized < self.resize_budget:
                    resized += 1
                    model, optimistic = self._solve_branch(data, node, not taken, site, slicer, conv, stats,
                                                           resize=True)
                if model is not None:
                    child = _patch(data, model)
                    if child not in seen:
                        seen.add(child)
                        flipped = (site, not taken)
                        children.append(Child(child, index + 1, index, signature(sig, *flipped), optimistic,
                                              tuple(prefix) + (flipped,) if optimistic else (), flipped))
            slicer.add(node if taken else E.negate(node))
            prefix.append((site, taken))
            sig = signature(sig, site, taken)
        return children, stats

    def _eligible(self, site: int, negated: dict, stats: SearchStats) -> bool:
        if negated.get(site, 0) >= self.site_budget:
            stats.skipped_budget += 1
            return False
        return True


def _note(record: set[int], key: int, stats: SearchStats) -> None:
    """Add a branch key to the record (and to what this run reports) unless it is there."""
    if key not in record:
        record.add(key)
        stats.tried.append(key)


def repair_query(data: bytes, entries: list, expected: tuple, keep: dict[int, int]) -> tuple | None:
    """Constraints that fix the first branch where ``data`` left the ``expected`` path.

    ``keep`` holds the bytes the optimistic child changed on purpose; they stay fixed, so the
    repair re-satisfies an earlier check (typically a checksum over the changed bytes) without
    undoing the change. Returns ``(constraints, branch index)`` or None when the path follows the
    expectation, or left it at a different site (not repairable by flipping one branch).
    """
    slicer = Slicer()
    index = -1
    for kind, node, site in entries:
        if kind == PIN:
            slicer.add(node)
            continue
        index += 1
        if index >= len(expected):
            return None
        want_site, want_taken = expected[index]
        if site != want_site:
            return None
        taken = bool(node.val)
        if taken != want_taken:
            goal = node if want_taken else E.negate(node)
            context = slicer.slice(goal.vars | keep.keys())
            lengths = {E.LENGTH} if any(E.LENGTH in n.vars for n in (*context, goal)) else set()
            return [*context, *_pins(data, keep.keys() | lengths), goal], index
        slicer.add(node if taken else E.negate(node))
    return None


_HINT_KEYS = {"bound": int, "branch": int, "expect": int, "optimistic": bool}


def hint_of(child: Child) -> dict[str, Any]:
    """A child's lineage as the JSON its hint travels in (to the master and back with its lease)."""
    return {"bound": child.bound, "branch": child.branch, "expect": child.expect, "optimistic": child.optimistic}


def child_from_hint(data: bytes, hint: dict[str, Any] | None) -> Child | None:
    """The lineage a hint describes; a malformed hint is ignored (the run starts at bound 0)."""
    if not isinstance(hint, dict) or set(hint) != set(_HINT_KEYS):
        return None
    if any(type(hint[k]) is not t for k, t in _HINT_KEYS.items()) or hint["bound"] < 0 or hint["branch"] < -1:
        return None
    return Child(data, hint["bound"], hint["branch"], hint["expect"], hint["optimistic"])


__all__ = ["Child", "GenerationalSearch", "QueryCache", "SearchStats", "Slicer", "child_from_hint", "hint_of",
           "repair_query", "signature"]
