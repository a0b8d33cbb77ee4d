"""The campaign policy: one frozen, validated value with a canonical JSON form and SHA-256.

Every rank reads the same ``policy.json`` and the ranks compare the SHA-256 at start-up; a
mismatch fails closed. Rejections name the field and the accepted form. Fields added after the
first format (``worker_kinds``, ``keep``, ``slice_s``, ``isolation``, ``idle``, ``stop_after``, ``stop_from``,
``concolic_order``, ``mix``) are written
only when they differ from their defaults, so a policy that does not use them keeps its bytes and its SHA-256.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import PolicyError, ScheduleError
from .canonical import Canonical
from .hosts import format_hosts, parse_hosts
from .kinds import check_kinds, format_kinds, parse_kinds, slot_kinds
from .limits import MAX_POLICY_BYTES
from .membership import predict
from .reference import REFERENCE
from .schedule import INJECTED_EXIT_CODE, FailureEvent, format_schedule, parse_schedule

POLICY_FORMAT = "symcc-ulfm-policy/1"
_EXECUTOR_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_JSON_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class Timeouts:
    """Bounds on every wait (seconds) and retry limits; no wait in the runtime is unbounded."""

    startup_s: float = 60.0
    recovery_step_s: float = 10.0
    recovery_retries: int = 3
    lease_s: float = 60.0
    shutdown_grace_s: float = 10.0
    finalize_s: float = 5.0
    job_grace_s: float = 60.0
    endpoint_s: float = 120.0  # the final coverage measurement of the corpus, after the job

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "recovery_retries":
                if type(value) is not int or not 1 <= value <= 100:
                    raise PolicyError(f"timeouts.{f.name}", f"{value!r}: expected an integer in 1..100")
            elif not _positive_number(value) or value > 86400:
                raise PolicyError(f"timeouts.{f.name}", f"{value!r}: expected seconds > 0 and <= 86400")
            else:
                object.__setattr__(self, f.name, float(value))


@dataclass(frozen=True)
class Policy(Canonical):
    """The layout, deadline, executor and seed default to the reference campaign's (``core.reference``);
    no failure is injected unless the schedule says so. The executor's name is checked against
    the registry where it is available (``executors.check_name``): the core does not import it."""

    ranks: int = REFERENCE["ranks"]
    warm_spares: int = REFERENCE["warm_spares"]
    workers_per_master: int = REFERENCE["workers_per_master"]
    deadline_s: float = REFERENCE["deadline_s"]
    failure_schedule: tuple[FailureEvent, ...] = ()
    executor: str = REFERENCE["executor"]
    target: str | None = None
    executor_options: dict[str, Any] = field(default_factory=dict)
    hosts: tuple[tuple[str, int], ...] = ()
    minimum_hosts: int = REFERENCE["minimum_hosts"]
    seed: int = REFERENCE["seed"]
    ulfm: bool = True
    max_message_bytes: int = 4 * 1024 * 1024
    poison_deaths: int = 2  # worker deaths while executing an input before it is quarantined (core.master.poison)
    stop_when_exhausted: bool = True  # end before the deadline once the search is exhausted (core.master.termination)
    timeouts: Timeouts = field(default_factory=Timeouts)
    worker_kinds: tuple[tuple[str, int], ...] = ()  # per master group (core.kinds); () = every slot the executor
    keep: str = "all"  # which candidates enter the corpus: "all" distinct ones, or only "novel" ones (and findings)
    slice_s: float = 5.0  # how long a fuzzer worker's lease runs before it returns what it kept
    isolation: str = "namespaces"  # target code in namespaces (executors.sandbox.isolation), or "none"
    idle: str = "fuzz"  # an analysis worker with nothing to analyze: runs slices of the campaign's fuzzer kind, or "wait"
    # a budget by count (core.master.termination): the campaign ends once, in a generation >= stop_from that no
    # scheduled failure is still to end, every worker has that many results committed in it; 0: the deadline only
    stop_after: int = 0
    stop_from: int = 0
    # what an analysis worker gets next (core.master.frontier): "seed" order (seeds, then inputs that added
    # coverage, shorter first), or "edge" order (by the edges no analysis was on, with the campaign's record of
    # tried branches, core.master.branches)
    concolic_order: str = "seed"
    # the mix of kinds: "fixed" (worker_kinds as given) or "adaptive" (analysis slots lent to the idle kind by
    # what each kind yields, core.master.mix)
    mix: str = "fixed"

    def __post_init__(self):
        self._validate()
        object.__setattr__(self, "deadline_s", float(self.deadline_s))
        object.__setattr__(self, "slice_s", float(self.slice_s))
        size = len(self.to_bytes())
        if size > MAX_POLICY_BYTES:
            raise PolicyError("policy", f"{size} bytes of policy (executor options and seeds included) exceed "
                                        f"{MAX_POLICY_BYTES}; pass large seeds with --seeds DIR")

    def _validate(self) -> None:
        _int_in("ranks", self.ranks, 2, 4096)
        _int_in("warm_spares", self.warm_spares, 0, self.ranks - 2)
        _int_in("workers_per_master", self.workers_per_master, 1, 4096)
        if not _positive_number(self.deadline_s) or self.deadline_s > 7 * 86400:
            raise PolicyError("deadline_s", f"{self.deadline_s!r}: expected seconds > 0 and <= 604800")
        if not isinstance(self.failure_schedule, tuple) or not all(isinstance(e, FailureEvent) for e in self.failure_schedule):
            raise PolicyError("failure_schedule", "expected parsed events; a string G:R[@PHASE][!],... goes through build_policy")
        if not isinstance(self.hosts, tuple) or not all(
            isinstance(h, tuple) and len(h) == 2 and isinstance(h[0], str) and type(h[1]) is int for h in self.hosts
        ):
            raise PolicyError("hosts", "expected parsed (HOST, SLOTS) pairs; a string HOST:SLOTS,... goes through build_policy")
        if not isinstance(self.executor, str) or not _EXECUTOR_NAME.fullmatch(self.executor):
            raise PolicyError("executor", f"{self.executor!r}: expected an executor's name (which ones exist is the "
                                          "executor registry's, symcc_ulfm.executors)")
        if self.target is not None and (not isinstance(self.target, str) or not self.target.strip()):
            raise PolicyError("target", f"{self.target!r}: expected a built-in name, module:function or file.py:function")
        if not isinstance(self.executor_options, dict) or not all(isinstance(k, str) for k in self.executor_options):
            raise PolicyError("executor_options", "expected a JSON object with string keys")
        _check_plain("executor_options", self.executor_options)
        slots = sum(s for _, s in self.hosts)
        if self.hosts and slots != self.ranks:
            raise PolicyError("hosts", f"{format_hosts(self.hosts)} has {slots} slots for {self.ranks} ranks; they must be equal")
        # Without a host spec the hosts are the job's: this machine, or a Slurm allocation that launch
        # places the ranks in (core.allocation) and checks against minimum_hosts before the job starts.
        _int_in("minimum_hosts", self.minimum_hosts, 1, len(self.hosts) if self.hosts else self.ranks)
        _int_in("seed", self.seed, 0, 2**63 - 1)
        if type(self.ulfm) is not bool:
            raise PolicyError("ulfm", f"{self.ulfm!r}: expected true or false")
        _int_in("max_message_bytes", self.max_message_bytes, 4096, 256 * 1024 * 1024)
        _int_in("poison_deaths", self.poison_deaths, 1, 100)
        if type(self.stop_when_exhausted) is not bool:
            raise PolicyError("stop_when_exhausted", f"{self.stop_when_exhausted!r}: expected true or false")
        if not isinstance(self.timeouts, Timeouts):
            raise PolicyError("timeouts", "expected a timeouts object")
        self.timeouts.validate()
        if self.active_budget < 2:
            raise PolicyError("warm_spares", f"{self.warm_spares} spares leave {self.active_budget} active ranks; need >= 2")
        check_kinds(self.worker_kinds, self.workers_per_master)
        if self.isolation not in ("namespaces", "none"):
            raise PolicyError("isolation", f"{self.isolation!r}: expected namespaces or none")
        if self.keep not in ("all", "novel"):
            raise PolicyError("keep", f"{self.keep!r}: expected all or novel")
        if self.idle not in ("fuzz", "wait"):
            raise PolicyError("idle", f"{self.idle!r}: expected fuzz or wait")
        if self.concolic_order not in ("seed", "edge"):
            raise PolicyError("concolic_order", f"{self.concolic_order!r}: expected seed or edge")
        if self.mix not in ("fixed", "adaptive"):
            raise PolicyError("mix", f"{self.mix!r}: expected fixed or adaptive")
        if self.mix == "adaptive" and (self.idle != "fuzz" or self.executor not in self.slots
                                       or set(self.slots) == {self.executor}):
            raise PolicyError("mix", "the adaptive mix lends analysis slots to the idle kind: it needs --idle fuzz "
                                     "and --worker-kinds with slots of the executor and of a fuzzer kind")
        _int_in("stop_after", self.stop_after, 0, 10**9)
        _int_in("stop_from", self.stop_from, 0, 10**6)
        if self.stop_from and not self.stop_after:
            raise PolicyError("stop_from", f"{self.stop_from}: a generation from which a budget counts needs stop_after")
        if not _positive_number(self.slice_s) or not 0.2 <= self.slice_s <= 3600:
            raise PolicyError("slice_s", f"{self.slice_s!r}: expected seconds in 0.2..3600")
        if self.worker_kinds and self.slice_s > self.timeouts.lease_s / 2:
            raise PolicyError("slice_s", f"{self.slice_s:g} s: a fuzzer's slice must end well within its lease "
                                         f"(at most lease_s/2 = {self.timeouts.lease_s / 2:g} s)")
        if self.failure_schedule and not self.ulfm:
            raise PolicyError("failure_schedule", "injected failures need the ULFM path; drop --no-ulfm or the schedule")
        predict(self.ranks, self.warm_spares, self.workers_per_master, self.failure_schedule)
        exits = [e for e in self.failure_schedule if not e.sigkill]
        if 2 * len(exits) >= self.ranks:
            raise ScheduleError("failure_schedule", f"{len(exits)} of {self.ranks} ranks would exit with status "
                              f"{INJECTED_EXIT_CODE}: Open MPI 5's runtime aborts the whole job once half of its ranks "
                              "have exited with a non-zero status (deaths by a signal do not count); end some events "
                              "with ! (SIGKILL), or run more ranks")

    @property
    def active_budget(self) -> int:
        return self.ranks - self.warm_spares

    @property
    def slots(self) -> tuple[str, ...]:
        """The kind of each worker slot of a group (``core.kinds.slot_kinds``); () = the executor."""
        return slot_kinds(self.worker_kinds)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind a worker of this campaign may run, the executor first."""
        return tuple(dict.fromkeys((self.executor, *self.slots)))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": POLICY_FORMAT,
            "ranks": self.ranks,
            "warm_spares": self.warm_spares,
            "workers_per_master": self.workers_per_master,
            "deadline_s": self.deadline_s,
            "failure_schedule": format_schedule(self.failure_schedule),
            "executor": self.executor,
            "target": self.target,
            "executor_options": self.executor_options,
            "hosts": format_hosts(self.hosts),
            "minimum_hosts": self.minimum_hosts,
            "seed": self.seed,
            "ulfm": self.ulfm,
            "max_message_bytes": self.max_message_bytes,
            "poison_deaths": self.poison_deaths,
            "stop_when_exhausted": self.stop_when_exhausted,
            "timeouts": asdict(self.timeouts),
            **({"worker_kinds": format_kinds(self.worker_kinds)} if self.worker_kinds else {}),
            **({"keep": self.keep} if self.keep != "all" else {}),
            **({"slice_s": self.slice_s} if self.slice_s != 5.0 else {}),
            **({"isolation": self.isolation} if self.isolation != "namespaces" else {}),
            **({"idle": self.idle} if self.idle != "fuzz" else {}),
            **({"stop_after": self.stop_after} if self.stop_after else {}),
            **({"stop_from": self.stop_from} if self.stop_from else {}),
            **({"concolic_order": self.concolic_order} if self.concolic_order != "seed" else {}),
            **({"mix": self.mix} if self.mix != "fixed" else {}),
        }


    @classmethod
    def from_json(cls, value: Any) -> Policy:
        """Parse the canonical form (or a hand-written subset of it); unknown keys are rejected."""
        if not isinstance(value, dict):
            raise PolicyError("policy", "expected a JSON object")
        data = dict(value)
        fmt = data.pop("format", POLICY_FORMAT)
        if fmt != POLICY_FORMAT:
            raise PolicyError("format", f"{fmt!r}: expected {POLICY_FORMAT!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise PolicyError(unknown[0], f"unknown policy field; known fields: {', '.join(sorted(known))}")
        if "failure_schedule" in data:
            data["failure_schedule"] = parse_schedule(data["failure_schedule"])
        if "hosts" in data:
            data["hosts"] = parse_hosts(data["hosts"])
        if "timeouts" in data:
            data["timeouts"] = _timeouts_from_json(data["timeouts"])
        if "worker_kinds" in data:
            data["worker_kinds"] = parse_kinds(data["worker_kinds"])
        return cls(**data)


class _Unset:
    def __repr__(self) -> str:
        return "(not set)"


UNSET = _Unset()  # a field one side of differences() does not have (an executor option)


def fields_of(policy: Policy) -> dict[str, Any]:
    """Every field of ``policy`` as its canonical form writes it (those written only when set
    too), with ``timeouts.NAME`` and ``executor_options.KEY`` one entry each: what a resume
    compares the options it is given with (:func:`differences`)."""
    data = {"worker_kinds": format_kinds(policy.worker_kinds), "keep": policy.keep, "slice_s": policy.slice_s,
            "isolation": policy.isolation, "idle": policy.idle, "concolic_order": policy.concolic_order,
            "mix": policy.mix, **policy.to_json()}
    del data["format"]
    for nested in ("timeouts", "executor_options"):
        data.update({f"{nested}.{key}": value for key, value in data.pop(nested).items()})
    return data


def differences(stored: Policy, given: Policy) -> list[tuple[str, Any, Any]]:
    """``(field, stored value, given value)`` for each field of :func:`fields_of` that differs,
    sorted by field; a value one side does not have is :data:`UNSET`."""
    a, b = fields_of(stored), fields_of(given)
    return [(name, a.get(name, UNSET), b.get(name, UNSET)) for name in sorted(set(a) | set(b))
            if a.get(name, UNSET) != b.get(name, UNSET)]


def build_policy(**overrides: Any) -> Policy:
    """A policy from CLI-style strings: ``failure_schedule`` and ``hosts`` may be strings."""
    if isinstance(overrides.get("failure_schedule"), str):
        overrides["failure_schedule"] = parse_schedule(overrides["failure_schedule"])
    if isinstance(overrides.get("hosts"), str):
        overrides["hosts"] = parse_hosts(overrides["hosts"])
    if isinstance(overrides.get("timeouts"), dict):
        overrides["timeouts"] = _timeouts_from_json(overrides["timeouts"])
    if isinstance(overrides.get("worker_kinds"), str):
        overrides["worker_kinds"] = parse_kinds(overrides["worker_kinds"])
    return Policy(**overrides)


def _timeouts_from_json(value: Any) -> Timeouts:
    if not isinstance(value, dict):
        raise PolicyError("timeouts", "expected a JSON object")
    known = {f.name for f in fields(Timeouts)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise PolicyError(f"timeouts.{unknown[0]}", f"unknown field; known: {', '.join(sorted(known))}")
    return Timeouts(**value)


def _int_in(name: str, value: Any, low: int, high: int) -> None:
    if type(value) is not int or not low <= value <= high:
        raise PolicyError(name, f"{value!r}: expected an integer in {low}..{high}")


def _positive_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value > 0


MAX_OPTION_DEPTH = 16


def _check_plain(name: str, value: Any, depth: int = 0) -> None:
    """Executor options travel as JSON: only plain JSON values, nested at most ``MAX_OPTION_DEPTH`` deep."""
    if depth > MAX_OPTION_DEPTH and isinstance(value, (dict, list)):
        raise PolicyError(".".join(name.split(".")[:2]), f"nested more than {MAX_OPTION_DEPTH} levels deep")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise PolicyError(name, "object keys must be strings")
            _check_plain(f"{name}.{key}", item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_plain(name, item, depth + 1)
    elif not isinstance(value, _JSON_SCALARS) or (isinstance(value, float) and not math.isfinite(value)):
        raise PolicyError(name, f"{value!r} is not a plain JSON value")
