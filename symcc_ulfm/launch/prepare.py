"""Preparing a campaign's state directory: the executor probe, the policy and identity, the seeds.

A state directory is used only when nobody else can change it (``store.trust``) and by one
launch at a time (``store.joblock``): :func:`prepare_state_dir` takes the directory's
``launch.lock`` and holds it (:func:`hold`) until :func:`release` or the end of the process.

A resume runs the stored policy (:func:`resume_policy`): options given with ``--resume`` are
checked against it, and a longer deadline is recorded as an extension (``core.deadlines``).
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..core.budget import check_lease
from ..core.canonical import digest
from ..core.finding import useless_seeds_warning
from ..core.membership import Membership
from ..core.modes import FileModes
from ..core.policy import UNSET, Policy, build_policy, differences
from ..errors import PolicyError, WalCorruption
from ..executors import Executor, Target, check_kinds, create, is_fuzzer
from ..executors.sandbox.forkserver import grace_s
from ..executors.sandbox.parent import Sandbox
from ..store.corpus import Corpus
from ..store.deadline_file import read_deadlines, write_deadlines
from ..store.dirs import ensure_dir
from ..store.durability import Barrier
from ..store.heartbeat import last_sign_of_life
from ..store.identity import require_same, write_identity
from ..store.joblock import OwnerLock
from ..store.paths import StateDir, foreign_entries
from ..store.policy_file import holds_policy, write_policy
from ..store.reads import read_json_object
from ..store.seed_record import record_seeds
from ..store.snapshots import SnapshotStore
from ..store.state_files import open_state
from ..store.trust import check_entries, check_layout, check_state_dir
from ..store.wal import WorkWAL

_OWNED: dict[Path, OwnerLock] = {}  # state directories this process holds (prepare_state_dir .. release)
SEEDS_MEASURED = 256  # seeds the probe measures, at most: enough to see that they all take one path
SEEDS_BUDGET_S = 10.0  # and the time it may spend on them


@dataclass(frozen=True)
class ExecutorProbe:
    """What a contained executor says about itself before a campaign starts."""

    identity: dict
    sha256: str
    seeds: list[bytes]
    execution_limit_s: float  # with the sandbox's grace when the executor is contained
    run_limit_s: float
    kinds: dict[str, dict] = field(default_factory=dict)  # identities of the other worker kinds (core.kinds)
    seed_names: dict[str, list[str]] = field(default_factory=dict)  # SHA-256 -> file names (--seeds DIR)
    seeds_note: str | None = None  # seeds that reach nothing the seeds before them did (AFL++'s "useless")


def check_executor(policy: Policy, seeds: list[bytes] | None = None,
                   seed_names: dict[str, list[str]] | None = None) -> ExecutorProbe:
    """Build the executor once, contained, before anything is written, and each other worker kind
    the policy names: a bad target fails here (exit 2), and the target's code never runs in this
    process. ``seeds`` (``--seeds DIR``) replace the executor's own; ``seed_names`` are the file
    names they were read under (``executors.seed_dirs``), kept in the seed record."""
    check_kinds(policy.executor, policy.slots)
    identity, seeds_of, execution, run, note = _probe(policy, policy.executor, seeds)
    kinds = {}
    for kind in policy.kinds[1:]:
        kinds[kind], _, kind_execution, kind_run, _ = _probe(policy, kind)
        if is_fuzzer(kind):
            kind_run += policy.slice_s  # a lease holds a whole slice, then what ends it
        execution, run = max(execution, kind_execution), max(run, kind_run)
    return ExecutorProbe(identity, digest(identity), seeds_of if seeds is None else list(seeds), execution, run,
                         kinds, dict(seed_names or {}) if seeds is not None else {}, note)


def _probe(policy: Policy, kind: str, given: list[bytes] | None = None,
           ) -> tuple[dict, list[bytes], float, float, str | None]:
    """A kind's identity, seeds and limits (one execution with the sandbox's grace, one run); of
    the campaign's executor (``given``: the seeds that replace its own) also what :func:`_seeds_note`
    says of the seeds, when its target code runs isolated (``isolation`` namespaces: a seed's
    execution sees no process outside its sandbox)."""
    executor = create(kind, policy.target, policy.executor_options, isolation=policy.isolation)
    try:
        execution = executor.execution_limit_s
        if isinstance(executor, Sandbox):
            execution += grace_s(execution)
        seeds = executor.seeds() if isinstance(executor, Executor) else []  # a fuzzer brings none
        # without namespaces the seeds' target code could reach this process (the launch): not run here
        measured = kind == policy.executor and policy.isolation != "none"
        note = _seeds_note(executor, seeds if given is None else given) if measured else None
        return executor.identity(), seeds, execution, executor.run_limit_s, note
    finally:
        executor.close()


def _seeds_note(executor: Target, seeds: list[bytes]) -> str | None:
    """The seeds (the first :data:`SEEDS_MEASURED` distinct ones, within :data:`SEEDS_BUDGET_S`)
    measured in their order, as AFL++'s dry run runs its ``-i``: a warning when some reach no
    coverage id the seeds before them did not (``core.finding.useless_seeds_warning``), else None."""
    distinct = list(dict.fromkeys(seeds))[:SEEDS_MEASURED]
    if len(distinct) < 2:
        return None
    covered: set[int] = set()
    useless = measured = 0
    for found in executor.measure_many(distinct, budget_s=SEEDS_BUDGET_S):
        if found is None:
            break
        measured += 1
        useless += not found.outcome.is_finding and found.coverage <= covered
        covered |= found.coverage
    # a kind that measures no coverage (SymCC without an AFL twin) says nothing of the seeds
    return useless_seeds_warning(measured, useless, len(covered)) if useless and covered else None


def prepare_state_dir(policy: Policy, state_dir: Path, modes: FileModes, resume: bool = False,
                      probe: ExecutorProbe | None = None, new_seeds: bool = False,
                      deadline_s: float | None = None) -> StateDir:
    """Create the state directory: the canonical policy and the executor identity (create-only),
    and the seeds as corpus objects.

    The directory must be one nobody else can change (``store.trust``, exit 2 naming the path);
    this process takes its ``launch.lock`` first (exit 2 naming the holder when another launch
    has it), so the policy written is the policy run. A directory that already holds a campaign
    is only accepted with ``resume``, the same policy (:func:`resume_policy`) and the same
    executor identity (exit 6 when the target changed); ``new_seeds`` publishes the probe's seeds
    into it as well (``launch --resume --seeds DIR``), and ``deadline_s`` (``--resume
    --deadline S``; a new campaign's deadline is its policy's) longer than the campaign's
    deadline is recorded as an extension in force from the epoch the next job opens
    (``deadline.json``). A campaign that reached its deadline is
    resumed only with a longer one.
    """
    probe = probe or check_executor(policy)
    check_lease(policy, probe.run_limit_s, probe.execution_limit_s)
    state = StateDir(Path(state_dir).absolute(), modes)
    check_state_dir(state.root)
    _refuse_foreign(state)
    ensure_dir(state.root, modes.snapshot_dir)
    check_state_dir(state.root)  # what was created, and what a racing creator may have put there
    hold(state)
    try:
        _prepare(policy, state, resume, probe, new_seeds, deadline_s)
    except BaseException:
        release(state)
        raise
    return state


def _refuse_foreign(state: StateDir) -> None:
    """A directory with files no campaign writes is someone else's: refused before anything is
    written into it (a state that died before its policy was written holds only its own names)."""
    if not state.root.is_dir() or state.policy.exists():
        return
    foreign = foreign_entries(state.root)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise PolicyError("state_dir", f"{state.root} is not empty and holds no campaign ({shown}); "
                                       "give a new or empty directory")


def resume_policy(state_dir: Path, modes: FileModes, given: dict[str, Any]) -> Policy:
    """The policy stored in ``state_dir``, for ``launch --resume``, once the options given with the
    resume are checked against it.

    ``given`` holds the policy fields the options set, as :func:`~symcc_ulfm.core.policy.build_policy`
    takes them (``executor_options`` and ``timeouts``: only the keys given). Every field whose
    given value differs from the stored one is named with both values (exit 2, before anything
    is written); a ``deadline_s`` is compared with the latest deadline (``core.deadlines``): a
    longer one is no difference but an extension (:func:`prepare_state_dir` records it), a
    shorter one is refused. The state is opened as every command opens it
    (``store.state_files``): a damaged policy, deadline or membership file is refused naming it
    (exit 2), before the lock is taken.
    """
    state = StateDir(Path(state_dir).absolute(), modes)
    if not os.path.lexists(state.policy):
        raise PolicyError("state_dir", f"{state.root} holds no campaign to resume")
    files = open_state(state.root, modes)  # a damaged policy, deadline or membership file: exit 2, named
    stored = files.policy
    merged = {**{f.name: getattr(stored, f.name) for f in fields(Policy)}, **given, "deadline_s": stored.deadline_s,
              "executor_options": {**stored.executor_options, **given.get("executor_options", {})},
              "timeouts": {**asdict(stored.timeouts), **given.get("timeouts", {})}}
    found = differences(stored, build_policy(**merged))
    latest = files.deadlines.latest
    if given.get("deadline_s", latest) < latest:
        found.append(("deadline_s", latest, given["deadline_s"]))
    if found:
        shown = "; ".join(f"{name}: stored {_shown(old)}, given {_shown(new)}" for name, old, new in sorted(found))
        raise PolicyError("--resume", f"{shown} ({state.policy}; a resume may extend the deadline, nothing else). "
                                      f"Resume with the stored policy: {resume_command(state.root)}")
    return stored


def resume_command(state_root: Path) -> str:
    """The command that resumes the campaign in ``state_root``: its stored policy needs no option."""
    return shlex.join(["symcc-ulfm", "launch", "--state-dir", str(state_root), "--resume"])


def _shown(value: Any) -> str:
    text = repr(value) if value is UNSET else json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def hold(state: StateDir) -> None:
    """Hold the state directory's ``launch.lock`` in this process (kept when held already)."""
    if state.root not in _OWNED:
        _OWNED[state.root] = OwnerLock(state.root, state.modes.snapshot)


def release(state: StateDir) -> None:
    """Give up this process's hold of the state directory (the end of the process does it too)."""
    owner = _OWNED.pop(state.root, None)
    if owner is not None:
        owner.release()


def _prepare(policy: Policy, state: StateDir, resume: bool, probe: ExecutorProbe, new_seeds: bool,
             deadline_s: float | None) -> None:
    if state.policy.exists():
        if not resume:
            raise PolicyError("state_dir", f"{state.root} already holds a campaign; use --resume or a new directory")
        if not holds_policy(state, policy):
            raise PolicyError("state_dir", f"{state.root} holds a campaign with a different policy; cannot resume")
        require_same(state.executor, probe.sha256, "the resumed campaign")
        for kind, identity in probe.kinds.items():
            require_same(state.executor, digest(identity), f"the resumed campaign's {kind} workers", kind)
        epoch = preflight(state).epoch
        stored = read_deadlines(state, policy)
        deadlines = stored if deadline_s is None else stored.extended(epoch + 1, deadline_s)
        ended = _finished(state)
        if ended is not None and ended.get("status") == "deadline-reached" and \
                ended.get("deadline_s", deadlines.latest) >= deadlines.latest:
            raise PolicyError("state_dir", f"the campaign in {state.root} already reached its deadline of "
                                           f"{deadlines.latest:g} s; nothing to resume (--deadline S with S > "
                                           f"{deadlines.latest:g} extends it)")
        if deadlines != stored:
            write_deadlines(state, deadlines)
        if new_seeds:
            _publish_seeds(state, probe.seeds, probe.seed_names)
        return
    if resume:
        raise PolicyError("state_dir", f"{state.root} holds no campaign to resume")
    state.create()
    write_policy(state, policy)
    write_identity(state.executor, probe.identity, state.modes.snapshot, probe.kinds)
    _publish_seeds(state, probe.seeds, probe.seed_names)


def _finished(state: StateDir) -> dict | None:
    """How the last job of the campaign ended (``outcome.json``: its ``status`` and the
    ``deadline_s`` it ran to), None when it never did.

    Only a campaign that reached its deadline is over, until a resume extends it: one that
    stopped because its search was exhausted, its budget by count was spent (each generation
    counts its own) or too few members were left may be resumed with the time it has left."""
    return read_json_object(state.outcome)


def _publish_seeds(state: StateDir, seeds: list[bytes], names: dict[str, list[str]]) -> None:
    """Record the seeds (``store.seed_record``, with the names they were read under), then publish
    them, durable together by one group commit before the job starts (one ``fsync`` per object
    and claim took 5.7 ms a seed, 3 minutes for 20,000)."""
    record_seeds(state, seeds, names)
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    barrier = Barrier(state.corpus)
    try:
        for seed in seeds:
            corpus.publish_seed(seed, barrier)
        barrier.sync()
    finally:
        barrier.close()


def preflight(state: StateDir) -> Membership:
    """Before a resume: the durable state must be trustworthy, or nothing starts (exit 4); the
    current membership.

    A corrupted WAL record or a broken receipt chain is reported by name and left as it is;
    a special file where the corpus, the claims, the records or the logs hold regular files is
    refused by name before anything reads it.
    """
    check_layout(state.root)
    current = SnapshotStore(state.membership, state.modes.snapshot).current()
    for directory in (state.corpus / "objects", state.corpus / "claims"):
        check_entries(directory)
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    wal = WorkWAL(state.wal, state.root, corpus, state.modes.snapshot)
    problems = [str(problem) for _, _, problem in wal.scan() if problem is not None]
    if problems:
        raise WalCorruption(f"{len(problems)} WAL record(s) cannot be trusted; refusing to resume: " + "; ".join(problems))
    last_sign_of_life(state.logs, before=float("inf"))  # every log and heartbeat is a regular file
    return current
