"""The message protocol's scenarios: the real master driver and the real worker loop, and scripted
ranks where a scenario needs a peer to misbehave, over any transport.

A scenario gives each rank of a six-rank job a role in each of its stages: ``MASTER`` (the real
``runtime.master_driver.MasterDriver``), ``WORKER`` (the real ``runtime.worker_loop.WorkerLoop``
on the ``simulate`` executor), a *play* (a scripted rank: a function of the bench that returns
what it observed), a :class:`Peer` (master 3 scripted as the coordinator's partner in deciding
exhaustion) or nothing (a silent member of the layout). ``test_message_protocol`` plays every
scenario over the loopback transport in-process, with a clock the bench advances itself (a
deadline or a lease expiry takes no real time), and over MPI under ``mpiexec`` (``mpi_job.py``,
real time); the same check then judges what the scripted ranks observed and what the real roles
left in the state directory. Kept free of pytest so that the MPI job can import it.

A verdict never depends on how much work fits into a stretch of time: a scenario ends on a fact
(the search exhausted, a STOP a scripted master sends, a master's death), its deadline
(``SAFETY_S``) only a safety net, unless the deadline, a lease expiry or a give-up bound is the
behaviour under test; the inputs, slices and findings a check needs are chosen when this module is
imported (:func:`options_where`), and a scripted rank waits for a fact (:meth:`LoopbackBench.wait_for`)
rather than for a while. A play that meets something else than it waits for raises: its bench
records the failure as what that rank observed (``play-failed``), so under MPI it fails the
scenario's own check and the job plays on.

Layout (generation 0, no spares, two workers per master): masters 0 and 3, workers 1 and 2 of
master 0, workers 4 and 5 of master 3. Every rank is on a host of its own unless a scenario
says otherwise, so a lease that expires is reported, never fenced by a kill.

A later stage of a scenario runs on the same state directory after a membership change its
``before`` hook commits (a resume receipt: the whole job was lost and started again), so a
master restarting from the WAL is played by a new driver on what the earlier stage left.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from symcc_ulfm.core import envelope
from symcc_ulfm.core.budget import epoch_deadline
from symcc_ulfm.core.canonical import sha256_hex
from symcc_ulfm.core.master import events as ev
from symcc_ulfm.core.master.ownership import owner
from symcc_ulfm.core.master.poison import SIGNATURE
from symcc_ulfm.core.master.rounds import PIPELINE
from symcc_ulfm.core.membership import commit, initial_membership, resume
from symcc_ulfm.core.policy import Policy, build_policy
from symcc_ulfm.core.slices import descriptor, slice_hash
from symcc_ulfm.evidence.oracle.mix_checks import MixChecks
from symcc_ulfm.evidence.oracle.rules import expected_kinds, lent_kind
from symcc_ulfm.executors import engine
from symcc_ulfm.runtime.injection import Injector
from symcc_ulfm.runtime.loopback import Loopback
from symcc_ulfm.runtime.master_driver import MasterDriver
from symcc_ulfm.runtime.rank_state import RankState
from symcc_ulfm.runtime.transport import CONTROL, DATA, FRONTIER, SENTINEL
from symcc_ulfm.runtime.worker_loop import WorkerLoop
from symcc_ulfm.store.corpus import Corpus
from symcc_ulfm.store.deadline_file import read_deadlines, write_deadlines
from symcc_ulfm.store.durability import Barrier
from symcc_ulfm.store.findings import read_findings
from symcc_ulfm.store.identity import read_identity, write_identity
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.store.policy_file import read_policy
from symcc_ulfm.store.runlog import BURST, RankLog, read_log
from symcc_ulfm.store.snapshots import SnapshotStore
from symcc_ulfm.store.staging import WorkerStaging
from symcc_ulfm.store.wal import WorkWAL

RANKS = 6
MASTER, W1, W2, PEER, W4, W5 = range(RANKS)
MASTERS = (MASTER, PEER)
HOSTS = tuple(f"host-{chr(97 + r)}" for r in range(RANKS))
LIMIT = 4096
GRACE_S = 0.4
SAFETY_S = 30.0  # the deadline of a scenario that ends on a fact: reached only when the fact never comes
# Where the deadline is itself the behaviour, the time a stage's first rounds may take: its first
# leases must be out before it (the deadline counts from when every rank is set up; a round took
# up to 0.25 s on 2 cores with two of them kept busy)
START_S = 2.0
MASTER_ROLE, WORKER_ROLE = "master", "worker"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def owned_by(master: int, prefix: str, count: int = 1, masters=MASTERS) -> list[bytes]:
    """``count`` inputs that rendezvous ownership gives to ``master``."""
    found, i = [], 0
    while len(found) < count:
        data = f"{prefix}-{i}".encode()
        if owner(sha(data), masters) == master:
            found.append(data)
        i += 1
    return found


SEED = owned_by(MASTER, "seed")[0]
CHILDREN = [*owned_by(MASTER, "child", 2), *owned_by(PEER, "child")]  # two stay here, one goes to master 3
FORWARDED = owned_by(MASTER, "forwarded")[0]


class Dies(Exception):
    """The simulated death of a real role at a chosen instruction (the state stays as it was)."""


class Unexpected(Exception):
    """A play got another message than the one it waits for (a STOP, or none: every real role stopped)."""


# -- scenarios -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    roles: dict[int, object]  # rank -> MASTER_ROLE, WORKER_ROLE, a Peer or a play(bench) -> observed
    before: Callable[[Path, float], None] | None = None  # on the state, before the stage (rank 0)
    dies_at: dict[int, type] = field(default_factory=dict)  # real master -> the instruction it dies at
    hosts: dict[int, str] = field(default_factory=dict)  # rank -> host, where it differs from HOSTS

    @property
    def real(self) -> tuple[int, ...]:
        """The ranks that play a real role."""
        return tuple(r for r, role in self.roles.items() if role in (MASTER_ROLE, WORKER_ROLE))


@dataclass(frozen=True)
class Scenario:
    name: str
    stages: tuple[Stage, ...]
    check: Callable[[Path, dict[int, dict]], None]
    deadline_s: float = SAFETY_S
    lease_s: float = 30.0
    grace_s: float = GRACE_S  # how long a stopping master waits for the results of its outstanding leases
    options: dict = field(default_factory=lambda: {"cost_s": 0, "children": 3})  # simulate's
    stop_when_exhausted: bool = True
    seeds: tuple[bytes, ...] = (SEED,)  # None: the executor's own
    setup: Callable[[Path], None] | None = None  # on the prepared state, before the first stage
    worker_kinds: str = ""  # e.g. simfuzz:1,simulate:1 (core.kinds)
    keep: str = "all"
    idle: str = "fuzz"  # what an analysis worker with nothing to analyze does (core.policy)
    stop_after: int = 0  # a budget by count: results per worker that end the campaign (core.master.termination)
    order: str = "seed"  # what analysis workers get next (core.master.frontier)
    mix: str = "fixed"  # the mix of kinds (core.master.mix)


def policy_of(scenario: Scenario) -> Policy:
    return build_policy(ranks=RANKS, warm_spares=0, workers_per_master=2, deadline_s=scenario.deadline_s,
                        executor="simulate", executor_options=scenario.options, ulfm=False,
                        max_message_bytes=LIMIT, stop_when_exhausted=scenario.stop_when_exhausted,
                        timeouts={"lease_s": scenario.lease_s, "shutdown_grace_s": scenario.grace_s},
                        worker_kinds=scenario.worker_kinds, keep=scenario.keep, slice_s=0.2, idle=scenario.idle,
                        stop_after=scenario.stop_after, concolic_order=scenario.order, mix=scenario.mix)


def prepare(root: Path, scenario: Scenario, started_at: float) -> None:
    """A state directory as ``launch`` leaves it (policy, executor identity, seeds) with the
    generation-0 snapshot the ranks agree on, then the scenario's own setup."""
    policy = policy_of(scenario)
    state = StateDir(root).create()
    state.policy.write_bytes(policy.to_bytes())
    executor = engine("simulate", None, scenario.options)
    kinds = {kind: engine(kind, None, scenario.options).identity() for kind in policy.kinds[1:]}
    write_identity(state.executor, executor.identity(), state.modes.snapshot, kinds)
    corpus = corpus_of(root)
    for seed in (scenario.seeds if scenario.seeds is not None else executor.seeds()):
        corpus.publish_seed(seed)
    membership = initial_membership(RANKS, 0, 2, HOSTS, sha256_hex(policy.to_bytes()), started_at, policy.slots)
    snapshots(root).write_generation0(membership)
    if scenario.setup:
        scenario.setup(root)


def rank_state(root: Path, scenario: Scenario, stage: Stage, stable: int) -> RankState:
    """What rank ``stable`` knows in ``stage`` (the current membership of the state directory)."""
    policy = policy_of(scenario)
    state = StateDir(root)
    log = RankLog(state.rank_log(stable), stable, state.modes.snapshot)
    membership = snapshots(root).current()
    hosts = [stage.hosts.get(r, HOSTS[r]) for r in range(RANKS)]
    peers = [{"host": host, "pid": fence_pid(root) if r in stage.hosts else 0} for r, host in enumerate(hosts)]
    ctx = RankState(stable, policy, state, log, Injector((), stable, log), peers=peers, hot_rounds=0)
    ctx.set_generation(membership)
    return ctx


def stage_deadline(root: Path, scenario: Scenario) -> float:
    """The deadline of the current epoch, as every rank computes it (``runtime.rank_state``)."""
    m = snapshots(root).current()
    return epoch_deadline(m.epoch_started_at, m.consumed_s,
                          read_deadlines(StateDir(root), policy_of(scenario)).of_epoch(m.epoch))


def fence_pid(root: Path) -> int:
    """The process a fence may kill in place of a rank: ``sleep``, started by :func:`start_fence_target`."""
    return int((root / "fence-target.pid").read_text())


def start_fence_target(root: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    (root / "fence-target.pid").write_text(str(process.pid))


FENCE_WAIT_S = 10.0  # a SIGKILL is delivered in milliseconds: a bound on waiting for it, not a window
GONE = -1  # the wait status of a process that is not our child and was reaped after it ended


def fence_target_killed(root: Path) -> bool:
    """Whether the fence's process was SIGKILLed: waits (up to ``FENCE_WAIT_S``) for it to end
    and reaps it; one that did not end is killed now and counts as not killed."""
    pid = fence_pid(root)
    end = time.monotonic() + FENCE_WAIT_S
    while (status := _ended(pid)) is None:
        if time.monotonic() >= end:
            os.kill(pid, signal.SIGKILL)
            _ended(pid, wait=True)
            return False
        time.sleep(0.01)
    return status == GONE or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL)


def _ended(pid: int, wait: bool = False) -> int | None:
    """The wait status of ``pid`` once it ended, None while it runs. A process that is not our
    child (under MPI the master's rank started it) is read from ``/proc/<pid>/stat``: a zombie
    nobody reaps keeps its wait status there (field 52); one that is gone is ``GONE``."""
    try:
        done, status = os.waitpid(pid, 0 if wait else os.WNOHANG)
        return status if done else None
    except ChildProcessError:
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return GONE
    return int(fields[49]) if fields[0] == "Z" else None


def real_master(ctx: RankState, transport, stage: Stage, clock=time.time) -> MasterDriver:
    driver = MasterDriver(ctx, transport, clock=clock)
    instruction = stage.dies_at.get(ctx.stable)
    if instruction is not None:
        def die(_):
            raise Dies(f"master {ctx.stable} dies at {instruction.__name__}")
        driver._perform[instruction] = die
    return driver


def played(play, bench) -> dict:
    """What a play observed; one that failed records why (``play-failed``), so that under MPI the
    failure is its scenario's alone and the job plays on."""
    try:
        return play(bench)
    except Exception as exc:  # noqa: BLE001 - reported by the scenario's judgement
        return {"play-failed": f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"}


def judge(scenario: Scenario, root: Path, observed: dict[int, dict]) -> None:
    """The scenario's check, after making sure that every play ran to its end."""
    failed = {rank: seen["play-failed"] for rank, seen in observed.items() if "play-failed" in seen}
    assert not failed, failed
    scenario.check(root, observed)


# -- benches: where the roles play ------------------------------------------------------------------------


class Bench:
    """What a scripted rank does on either bench: take messages from ``transport(rank)``; each bench
    says how time passes (``pump``) and when every real role has stopped (``expect_any``)."""

    def receive_any(self, rank: int, sources: tuple[tuple[int, str], ...]) -> tuple[str, dict] | None:
        """The next message that arrived for ``rank`` from one of ``(source, channel)``, if any."""
        for source, channel in sources:
            raw = self.transport(rank).receive(source, channel, f"{channel} from {source}")
            if raw is not None:
                return channel, envelope.decode(raw, LIMIT)
        return None

    def receive(self, rank: int, source: int, channel: str) -> dict | None:
        got = self.receive_any(rank, ((source, channel),))
        return got[1] if got else None

    def expect(self, rank: int, source: int, channel: str) -> dict | None:
        got = self.expect_any(rank, ((source, channel),))
        return got[1] if got else None


class LoopbackBench(Bench):
    """Every rank in this process: the real roles and the :class:`Peer` step whenever a scripted
    rank waits, and time is a clock this bench advances."""

    STEP_S = 0.05  # longer than a commit may wait (``machine.MAX_COMMIT_DELAY``): a round is never put off
    WAIT_STEPS = 2000  # of :meth:`wait_for`: far more than any fact takes (a few rounds)

    def __init__(self, root: Path, scenario: Scenario):
        self.root = root
        self.scenario = scenario
        self.now = time.time()
        prepare(root, scenario, self.now)

    def stage(self, stage: Stage) -> dict[int, dict]:
        """Play ``stage``: what its scripted ranks observed, by rank."""
        self.open(stage)
        observed = {rank: played(play, self) for rank, play in stage.roles.items()
                    if callable(play) and not isinstance(play, Peer)}
        self.finish()
        return {**observed, **{rank: peer.observed() for rank, peer in self.peers.items()}}

    def open(self, stage: Stage) -> None:
        """Start the stage's real roles and its peer on a fresh loopback hub."""
        if stage.before:
            stage.before(self.root, self.now)
        self.deadline = stage_deadline(self.root, self.scenario)
        self.hub = Loopback(range(RANKS), LIMIT)
        self.endpoints = {rank: self.hub.endpoint(rank) for rank in range(RANKS)}
        self.masters, self.workers, self.dead, self.peers = {}, {}, {}, {}
        for rank, role in stage.roles.items():
            if role == MASTER_ROLE:
                ctx = rank_state(self.root, self.scenario, stage, rank)
                self.masters[rank] = real_master(ctx, self.endpoints[rank], stage, clock=lambda: self.now)
                self._guard(rank, self.masters[rank].prepare)
            elif role == WORKER_ROLE:
                ctx = rank_state(self.root, self.scenario, stage, rank)
                self.workers[rank] = WorkerLoop(ctx, self.endpoints[rank], clock=lambda: self.now)
                self.workers[rank].start()
        for rank, role in stage.roles.items():
            if isinstance(role, Peer):
                self.peers[rank] = role.start(self)

    def _guard(self, rank: int, action) -> None:
        if rank in self.dead:
            return
        try:
            action()
        except Dies as exc:  # it stops where it was: nothing more is sent or cleaned up
            self.dead[rank] = str(exc)

    def transport(self, rank: int):
        return self.endpoints[rank]

    def clock(self) -> float:
        return self.now

    def live(self) -> bool:
        """Whether a real role of the stage still runs."""
        return any(not d.stopped and r not in self.dead for r, d in self.masters.items()) or any(
            not w.stopped for w in self.workers.values())

    def pump(self) -> None:
        self.now += self.STEP_S
        for rank, driver in self.masters.items():
            if not driver.stopped:
                self._guard(rank, driver.step)
        for worker in self.workers.values():
            if not worker.stopped:
                worker.step()
        self._answer_peers()

    def _answer_peers(self) -> None:
        for rank, peer in self.peers.items():
            while not peer.done and (got := self.receive_any(rank, peer.sources)) is not None:
                peer.take(self, *got)

    def idle(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.pump()

    def expect_any(self, rank: int, sources: tuple[tuple[int, str], ...]) -> tuple[str, dict] | None:
        """The next message for ``rank`` from one of ``sources``; None once every real role stopped."""
        for _ in range(400_000):
            if (got := self.receive_any(rank, sources)) is not None:
                return got
            if not self.live():
                return None
            self.pump()
        raise AssertionError("the real roles neither answered nor stopped")

    def wait_for(self, fact: Callable[[], object], what: str, seen: Callable[[], object] = lambda: None):
        """Step the real roles until ``fact()`` holds (its value is returned): at most
        ``WAIT_STEPS`` steps, or until every real role stopped; then raise with what was seen."""
        for _ in range(self.WAIT_STEPS):
            if value := fact():
                return value
            if not self.live():
                break
            self.pump()
        if value := fact():
            return value
        raise AssertionError(f"waited in vain for {what}; saw {seen()!r}")

    def flush(self) -> None:
        """Sends complete at once."""

    def finish(self) -> None:
        for _ in range(400_000):
            if not self.live():
                break
            self.pump()
        else:
            raise AssertionError("the real roles did not stop")
        self._answer_peers()
        for driver in self.masters.values():
            driver.transport.close()
            driver.ctx.log.flush_limited()
            driver.close()
        for worker in self.workers.values():
            worker.finish()
            worker.ctx.log.flush_limited()


class MpiBench(Bench):
    """One scripted rank of an MPI job (``mpi_job.py``): real time, the other roles in their own
    processes. A real role that ends leaves ``ended-<stage>-<rank>`` in the state directory, so a
    scripted rank learns that every real role stopped as it does on the loopback bench."""

    WAIT_S = 30.0  # beyond the deadline: a bound on waiting for a fact, never reached when it comes
    DRAIN_POLLS = 200  # receives tried after the last real role ended, for what it sent before

    def __init__(self, root: Path, transport, deadline: float, real: tuple[int, ...], stage: int):
        self.root = root
        self._transport = transport
        self.deadline = deadline
        self.real = real
        self.stage = stage
        self.end = max(deadline, time.time()) + self.WAIT_S

    @staticmethod
    def ended(root: Path, stage: int, rank: int) -> Path:
        return root / f"ended-{stage}-{rank}"

    def transport(self, rank: int):
        return self._transport

    def clock(self) -> float:
        return time.time()

    def live(self) -> bool:
        return not all(self.ended(self.root, self.stage, rank).exists() for rank in self.real)

    def pump(self) -> None:
        self._transport.progress()
        time.sleep(0.0005)

    def idle(self, seconds: float) -> None:
        end = time.time() + seconds
        while time.time() < end:
            self.pump()

    def expect_any(self, rank: int, sources: tuple[tuple[int, str], ...]) -> tuple[str, dict] | None:
        while time.time() < self.end:
            if (got := self.receive_any(rank, sources)) is not None:
                return got
            if not self.live():
                for _ in range(self.DRAIN_POLLS):
                    self._transport.progress()
                    if (got := self.receive_any(rank, sources)) is not None:
                        return got
                return None
            self.pump()
        return None

    def wait_for(self, fact: Callable[[], object], what: str, seen: Callable[[], object] = lambda: None):
        """Poll until ``fact()`` holds (its value is returned), until every real role stopped or
        the bound ``end``; then raise with what was seen."""
        while time.time() < self.end and self.live():
            if value := fact():
                return value
            self.pump()
        if value := fact():
            return value
        raise AssertionError(f"waited in vain for {what}; saw {seen()!r}")

    def flush(self) -> None:
        while self._transport.busy and time.time() < self.end:
            self.pump()


def run_loopback(root: Path, scenario: Scenario) -> dict[int, dict]:
    """Play ``scenario`` over the loopback transport; what each scripted rank observed, by rank
    (a later stage's observations replace an earlier one's of the same rank)."""
    bench = LoopbackBench(root, scenario)
    observed: dict[int, dict] = {}
    for stage in scenario.stages:
        observed.update(bench.stage(stage))
    return observed


# -- what the scripted ranks do ----------------------------------------------------------------------------


def send(bench, rank: int, dest: int, channel: str, payload: bytes) -> None:
    bench.transport(rank).send(dest, channel, payload, f"{channel} to {dest}")


def ready(bench, worker: int = W1, generation: int = 0) -> None:
    send(bench, worker, MASTER, DATA, envelope.encode("READY", LIMIT, generation=generation, worker=worker))


def staged(bench, work: dict, children: list[bytes], worker: int = W1) -> list[dict]:
    staging = WorkerStaging(bench.root, worker, StateDir(bench.root).modes.corpus, StateDir(bench.root).modes.snapshot_dir)
    candidates = []
    for i, child in enumerate(children):
        digest, _ = staging.stage(work["lease"], child)
        candidates.append({"sha256": digest, "length": len(child), "coverage": [100 + i], "hint": None})
    staging.close()
    return candidates


def result(bench, work: dict, children: list[bytes] = (), worker: int = W1, **change) -> bytes:
    """A RESULT for ``work`` whose children are staged in the worker's own staging directory."""
    fence = {k: work[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
    message = {**fence, "candidates": staged(bench, work, list(children), worker), "findings": [],
               "stats": {"seconds": 0.001}, "error": None, **change}
    return json.dumps({"v": envelope.VERSION, "type": "RESULT", **message}).encode()


def next_work(bench, worker: int = W1) -> dict:
    """The next WORK for ``worker``; anything else (a STOP, or none: the master stopped) raises."""
    message = bench.expect(worker, MASTER, DATA)
    if message is None or message["type"] != "WORK":
        raise Unexpected(f"worker {worker} waited for a WORK and got {message}")
    return message


def hold(bench, count: int, worker: int = W1) -> list[dict]:
    """The first ``count`` WORKs for ``worker`` (no RESULT sent meanwhile), and any that came with them."""
    held: list[dict] = []

    def arrived() -> bool:
        while (message := bench.receive(worker, MASTER, DATA)) is not None:
            held.append(message)
        return len(held) >= count

    bench.wait_for(arrived, f"{count} WORKs for worker {worker}", lambda: held)
    if any(w["type"] != "WORK" for w in held):
        raise Unexpected(f"worker {worker} waited for {count} WORKs and got {held}")
    return held


def serve(bench, answer: Callable[[dict], list[bytes]] | None, worker: int = W1) -> dict:
    """Take WORK until STOP (or the end), answering each with ``answer`` (None: never answer)."""
    works, stop = [], None
    while (message := bench.expect(worker, MASTER, DATA)) is not None:
        if message["type"] == "STOP":
            stop = message["reason"]
            break
        works.append(message["input_hash"])
        for payload in answer(message) if answer else ():
            send(bench, worker, MASTER, DATA, payload)
    bench.flush()
    return {"works": works, "stop": stop}


def empty_results(bench) -> Callable[[dict], list[bytes]]:
    return lambda work: [result(bench, work)]


def status_of(probe: dict, sent: int, received: int) -> bytes:
    """The STATUS that answers ``probe`` from a scripted master that is idle and has met any
    campaign budget, with the fields of this protocol's STATUS."""
    return envelope.encode("STATUS", LIMIT, generation=probe["generation"], master=PEER, wave=probe["wave"],
                           idle=True, sent=sent, received=received, satisfied=True)


@dataclass(frozen=True)
class Peer:
    """Master 3, scripted as the coordinator's partner in deciding that the search is over
    (``runtime.exhaustion``): it sends master 0 ``sends`` (FRONTIER messages) first, then takes
    the FRONTIERs master 0 sends it, answers each PROBE on the control channel with a STATUS (idle,
    and how many input-carrying FRONTIERs it sent and received) and stops at EXHAUSTED. On the
    loopback bench it answers whenever the bench steps; under MPI this is its rank's play."""

    sends: tuple[bytes, ...] = ()

    def start(self, bench) -> PeerState:
        for payload in self.sends:
            send(bench, PEER, MASTER, FRONTIER, payload)
        return PeerState(sent=sum(1 for p in self.sends if envelope.decode(p, LIMIT)["items"]))

    def __call__(self, bench) -> dict:
        peer = self.start(bench)
        while not peer.notice and (got := bench.expect_any(PEER, peer.sources)) is not None:
            peer.take(bench, *got)
        bench.flush()
        return peer.observed()


@dataclass
class PeerState:
    sent: int
    frontier: list[dict] = field(default_factory=list)
    probes: int = 0
    notice: dict | None = None  # the EXHAUSTED message
    sources = ((MASTER, FRONTIER), (MASTER, CONTROL))

    @property
    def done(self) -> bool:
        return self.notice is not None

    def take(self, bench, channel: str, message: dict) -> None:
        if channel == FRONTIER:
            self.frontier.append(message)
        elif message["type"] == "PROBE":
            self.probes += 1
            received = sum(1 for m in self.frontier if m["items"])
            send(bench, PEER, MASTER, CONTROL, status_of(message, self.sent, received))
        elif message["type"] == "EXHAUSTED":
            self.notice = message

    def observed(self) -> dict:
        return {"frontier": self.frontier, "probes": self.probes, "notice": self.notice}


# -- reading what the roles left ------------------------------------------------------------------------------


def log_of(root: Path, rank: int) -> list[dict]:
    path = StateDir(root).rank_log(rank)
    return read_log(path) if path.exists() else []


def events(root: Path, rank: int, name: str) -> list[dict]:
    return [e for e in log_of(root, rank) if e["event"] == name]


def records(root: Path) -> dict[str, dict]:
    """WAL records by input SHA-256."""
    state = StateDir(root)
    wal = WorkWAL(state.wal, state.root, corpus_of(root), state.modes.snapshot)
    return {r["input_hash"]: r for r in wal.records()}


def wal_state(root: Path, data: bytes) -> dict | None:
    return records(root).get(sha(data))


def corpus_of(root: Path) -> Corpus:
    state = StateDir(root)
    return Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)


def snapshots(root: Path) -> SnapshotStore:
    state = StateDir(root)
    return SnapshotStore(state.membership, state.modes.snapshot)


def rejections(root: Path, rank: int = MASTER) -> list[str]:
    return [e["reason"] for e in log_of(root, rank) if e["event"] in ("message-rejected", "result-rejected")]


def check_every_line_names_its_stimulus(root: Path) -> None:
    lines = [e for e in log_of(root, MASTER) if e["event"] not in ("worker-stop",)]
    assert lines and all(isinstance(e.get("stimulus"), str) and e["stimulus"] for e in lines), lines


def check_counted_once(root: Path) -> None:
    """Every done record is counted by exactly one commit line, and every object it claims is in the corpus."""
    done = {r["work_hash"]: r for r in records(root).values() if r["state"] == "done"}
    counted = [e["work_hash"] for rank in MASTERS for e in events(root, rank, "commit")]
    assert sorted(counted) == sorted(set(counted)), "a work item counted twice"
    assert set(counted) <= set(done)
    corpus = corpus_of(root)
    for record in done.values():
        assert all(corpus.read(name) is not None for name in record["done"]["claimed"])


def stop_reasons(root: Path, rank: int) -> list[str]:
    return [e["reason"] for e in events(root, rank, "worker-stop")]


def check_exhausted_end(root: Path, master: int = MASTER) -> None:
    """The search ended because it was exhausted: decided by the coordinator, stopped as at the deadline."""
    assert events(root, master, "exhausted"), [e["event"] for e in log_of(root, master)][-20:]


# -- the scenarios: scripted peers against the real master ---------------------------------------------------


def play_commit(bench) -> dict:
    ready(bench)

    def answer(work):
        return [result(bench, work, CHILDREN if work["input_hash"] == sha(SEED) else [])]

    return serve(bench, answer)


def check_commit(root: Path, observed: dict[int, dict]) -> None:
    worker, peer = observed[W1], observed[PEER]
    assert worker["works"][0] == sha(SEED) and worker["stop"] == "exhausted"
    # the children this master owns come back as work; the one master 3 owns is forwarded to it
    assert sorted(worker["works"][1:]) == sorted(sha(c) for c in CHILDREN[:2])
    items = [i["input_hash"] for m in peer["frontier"] for i in m["items"]]
    assert items == [sha(CHILDREN[2])]
    assert all(m["generation"] == 0 and m["master"] == MASTER for m in peer["frontier"])
    assert peer["notice"] is not None and peer["probes"] >= 2  # two waves agreed
    record = wal_state(root, SEED)
    assert record["state"] == "done" and sorted(record["done"]["claimed"]) == sorted(sha(c) for c in CHILDREN)
    assert all(corpus_of(root).read(sha(c)) == c for c in CHILDREN)
    commits = events(root, MASTER, "commit")
    assert len(commits) == 3 and commits[0]["generated"] == 3 and commits[0]["novel"] == 3
    check_exhausted_end(root)
    check_every_line_names_its_stimulus(root)


def play_pipeline(bench) -> dict:
    """Hold every lease the master sends before answering any: the pipeline's depth. With one
    ready worker a round leases it an input while it holds fewer than ``PIPELINE - 1``, and no
    round runs without a RESULT to commit, so it gets exactly that many; the WAL, read while it
    holds them, shows no other lease."""
    ready(bench)
    held = hold(bench, PIPELINE - 1)
    leased = sorted(h for h, r in records(bench.root).items() if r["state"] == "leased")
    for work in held:
        send(bench, W1, MASTER, DATA, result(bench, work))
    rest = serve(bench, empty_results(bench))
    return {"held": [w["input_hash"] for w in held], "leased": leased, **rest}


PIPELINE_SEEDS = tuple(owned_by(MASTER, "pipeline", PIPELINE + 2))


def check_pipeline(root: Path, observed: dict[int, dict]) -> None:
    seen = observed[W1]
    assert len(seen["held"]) == PIPELINE - 1 and seen["leased"] == sorted(seen["held"])
    assert seen["stop"] == "exhausted"
    done = [r for r in records(root).values() if r["state"] == "done"]
    assert len(done) == len(PIPELINE_SEEDS)  # the held ones, then the rest
    lease_of = {r["work_hash"]: r["lease"]["token"] for r in records(root).values()}
    tokens = [int(lease_of[e["work_hash"]].split(".")[-1]) for e in events(root, MASTER, "commit")]
    assert tokens == sorted(tokens)  # committed in the order they were leased
    check_exhausted_end(root)
    check_counted_once(root)


def play_return_after_deadline(bench) -> dict:
    """Hold a full pipeline until just past the deadline, then do what a worker does there: the
    RESULT of the lease it ran and a RETURN of the others (and of one lease it never held)."""
    ready(bench)
    held = hold(bench, PIPELINE - 1)
    bench.idle(max(0.0, bench.deadline - bench.clock()) + 0.05)
    send(bench, W1, MASTER, DATA, result(bench, held[0]))
    tokens = [w["lease"] for w in held[1:]]
    send(bench, W1, MASTER, DATA, envelope.encode("RETURN", LIMIT, generation=0, worker=W1,
                                                  leases=[*tokens, "0.0.999"]))
    rest = serve(bench, empty_results(bench))
    return {"held": [w["input_hash"] for w in held], "returned": tokens, **rest}


def check_return_after_deadline(root: Path, observed: dict[int, dict]) -> None:
    seen = observed[W1]
    assert len(seen["held"]) == PIPELINE - 1 and len(seen["returned"]) == len(seen["held"]) - 1
    assert seen["works"] == [] and seen["stop"] == "deadline"  # nothing leased after the deadline
    (returned,) = events(root, MASTER, "leases-returned")
    assert returned["worker"] == W1 and returned["count"] == len(seen["returned"])
    assert any("does not hold" in r for r in rejections(root))  # the lease it never held
    states = {sha(d): (wal_state(root, d) or {}).get("state") for d in PIPELINE_SEEDS}
    assert states[seen["held"][0]] == "done"
    assert all(states[h] == "leased" for h in seen["held"][1:])  # released, reclaimed by a later generation
    (stop,) = events(root, MASTER, "master-stop")
    assert stop["abandoned"] == 0 and stop["totals"]["analyzed"] == 1
    # it stopped at the RETURN, not after its grace: the RESULT committed, nothing abandoned
    lines = log_of(root, MASTER)
    at = {e["event"]: i for i, e in enumerate(lines)}
    (committed,) = [i for i, e in enumerate(lines) if e["event"] == "commit"]
    assert lines[committed]["work_hash"] == records(root)[seen["held"][0]]["work_hash"]
    assert at["deadline"] < at["leases-returned"] < committed < at["master-stop"]
    check_counted_once(root)


def play_out_of_order(bench) -> dict:
    ready(bench)
    first, second = next_work(bench), next_work(bench)
    send(bench, W1, MASTER, DATA, result(bench, second))  # leases run in order: refused
    send(bench, W1, MASTER, DATA, result(bench, first))
    send(bench, W1, MASTER, DATA, result(bench, second))
    rest = serve(bench, empty_results(bench))
    return {"first": first["input_hash"], "second": second["input_hash"], **rest}


def check_out_of_order(root: Path, observed: dict[int, dict]) -> None:
    assert any("does not match the lease" in r for r in rejections(root))
    states = records(root)
    # the refused RESULT left its lease as it was: the genuine one after it committed it
    assert states[observed[W1]["first"]]["state"] == states[observed[W1]["second"]]["state"] == "done"
    assert observed[W1]["stop"] == "exhausted" and all(r["state"] == "done" for r in states.values())
    check_counted_once(root)


def play_hostile(bench) -> dict:
    forged_work = {"generation": 0, "shard": "g0-m0", "lease": "0.0.77", "work_hash": sha(b"w"),
                   "input_hash": sha(SEED), "worker": W1}
    for payload in (b"\xff\xfe not json", b"{" + b" " * 5000 + b"}",
                    envelope.encode("READY", LIMIT, generation=7, worker=W1),
                    envelope.encode("READY", LIMIT, generation=0, worker=W2),
                    result(bench, forged_work),
                    envelope.encode("FRONTIER", LIMIT, generation=0, master=W1, items=[], coverage=[])):
        send(bench, W1, MASTER, DATA, payload)
    send(bench, W1, MASTER, SENTINEL, b"x")
    ready(bench)

    def answer(work):
        if work["input_hash"] != sha(SEED):
            return [result(bench, work)]
        return [result(bench, work, lease=work["lease"] + "9"), result(bench, work, [b"hostile-child"])]

    return serve(bench, answer)


def check_hostile(root: Path, observed: dict[int, dict]) -> None:
    reasons = rejections(root)
    for expected in ("not UTF-8 JSON", "larger than 4096", "READY for generation 7", "READY for generation 0 from 2",
                     "holds no lease", "failure-sentinel", "FRONTIER is not a worker message",
                     "does not match the lease"):
        assert any(expected in r for r in reasons), (expected, reasons)
    assert wal_state(root, SEED)["state"] == "done"  # the genuine RESULT after the forged one
    assert wal_state(root, SEED)["done"]["claimed"] == [sha(b"hostile-child")]
    assert observed[W1]["stop"] == "exhausted"
    check_exhausted_end(root)
    check_every_line_names_its_stimulus(root)


def play_stale_fences(bench) -> dict:
    """RESULTs whose fence differs from the lease in one field each, then the genuine one."""
    ready(bench)
    work = next_work(bench)
    for change in ({"generation": 1}, {"shard": "g0-m3"}, {"lease": work["lease"] + "0"},
                   {"work_hash": sha(b"other work")}, {"input_hash": sha(b"other input")}):
        send(bench, W1, MASTER, DATA, result(bench, work, **change))
    send(bench, W1, MASTER, DATA, result(bench, work, [b"fresh-child"]))  # the lease still holds
    return serve(bench, empty_results(bench))


def check_stale_fences(root: Path, observed: dict[int, dict]) -> None:
    reasons = rejections(root)
    assert sum("does not match the lease" in r for r in reasons) >= 4, reasons
    assert any("generation" in r for r in reasons), reasons
    record = wal_state(root, SEED)
    assert record["state"] == "done" and record["done"]["claimed"] == [sha(b"fresh-child")]
    assert not events(root, MASTER, "result-rejected")  # refused as messages: the lease was never released
    assert observed[W1]["stop"] == "exhausted"
    check_counted_once(root)


def play_tampered_staging(bench) -> dict:
    """A RESULT whose staged object is changed after its SHA-256 was taken, one naming an object it
    never staged, then the genuine one."""
    ready(bench)
    work = next_work(bench)
    tampered = result(bench, work, [b"tampered-child"])
    staged_file = StateDir(bench.root).worker_staging(W1) / f"{work['lease']}@{sha(b'tampered-child')}"
    staged_file.write_bytes(b"something else entirely")
    send(bench, W1, MASTER, DATA, tampered)
    again = next_work(bench)
    unstaged = json.loads(result(bench, again))
    unstaged["candidates"] = [{"sha256": sha(b"never staged"), "length": 12, "coverage": [1], "hint": None}]
    send(bench, W1, MASTER, DATA, json.dumps(unstaged).encode())
    third = next_work(bench)
    send(bench, W1, MASTER, DATA, result(bench, third, [b"genuine-child"]))
    return serve(bench, empty_results(bench))


def check_tampered_staging(root: Path, observed: dict[int, dict]) -> None:
    record = wal_state(root, SEED)
    assert record["state"] == "done" and record["done"]["claimed"] == [sha(b"genuine-child")]
    corpus = corpus_of(root)
    assert not corpus.has(sha(b"tampered-child")) and not corpus.has(sha(b"never staged"))
    assert len(events(root, MASTER, "result-rejected")) == 2
    assert observed[W1]["stop"] == "exhausted"
    check_counted_once(root)


def play_implausible(bench) -> dict:
    """Statistics no worker can have measured, and a finding that names an input not in the result:
    each releases the lease and puts the input back, until it is dropped."""
    ready(bench)
    work = next_work(bench)
    send(bench, W1, MASTER, DATA, result(bench, work, stats={"generated": -1, "seconds": 0.1}))
    work = next_work(bench)
    send(bench, W1, MASTER, DATA, result(bench, work, stats={"seconds": 1e9}))
    work = next_work(bench)
    foreign = {"kind": "crash", "signature": "SIGSEGV", "detail": "", "sha256": sha(b"not in this result")}
    send(bench, W1, MASTER, DATA, result(bench, work, findings=[foreign]))
    return serve(bench, empty_results(bench))


def check_implausible(root: Path, observed: dict[int, dict]) -> None:
    reasons = [e["reason"] for e in events(root, MASTER, "result-rejected")]
    assert any("generated=-1" in r for r in reasons), reasons
    assert any("longer than a lease may run" in r for r in reasons), reasons
    assert any("not an input of this result" in r for r in reasons), reasons
    (dropped,) = events(root, MASTER, "input-dropped")
    assert dropped["input_hash"] == sha(SEED) and dropped["rejections"] == 3
    assert observed[W1] == {"works": [], "stop": "exhausted"}  # never leased again
    assert wal_state(root, SEED)["state"] == "leased"  # no manifest: nothing of it was published
    check_counted_once(root)


FLOOD = 300  # a master takes one message per worker per turn: the flood delays its sender's own READY
CLOCK_SLACK_S = 0.5  # a line's time is taken after the rate limiter's: by as much as a preemption


def play_flood(bench) -> dict:
    stale = envelope.encode("READY", LIMIT, generation=9, worker=W1)
    for _ in range(FLOOD):
        send(bench, W1, MASTER, DATA, stale)
        bench.flush()  # one send at a time: under MPI each poll of the pending ones may yield the core
    ready(bench)
    return serve(bench, empty_results(bench))


def check_flood(root: Path, observed: dict[int, dict]) -> None:
    rejected = events(root, MASTER, "message-rejected")
    lines = [e for e in rejected if e.get("source") == W1]
    summary = [e for e in rejected if e.get("key") == W1 and "source" not in e]  # RankLog.flush_limited's
    assert 0 < len(lines) < FLOOD
    assert len(lines) + sum(e.get("suppressed", 0) for e in lines + summary) == FLOOD  # every one counted
    # rate-limited: at most BURST lines in each second the flood lasted, however fast it was taken
    seconds = int(lines[-1]["t"] - lines[0]["t"] + CLOCK_SLACK_S) + 1
    assert len(lines) <= BURST * seconds, (len(lines), seconds)
    assert wal_state(root, SEED)["state"] == "done"  # and the genuine READY was served
    assert observed[W1]["stop"] == "exhausted"


def frontier_of_master(generation: int, master: int, items: list[dict]) -> bytes:
    return envelope.encode("FRONTIER", LIMIT, generation=generation, master=master, items=items,
                           coverage=[7] if items else [])


PEER_FORWARDS = (  # a stale FRONTIER, a forged one (it claims a worker sent it), the genuine one
    frontier_of_master(5, PEER, []), frontier_of_master(0, W4, []),
    frontier_of_master(0, PEER, [{"input_hash": sha(FORWARDED), "priority": 9, "hint": {"depth": 4}, "length": 9}]))


def play_worker_after_peer(bench) -> dict:
    """READY once the master took the peer's genuine FRONTIER: the forwarded input is queued then."""
    bench.wait_for(lambda: [e for e in events(bench.root, MASTER, "frontier-taken") if e["items"]],
                   "master 0 taking master 3's FRONTIER", lambda: rejections(bench.root))
    ready(bench)
    return serve(bench, empty_results(bench))


def check_frontier(root: Path, observed: dict[int, dict]) -> None:
    assert any("FRONTIER of generation 5 from master 3" in r for r in rejections(root))
    assert any("from master 3" in r and "generation 0" in r for r in rejections(root))
    works = observed[W1]["works"]
    assert works[0] == sha(FORWARDED)  # priority 9 goes before the seed
    assert sha(SEED) in works and observed[W1]["stop"] == "exhausted"
    assert wal_state(root, FORWARDED)["state"] == "done"
    assert wal_state(root, FORWARDED)["manifest"]["worker"] == W1
    check_exhausted_end(root)  # master 3's STATUS counted the FRONTIER it sent as master 0 counted it
    check_every_line_names_its_stimulus(root)


LEASE_S = 0.6  # of the scenarios whose silent worker holds its lease past it


def play_silent_worker(bench) -> dict:
    ready(bench)
    return serve(bench, None)


def check_lease_expiry_reported(root: Path, observed: dict[int, dict]) -> None:
    (expired,) = events(root, MASTER, "lease-expired")
    assert expired["worker"] == W1 and expired["fenced"] is False and "only local ranks" in expired["reason"]
    assert expired["held_s"] > LEASE_S
    (stop,) = events(root, MASTER, "master-stop")
    assert stop["abandoned"] >= 1 and stop["totals"]["analyzed"] == 0
    assert wal_state(root, SEED)["state"] == "leased"  # never committed, reclaimed by a later generation
    assert observed[W1] == {"works": [sha(SEED)], "stop": "deadline"}
    check_every_line_names_its_stimulus(root)


def check_lease_expiry_fenced(root: Path, observed: dict[int, dict]) -> None:
    (expired,) = events(root, MASTER, "lease-expired")
    assert expired["worker"] == W1 and expired["fenced"] is True and expired["pid"] == fence_pid(root)
    assert fence_target_killed(root)
    assert wal_state(root, SEED)["state"] == "leased"


def play_scripted_master(bench) -> dict:
    """A master that sends its real worker every kind of wrong WORK before one right one, then STOP
    once the RESULT came; what else the worker sent until it logged its stop."""
    message = bench.expect(MASTER, W1, DATA)
    if message is None or message["type"] != "READY":
        raise Unexpected(f"the master waited for READY and got {message}")
    work = {"generation": 0, "shard": "g0-m0", "lease": "0.0.1", "work_hash": sha(b"work"),
            "input_hash": sha(SEED), "worker": W1, "hint": None}
    for payload in (b"garbage", envelope.encode("WORK", LIMIT, **{**work, "generation": 7}),
                    envelope.encode("WORK", LIMIT, **{**work, "worker": W2}),
                    envelope.encode("READY", LIMIT, generation=0, worker=W1),
                    envelope.encode("WORK", LIMIT, **work)):
        send(bench, MASTER, W1, DATA, payload)
    first = bench.expect(MASTER, W1, DATA)
    if first is None or first["type"] != "RESULT":
        raise Unexpected(f"the master waited for a RESULT and got {first}")
    send(bench, MASTER, W1, DATA, envelope.encode("STOP", LIMIT, generation=0, reason="exhausted"))
    bench.flush()
    bench.wait_for(lambda: events(bench.root, W1, "worker-stop"), "the worker's stop", lambda: log_of(bench.root, W1))
    late = []
    while (message := bench.receive(MASTER, W1, DATA)) is not None:
        late.append(message["type"])
    return {"result": {k: first[k] for k in ("lease", "input_hash", "worker", "generation")},
            "late": late, "candidates": len(first["candidates"])}


def check_worker_fences_its_master(root: Path, observed: dict[int, dict]) -> None:
    seen = observed[MASTER]
    assert seen["result"] == {"lease": "0.0.1", "input_hash": sha(SEED), "worker": W1, "generation": 0}
    assert seen["late"] == [] and seen["candidates"] == 3
    reasons = rejections(root, W1)
    assert any("not UTF-8 JSON" in r for r in reasons), reasons
    assert sum("is not my work" in r for r in reasons) == 3, reasons  # generation 7, worker 2, a READY
    (stop,) = events(root, W1, "worker-stop")
    assert stop["reason"] == "exhausted" and stop["executed"] == 1 and stop["unstarted"] == 0  # the right WORK only


def play_master_goes_quiet(bench) -> dict:
    message = bench.expect(MASTER, W1, DATA)
    return {"ready": message["type"] if message else None}


def check_worker_gives_up(root: Path, observed: dict[int, dict]) -> None:
    assert observed[MASTER] == {"ready": "READY"}
    assert stop_reasons(root, W1) == ["no STOP from master in time"]


# -- the scenarios: the real worker -----------------------------------------------------------------------------


def analyzed(options: dict, masters: tuple[int, ...]) -> dict[bytes, list[bytes]]:
    """What the real ``masters`` analyze with the ``simulate`` ``options`` and its seeds, each input
    with its children, when the other masters are scripted: their seeds and every child one of them
    owns, to the end (a finite ``space`` makes it finite)."""
    executor = engine("simulate", None, options)
    todo = [s for s in executor.seeds() if owner(sha(s), MASTERS) in masters]
    children: dict[bytes, list[bytes]] = {}
    while todo:
        data = todo.pop()
        if data not in children:
            children[data] = executor.run(data).candidates
            todo += [c for c in children[data] if owner(sha(c), MASTERS) in masters]
    return children


def forwarded(options: dict) -> set[str]:
    """The inputs master 0 forwards to master 3: the children it finds that master 3 owns, but the seeds."""
    seeds = {sha(s) for s in engine("simulate", None, options).seeds()}
    return {sha(c) for kids in analyzed(options, (MASTER,)).values() for c in kids
            if owner(sha(c), MASTERS) == PEER} - seeds


def options_where(wanted: Callable[[dict], bool], **options) -> dict:
    """The first ``simulate`` options (``options`` with a ``seed``) for which ``wanted`` holds:
    chosen when this module is imported, so that what a check needs is constructed, not hoped for."""
    for seed in range(1000):
        trial = {"cost_s": 0, "seeds": 4, **options, "seed": seed}
        if wanted(trial):
            return trial
    raise AssertionError(f"no simulate seed gives what the scenario needs with {options}")


def seeds_of(options: dict, master: int) -> list[bytes]:
    return [s for s in engine("simulate", None, options).seeds() if owner(sha(s), MASTERS) == master]


# master 0 has two seeds (one for each worker's first lease), a dozen inputs to analyze, and finds
# inputs that master 3 owns
REAL = options_where(lambda o: len(seeds_of(o, MASTER)) >= 2 and len(analyzed(o, (MASTER,))) >= 12
                     and len(forwarded(o)) >= 2, children=4, space=32)


def done_records(root: Path) -> list[dict]:
    return [r for r in records(root).values() if r["state"] == "done"]


def check_real_worker(root: Path, observed: dict[int, dict]) -> None:
    expected = {sha(d) for d in analyzed(REAL, (MASTER,))}
    (executed,) = [e["executed"] for e in events(root, W1, "worker-stop")]
    assert executed == len(expected) and stop_reasons(root, W1) == ["exhausted"]
    done = done_records(root)
    assert {r["input_hash"] for r in done} == expected and all(r["manifest"]["worker"] == W1 for r in done)
    items = [i["input_hash"] for m in observed[PEER]["frontier"] for i in m["items"]]
    assert sorted(items) == sorted(forwarded(REAL))  # each of them once
    assert all(corpus_of(root).has(h) for h in items)
    (stop,) = events(root, MASTER, "master-stop")
    assert stop["totals"]["analyzed"] == len(done)
    check_exhausted_end(root)
    check_counted_once(root)
    check_every_line_names_its_stimulus(root)


def check_two_workers(root: Path, observed: dict[int, dict]) -> None:
    for worker in (W1, W2):
        (executed,) = [e["executed"] for e in events(root, worker, "worker-stop")]
        assert executed >= 1, worker
    done = done_records(root)
    assert {r["manifest"]["worker"] for r in done} == {W1, W2}
    assert {r["input_hash"] for r in done} == {sha(d) for d in analyzed(REAL, (MASTER,))}
    assert stop_reasons(root, W1) == stop_reasons(root, W2) == ["exhausted"]
    check_counted_once(root)


def findings_among(options: dict) -> set[str]:
    """The inputs master 0 analyzes that ``simulate`` reports as findings."""
    executor = engine("simulate", None, options)
    return {sha(d) for d in analyzed(options, (MASTER,)) if executor.run(d).findings}


# one input in two is a finding: some of what master 0 analyzes, not all
FINDINGS = options_where(lambda o: 0 < len(findings_among(o)) < len(analyzed(o, (MASTER,))),
                         findings=2, children=4, space=32)


def check_findings(root: Path, observed: dict[int, dict]) -> None:
    manifests = [r["manifest"] for r in done_records(root)]
    found = [f for m in manifests for f in m["findings"]]
    assert {f["sha256"] for f in found} == findings_among(FINDINGS)
    for m in manifests:
        keys = [(f["kind"], f["signature"], f["sha256"]) for f in m["findings"]]
        assert len(keys) == len(set(keys))
        assert all(f["sha256"] == m["input_hash"] for f in m["findings"])
    unique = read_findings(StateDir(root))
    assert 1 <= len(unique) <= 3 and all(u.kind == "exception" for u in unique)
    assert sum(len(u.inputs) for u in unique) == len({f["sha256"] for f in found})
    check_exhausted_end(root)
    check_counted_once(root)


def owned_in_space(options: dict, master: int = MASTER) -> int:
    """How many of the inputs ``simulate`` draws its children from (``space``) ``master`` owns."""
    executor = engine("simulate", None, options)
    return sum(owner(sha(executor._h("input", slot)[: 8 + slot % 25]), MASTERS) == master
               for slot in range(options["space"]))


# every seed of master 0 has so many distinct children (a candidate takes 119 bytes of a RESULT at
# least) that none of its RESULTs fits the message limit, and master 0 owns few of the inputs they
# are drawn from, so that it soon runs out
OVERSIZED = options_where(lambda o: owned_in_space(o) <= 14 and seeds_of(o, MASTER) and all(
    len(set(engine("simulate", None, o).run(s).candidates)) * 119 > LIMIT for s in seeds_of(o, MASTER)),
    children=100, space=40)


def check_truncated(root: Path, observed: dict[int, dict]) -> None:
    assert events(root, W1, "result-truncated")
    done = done_records(root)
    assert done and all(len(r["manifest"]["objects"]) < 80 for r in done)
    named = {(r["lease"]["token"], o["sha256"]) for r in done for o in r["manifest"]["objects"]}
    left = [p.name for p in StateDir(root).worker_staging(W1).iterdir() if "@" in p.name]
    assert all(tuple(name.split("@")) in named for name in left), left  # nothing staged that no manifest names
    check_exhausted_end(root)
    check_counted_once(root)


def passed_on(options: dict) -> set[bytes]:
    """Inputs master 3 owns that only master 0's analyses find: children of master 0's inputs, not seeds."""
    everything = analyzed(options, MASTERS)
    seeds = set(engine("simulate", None, options).seeds())
    return {c for d, kids in everything.items() if owner(sha(d), MASTERS) == MASTER for c in kids
            if owner(sha(c), MASTERS) == PEER} - seeds


# master 0 finds inputs that master 3 owns, and each master has seeds of its own
BETWEEN = options_where(lambda o: passed_on(o) and seeds_of(o, MASTER) and seeds_of(o, PEER),
                        children=4, space=20)


def check_two_masters(root: Path, observed: dict[int, dict]) -> None:
    done = done_records(root)
    assert {r["input_hash"] for r in done} == {sha(d) for d in analyzed(BETWEEN, MASTERS)}
    assert all(owner(r["input_hash"], MASTERS) == r["manifest"]["master"] for r in done)  # each by its owner
    by_peer = {r["input_hash"] for r in done if r["manifest"]["master"] == PEER}
    assert {sha(d) for d in passed_on(BETWEEN)} <= by_peer  # what master 0 found and forwarded
    for master in MASTERS:
        check_exhausted_end(root, master)
    check_counted_once(root)


def check_exhausted(root: Path, observed: dict[int, dict]) -> None:
    for master in MASTERS:
        (stop,) = events(root, master, "master-stop")
        assert events(root, master, "exhausted"), master
    assert events(root, MASTER, "search-exhausted")  # the coordinator decided
    for worker in (W1, W4):
        assert stop_reasons(root, worker) == ["exhausted"], worker
    states = records(root)
    assert all(r["state"] == "done" for r in states.values())
    assert set(states) == set(corpus_of(root).names())  # every object of the corpus analyzed, once
    check_counted_once(root)


# -- the scenarios: restarts ---------------------------------------------------------------------------------


FINITE = {"cost_s": 0, "children": 3, "space": 8}  # whatever a real worker finds from the seed, it runs out


def resumed(root: Path, now: float) -> None:
    """The whole job was lost and started again: a resume receipt opens the next epoch."""
    store = snapshots(root)
    previous = store.current()
    nxt, receipt = resume(previous, now, 0.2, previous.hosts)
    store.commit(nxt, receipt)


def resumed_for_longer(root: Path, now: float) -> None:
    """:func:`resumed` with the deadline extended (``launch --resume --deadline``) to ``SAFETY_S``."""
    state = StateDir(root)
    epoch = snapshots(root).current().epoch + 1
    write_deadlines(state, read_deadlines(state, read_policy(state)[0]).extended(epoch, SAFETY_S))
    resumed(root, now)


def check_reclaimed(root: Path, observed: dict[int, dict]) -> None:
    record = wal_state(root, SEED)
    assert record["state"] == "done" and record["done"]["generation"] == 1
    assert [lease["generation"] for lease in record["history"]] == [0]  # the lapsed lease of generation 0
    ready_lines = [e for e in events(root, MASTER, "master-ready") if e["generation"] == 1]
    assert ready_lines[0]["reclaimed"] == 1
    first = [e for e in events(root, W1, "corpus-read-verified") if e["generation"] == 1]
    assert first and first[0]["sha256"] == sha(SEED)  # reclaimed work goes first
    assert stop_reasons(root, W1) == ["exhausted"]
    check_counted_once(root)


def play_answer_seed_with_children(bench) -> dict:
    ready(bench)

    def answer(work):
        return [result(bench, work, CHILDREN[:2] if work["input_hash"] == sha(SEED) else [])]

    return serve(bench, answer)


def check_replayed(root: Path, observed: dict[int, dict]) -> None:
    record = wal_state(root, SEED)
    assert record["state"] == "done" and record["done"]["generation"] == 1  # replayed by the new master
    assert sorted(record["done"]["claimed"]) == sorted(sha(c) for c in CHILDREN[:2])
    ready_lines = [e for e in events(root, MASTER, "master-ready") if e["generation"] == 1]
    assert ready_lines[0]["replayed"] == 1
    seed_commits = [e for e in events(root, MASTER, "commit") if e["work_hash"] == record["work_hash"]]
    assert len(seed_commits) == 1 and seed_commits[0]["generation"] == 1  # counted once, by the replay
    assert stop_reasons(root, W1) == ["exhausted"]
    check_counted_once(root)
# -- concolic work by edge (core.master.branches) ------------------------------------------------------------

EDGE_CHILDREN = tuple(owned_by(MASTER, "edge", 5))
EDGE_COVERAGE = ([1, 2, 3], [1, 2], [1], [2], [3])  # the first child's path holds every edge of the others'
EDGE_TRIED = list(range(1000, 1060))  # more ids than one WORK under LIMIT carries (core.master.branches.room)
EDGE_FIRST = "edge-order-first-stage.json"


def play_edge_order(bench) -> dict:
    """Answer the seed with children and tried branches; hold the first leases, answer the best
    child alone and let its analysis be counted before the other leases are answered."""
    ready(bench)
    seed = next_work(bench)
    candidates = staged(bench, seed, list(EDGE_CHILDREN))
    for candidate, coverage in zip(candidates, EDGE_COVERAGE, strict=True):
        candidate["coverage"] = coverage
    send(bench, W1, MASTER, DATA, result(bench, seed, candidates=candidates, tried=EDGE_TRIED))
    held = hold(bench, PIPELINE - 1)
    send(bench, W1, MASTER, DATA, result(bench, held[0]))
    bench.wait_for(lambda: [e for e in events(bench.root, MASTER, "commit") if e["work_hash"] == held[0]["work_hash"]],
                   "the first child's analysis counted")
    for work in held[1:]:
        send(bench, W1, MASTER, DATA, result(bench, work))
    rest = serve(bench, empty_results(bench))
    works = [seed, *held]
    observed = {**rest, "works": [w["input_hash"] for w in works] + rest["works"],
                "tried": [w.get("tried", []) for w in works]}
    (bench.root / EDGE_FIRST).write_text(json.dumps(observed))  # the next stage's play replaces what it returns
    return observed


def play_edge_order_resumed(bench) -> dict:
    ready(bench, generation=1)
    return serve(bench, empty_results(bench))


def check_edge_order(root: Path, observed: dict[int, dict]) -> None:
    stage = json.loads((root / EDGE_FIRST).read_text())
    first = stage["works"]
    assert first[0] == sha(SEED) and first[1] == sha(EDGE_CHILDREN[0])  # the most edges no analysis was on
    # the record goes down in bounded deltas, each id once, in the order the master merged it
    deltas = stage["tried"]
    assert deltas[0] == [] and sum(deltas, []) == EDGE_TRIED and all(0 < len(d) < len(EDGE_TRIED) for d in deltas[1:3])
    assert wal_state(root, SEED)["manifest"]["tried"] == EDGE_TRIED
    skipped = {g: [e["input_hash"] for e in events(root, MASTER, "input-skipped") if e["generation"] == g] for g in (0, 1)}
    assert skipped[0] and not set(skipped[0]) & set(first)
    assert set(skipped[0]) | set(first[1:]) == {sha(c) for c in EDGE_CHILDREN}
    assert sorted(skipped[1]) == sorted(skipped[0])  # the new master rebuilt the same decision from the WAL
    assert observed[W1]["works"] == [] and observed[W1]["stop"] == "exhausted"  # nothing left to analyze
    stops = events(root, MASTER, "master-stop")
    assert [s["totals"]["skipped"] for s in stops] == [len(skipped[0]), len(skipped[0])]
    assert stage["stop"] == "exhausted"
    check_counted_once(root)


POISON = b"poison input"  # generation 2 has one group: master 0 owns every input


def poisoned(root: Path) -> None:
    """An input whose leases ended with the death of their workers twice: worker 1 in generation 0,
    worker 2 in generation 1, each executing it (its running marker names the lease)."""
    state = StateDir(root)
    store = snapshots(root)
    corpus = corpus_of(root)
    corpus.publish_seed(POISON)
    executor_sha = read_identity(state.executor)[1]
    wal = WorkWAL(state.wal, state.root, corpus, state.modes.snapshot)
    barrier = Barrier(state.root)
    for generation, worker in ((0, W1), (1, W2)):
        lease = {"generation": generation, "master": MASTER, "shard": f"g{generation}-m0",
                 "token": f"{generation}.0.1", "worker": worker}
        with wal.batch(barrier) as group:
            group.lease(sha(POISON), executor_sha, lease)
            group.sync()
        staging = WorkerStaging(state.root, worker, state.modes.corpus, state.modes.snapshot_dir)
        staging.mark_running(generation, lease["token"])
        staging.close()
        previous = store.current()
        store.commit(*commit(previous, store.prepare(previous, (worker,))))
    barrier.close()


def check_quarantined(root: Path, observed: dict[int, dict]) -> None:
    record = wal_state(root, POISON)
    assert record["state"] == "done" and record["manifest"]["master"] == record["manifest"]["worker"] == MASTER
    (finding,) = record["manifest"]["findings"]
    assert finding["kind"] == "crash" and finding["signature"] == SIGNATURE
    strikes = record["manifest"]["quarantine"]["strikes"]
    assert [(s["generation"], s["worker"]) for s in strikes] == [(0, W1), (1, W2)]
    (ready_line,) = events(root, MASTER, "master-ready")
    assert ready_line["quarantined"] == 1 and ready_line["generation"] == 2
    assert [e["workers"] for e in events(root, MASTER, "input-quarantined")] == [[W1, W2]]
    assert record["lease"]["worker"] == MASTER  # leased to the master itself, never to a worker again
    check_exhausted_end(root)  # the only master of generation 2: idle once it started
    check_counted_once(root)


# -- the scenarios: worker kinds ---------------------------------------------------------------------------------

# A fuzzer worker is never idle, so the search is never exhausted: these two end on a budget of
# results per worker (Scenario.stop_after), the deadline a safety net only.


def first_slice(options: dict) -> tuple[list[bytes], set[bytes], set[int]]:
    """Worker 1's first slice of generation 0: what it keeps, which of those are crashes, the coverage ids."""
    fuzzer = engine("simfuzz", None, options)
    run = fuzzer.fuzz(descriptor("simfuzz", 0, MASTER, W1, 1, 0.2))
    return run.candidates, {f.data for f in run.findings}, set().union(*(fuzzer.measure(c).coverage
                                                                        for c in run.candidates))


def slices_options() -> dict:
    """One edge for both kinds (four coverage ids, its hit classes) and a fuzzer whose first slice
    keeps six distinct inputs that cover all four: at most four of them add coverage, and every
    candidate an analysis finds after it adds none. Of them one at least is a crash, and two
    master 0 owns are not (inputs for the analysis worker)."""
    for seed in range(10_000):
        options = {"cost_s": 0, "children": 4, "edges": 1,
                   "simfuzz": {"kept": 6, "space": 40, "findings": 3, "seed": seed}}
        kept, crashes, covered = first_slice(options)
        mine = [k for k in kept if k not in crashes and owner(sha(k), MASTERS) == MASTER]
        if len(set(kept)) == 6 and len(covered) == 4 and crashes and len(mine) >= 2:
            return options
    raise AssertionError("no simfuzz seed keeps the first slice the scenario needs")


SLICES = slices_options()


def check_fuzzer_slices(root: Path, observed: dict[int, dict]) -> None:
    """A fuzzer worker's slices are published like results: new inputs, counted once, analyzed by
    the concolic-kind worker; of the analysis results what added nothing is dropped (keep =
    novel), a slice keeps what its fuzzer kept; the staging is gone."""
    states = records(root)
    done = [r for r in states.values() if r["state"] == "done"]
    slices = [r for r in done if r["manifest"]["slice"] is not None]
    analyzed_ = [r for r in done if r["manifest"]["slice"] is None]
    assert slices and analyzed_
    assert all(r["manifest"]["kind"] == "simfuzz" and r["manifest"]["worker"] == W1 for r in slices)
    assert all(r["manifest"]["kind"] == "simulate" and r["manifest"]["worker"] == W2 for r in analyzed_)
    assert all(slice_hash(r["manifest"]["slice"]) == r["input_hash"] for r in slices)
    assert len({r["manifest"]["slice"]["seq"] for r in slices}) == len(slices)  # each slice once
    (first,) = [r for r in slices if r["manifest"]["slice"]["seq"] == 1]
    kept, crashes, _ = first_slice(SLICES)
    assert sorted(o["sha256"] for o in first["manifest"]["objects"]) == sorted(sha(k) for k in kept)
    found = {o["sha256"] for r in slices for o in r["manifest"]["objects"] if o["sha256"] in r["done"]["claimed"]}
    assert found & {r["input_hash"] for r in analyzed_}, "no input a fuzzer kept was analyzed"
    assert all(o["novel"] for r in analyzed_ for o in r["manifest"]["objects"]
               if not r["manifest"]["findings"])  # keep = novel: only test cases that added coverage
    assert all(r["manifest"]["dropped"] for r in analyzed_)  # the first slice left nothing to add
    assert all(r["manifest"]["dropped"] == [] for r in slices)  # what a fuzzer kept is its own queue
    assert sum(not o["novel"] for o in first["manifest"]["objects"]) >= 2  # six inputs, four coverage ids
    assert {f["sha256"] for f in first["manifest"]["findings"]} == {sha(c) for c in crashes}
    assert all(f["kind"] == "crash" for r in slices for f in r["manifest"]["findings"])
    staged = [p.name for w in (W1, W2) for p in StateDir(root).worker_staging(w).iterdir() if "@" in p.name]
    pending = {(r["lease"]["token"], n) for r in states.values() if r["state"] != "done" for n in
               [o["sha256"] for o in (r["manifest"] or {"objects": []})["objects"]]}
    leased = {r["lease"]["token"] for r in states.values() if r["state"] == "leased"}
    assert all(name.split("@")[0] in leased or tuple(name.split("@")) in pending for name in staged), staged
    (stop,) = events(root, MASTER, "master-stop")
    assert stop["totals"]["slices"] == len(slices) and stop["totals"]["analyzed"] == len(analyzed_)
    assert stop_reasons(root, W1) == stop_reasons(root, W2) == ["budget"]
    assert observed[PEER]["notice"]["reason"] == "budget"
    assert len(slices) >= 2 and len(analyzed_) >= 2  # the budget: two results each
    check_counted_once(root)


def check_idle_analyst_fuzzes(root: Path, observed: dict[int, dict]) -> None:
    """Once the fuzzer's few inputs are analyzed, the analysis worker is lent to the fuzzer kind:
    its slices name that kind and itself (manifest and descriptor), are published and counted
    once like the fuzzer worker's, and it still analyzes what comes in."""
    done = [r for r in records(root).values() if r["state"] == "done"]
    lent = [r for r in done if r["manifest"]["slice"] is not None and r["manifest"]["worker"] == W2]
    assert lent, "the idle analysis worker ran no slice"
    assert all(r["manifest"]["kind"] == "simfuzz" and r["manifest"]["slice"]["kind"] == "simfuzz"
               and r["manifest"]["slice"]["worker"] == W2 and slice_hash(r["manifest"]["slice"]) == r["input_hash"]
               for r in lent)
    analyzed_ = [r for r in done if r["manifest"]["slice"] is None]
    assert analyzed_ and all(r["manifest"]["kind"] == "simulate" and r["manifest"]["worker"] == W2
                             for r in analyzed_)
    slices = [r for r in done if r["manifest"]["slice"] is not None]
    assert len({(r["manifest"]["slice"]["worker"], r["manifest"]["slice"]["seq"]) for r in slices}) == len(slices)
    # the lent fuzzer's directory is beside the one the analysis targets write, never inside it
    assert sorted(os.listdir(root / "scratch" / f"worker-{W2}")) == ["lent-simfuzz", "own"]
    assert stop_reasons(root, W1) == stop_reasons(root, W2) == ["budget"]
    assert observed[PEER]["notice"]["reason"] == "budget"
    check_counted_once(root)


# The adaptive mix: the fuzzer's inputs are all crashes (never queued, so never an input that added
# coverage waiting) in an edge universe it never exhausts; the analysis worker's children share one
# edge (a few hit classes), so it adds next to nothing: the yields lend worker 2 to the fuzzer kind.
MIX = {"cost_s": 0, "children": 3, "edges": 1, "simfuzz": {"kept": 2, "edges": 100_000, "findings": 1}}


def mix_decisions(root: Path, policy: dict | None = None, done: dict | None = None) -> tuple[dict, list[str], int]:
    """The done records by work hash (or ``done``), what the oracle's check of the mix finds wrong with
    them under the state's policy (or ``policy``), and how many slices it lent."""
    policy = json.loads(StateDir(root).policy.read_bytes()) if policy is None else policy
    if done is None:
        done = {r["work_hash"]: r for r in records(root).values() if r["state"] == "done"}
    probe = MixProbe(policy)
    snaps = [{"generation": g, "active": list(range(RANKS)), "workers_per_master": 2} for g in (0, 1)]
    lent = probe.mix(policy, done, snaps)
    return done, probe.problems, lent


class MixProbe(MixChecks):
    """The oracle's mix check alone, with what the rest of the oracle would have read."""

    def __init__(self, policy: dict):
        self.slots = expected_kinds(policy)
        self.lent_kind = lent_kind(policy, self.slots)
        self.problems: list[str] = []

    def fail(self, message: str) -> None:
        self.problems.append(message)


def check_mix_lends(root: Path, observed: dict[int, dict]) -> None:
    """The mix lends worker 2 to the fuzzer kind once its window holds next to no new edges: each
    decision is in its slice's manifest, named by its descriptor, and checks out against the WAL by
    the oracle's own rule (other slices of worker 2 are its idle ones, with an empty queue); it
    analyzed before it was lent, and again when the mix explored. The master of the next generation
    (the job resumed) goes on from the WAL: its first decision starts from the last one recorded, its
    windows from the done records of generation 0."""
    done, problems, counted = mix_decisions(root)
    assert problems == []
    lent = [r for r in done.values() if "mix" in r["manifest"]]
    assert lent and counted == len(lent), "the mix never lent the analysis worker"
    assert all(r["manifest"]["worker"] == W2 and r["manifest"]["mix"]["reason"] in ("yield", "band")
               and r["manifest"]["slice"]["mix"] for r in lent)
    assert any(r["manifest"]["worker"] == W2 and r["manifest"]["slice"] is None for r in done.values())
    changes = events(root, MASTER, "mix")
    assert changes[0]["lent"] == 0 and any(e["lent"] == 1 for e in changes if e["generation"] == 0)
    last = max((r["manifest"]["slice"]["seq"], r["manifest"]["mix"]["lent"]) for r in lent
               if r["manifest"]["generation"] == 0)
    restarted = next(e for e in changes if e["generation"] == 1)
    assert restarted["previous"] == last[1]
    later = [r["manifest"]["mix"] for r in sorted(lent, key=lambda r: r["manifest"]["slice"]["seq"])
             if r["manifest"]["generation"] == 1]
    assert later and any(done[e[0]]["manifest"]["generation"] == 0 for e in later[0]["window"]["simfuzz"])
    assert stop_reasons(root, W1) == stop_reasons(root, W2) == ["budget", "budget"]
    check_counted_once(root)


SCENARIOS = (
    # scripted workers and peers against the real master
    Scenario("commit", (Stage({MASTER: MASTER_ROLE, W1: play_commit, PEER: Peer()}),), check_commit),
    Scenario("pipeline", (Stage({MASTER: MASTER_ROLE, W1: play_pipeline, PEER: Peer()}),), check_pipeline,
             seeds=PIPELINE_SEEDS),
    Scenario("return-after-deadline", (Stage({MASTER: MASTER_ROLE, W1: play_return_after_deadline}),),
             check_return_after_deadline, seeds=PIPELINE_SEEDS, deadline_s=START_S, grace_s=START_S),
    Scenario("out-of-order-result", (Stage({MASTER: MASTER_ROLE, W1: play_out_of_order, PEER: Peer()}),),
             check_out_of_order, seeds=tuple(owned_by(MASTER, "ooo", 3))),
    Scenario("hostile-messages", (Stage({MASTER: MASTER_ROLE, W1: play_hostile, PEER: Peer()}),), check_hostile),
    Scenario("stale-fences", (Stage({MASTER: MASTER_ROLE, W1: play_stale_fences, PEER: Peer()}),),
             check_stale_fences),
    Scenario("tampered-staging", (Stage({MASTER: MASTER_ROLE, W1: play_tampered_staging, PEER: Peer()}),),
             check_tampered_staging),
    Scenario("implausible-results", (Stage({MASTER: MASTER_ROLE, W1: play_implausible, PEER: Peer()}),),
             check_implausible),
    Scenario("message-flood", (Stage({MASTER: MASTER_ROLE, W1: play_flood, PEER: Peer()}),), check_flood),
    Scenario("frontier-from-a-peer", (Stage({MASTER: MASTER_ROLE, PEER: Peer(PEER_FORWARDS),
                                             W1: play_worker_after_peer}),), check_frontier),
    Scenario("lease-expiry-reported", (Stage({MASTER: MASTER_ROLE, W1: play_silent_worker}),),
             check_lease_expiry_reported, deadline_s=START_S + LEASE_S, lease_s=LEASE_S),
    Scenario("lease-expiry-fenced", (Stage({MASTER: MASTER_ROLE, W1: play_silent_worker},
                                           hosts={MASTER: "host-a", W1: "host-a"}),),
             check_lease_expiry_fenced, deadline_s=START_S + LEASE_S, lease_s=LEASE_S, setup=start_fence_target),
    # the real worker against a scripted master
    Scenario("worker-fences-its-master", (Stage({MASTER: play_scripted_master, W1: WORKER_ROLE}),),
             check_worker_fences_its_master),
    Scenario("worker-gives-up", (Stage({MASTER: play_master_goes_quiet, W1: WORKER_ROLE}),), check_worker_gives_up,
             deadline_s=0.3),
    # the real master and the real worker
    Scenario("real-worker-commit", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: Peer()}),),
             check_real_worker, options=REAL, seeds=None),
    Scenario("two-workers", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, W2: WORKER_ROLE, PEER: Peer()}),),
             check_two_workers, options=REAL, seeds=None),
    Scenario("findings-in-manifests", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: Peer()}),),
             check_findings, options=FINDINGS, seeds=None),
    Scenario("oversized-result", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: Peer()}),), check_truncated,
             options=OVERSIZED, seeds=None),
    Scenario("frontier-between-real-masters", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: MASTER_ROLE,
                                                      W4: WORKER_ROLE}),), check_two_masters,
             options=BETWEEN, seeds=None),
    Scenario("exhaustion-stops-every-rank", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: MASTER_ROLE,
                                                    W4: WORKER_ROLE}),), check_exhausted,
             options={"cost_s": 0, "children": 2, "space": 10, "seeds": 2}, seeds=None),
    # restarts from the WAL
    Scenario("lapsed-lease-reclaimed", (Stage({MASTER: MASTER_ROLE, W1: play_silent_worker}),
                                        Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: Peer()},
                                              before=resumed_for_longer)),
             check_reclaimed, deadline_s=START_S, options=FINITE),
    Scenario("master-restarts-and-replays", (Stage({MASTER: MASTER_ROLE, W1: play_answer_seed_with_children},
                                                   dies_at={MASTER: ev.MarkDone}),
                                             Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: Peer()},
                                                   before=resumed)),
             check_replayed, options=FINITE),
    Scenario("poison-quarantined", (Stage({MASTER: MASTER_ROLE}),), check_quarantined, setup=poisoned, seeds=()),
    Scenario("edge-order-skips-and-a-new-master-skips-again",
             (Stage({MASTER: MASTER_ROLE, W1: play_edge_order, PEER: Peer()}),
              Stage({MASTER: MASTER_ROLE, W1: play_edge_order_resumed, PEER: Peer()}, before=resumed)),
             check_edge_order, order="edge"),
    # worker kinds: a fuzzer's slices beside an analysis worker, one corpus
    Scenario("fuzzer-slices-feed-the-analysis-worker", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE,
                                                               W2: WORKER_ROLE, PEER: Peer()}),),
             check_fuzzer_slices, options=SLICES, seeds=(), stop_after=2,
             worker_kinds="simfuzz:1,simulate:1", keep="novel", idle="wait"),
    Scenario("an-idle-analysis-worker-fuzzes", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, W2: WORKER_ROLE,
                                                       PEER: Peer()}),),
             # at most 9 inputs exist (the seed and two spaces of 4): worker 2 reaches 10 results only lent
             check_idle_analyst_fuzzes, stop_after=10,
             options={"cost_s": 0, "children": 1, "space": 4, "simfuzz": {"kept": 2, "space": 4}},
             worker_kinds="simfuzz:1,simulate:1", keep="novel"),
    Scenario("the-adaptive-mix-lends-an-analysis-worker", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE,
                                                                  W2: WORKER_ROLE, PEER: Peer()}),
                                                           Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE,
                                                                  W2: WORKER_ROLE, PEER: Peer()}, before=resumed)),
             check_mix_lends, stop_after=24, options=MIX, worker_kinds="simfuzz:1,simulate:1", mix="adaptive"),
)
