"""The message protocol's scenarios: the real master driver and the real worker loop, and scripted
ranks where a scenario needs a peer to misbehave, over any transport.

A scenario gives each rank of a six-rank job a role in each of its stages: ``MASTER`` (the real
``runtime.master_driver.MasterDriver``), ``WORKER`` (the real ``runtime.worker_loop.WorkerLoop``
on the ``simulate`` executor), a *play* (a scripted rank: a function of the bench that returns
what it observed) or nothing (a silent member of the layout). ``test_message_protocol`` plays
every scenario over the loopback transport in-process, with a clock the bench advances itself
(a deadline or a lease expiry takes no real time), and over MPI under ``mpiexec`` (``mpi_job.py``,
real time); the same check then judges what the scripted ranks observed and what the real roles
left in the state directory. Kept free of pytest so that the MPI job can import it.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from symcc_ulfm.core import envelope
from symcc_ulfm.core.canonical import sha256_hex
from symcc_ulfm.core.master import events as ev
from symcc_ulfm.core.master.ownership import owner
from symcc_ulfm.core.master.poison import SIGNATURE
from symcc_ulfm.core.master.rounds import PIPELINE
from symcc_ulfm.core.master.slices import slice_hash
from symcc_ulfm.core.membership import commit, initial_membership, resume
from symcc_ulfm.core.policy import Policy, build_policy
from symcc_ulfm.executors import engine
from symcc_ulfm.runtime.injection import Injector
from symcc_ulfm.runtime.loopback import Loopback
from symcc_ulfm.runtime.master_driver import MasterDriver
from symcc_ulfm.runtime.rank_state import RankState
from symcc_ulfm.runtime.transport import DATA, FRONTIER, SENTINEL
from symcc_ulfm.runtime.worker_loop import WorkerLoop
from symcc_ulfm.store.corpus import Corpus
from symcc_ulfm.store.durability import Barrier
from symcc_ulfm.store.findings import read_findings
from symcc_ulfm.store.identity import read_identity, write_identity
from symcc_ulfm.store.paths import StateDir
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


# -- scenarios -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    roles: dict[int, object]  # rank -> MASTER_ROLE, WORKER_ROLE or a play(bench) -> observed
    before: Callable[[Path, float], None] | None = None  # on the state, before the stage (rank 0)
    dies_at: dict[int, type] = field(default_factory=dict)  # real master -> the instruction it dies at
    hosts: dict[int, str] = field(default_factory=dict)  # rank -> host, where it differs from HOSTS


@dataclass(frozen=True)
class Scenario:
    name: str
    stages: tuple[Stage, ...]
    check: Callable[[Path, dict[int, dict]], None]
    deadline_s: float = 0.6
    lease_s: float = 30.0
    options: dict = field(default_factory=lambda: {"cost_s": 0, "children": 3})  # simulate's
    stop_when_exhausted: bool = False
    seeds: tuple[bytes, ...] = (SEED,)  # None: the executor's own
    setup: Callable[[Path], None] | None = None  # on the prepared state, before the first stage
    worker_kinds: str = ""  # e.g. simfuzz:1,simulate:1 (core.kinds)
    keep: str = "all"
    idle: str = "fuzz"  # what an analysis worker with nothing to analyze does (core.policy)


def policy_of(scenario: Scenario) -> Policy:
    return build_policy(ranks=RANKS, warm_spares=0, workers_per_master=2, deadline_s=scenario.deadline_s,
                        executor="simulate", executor_options=scenario.options, ulfm=False,
                        max_message_bytes=LIMIT, stop_when_exhausted=scenario.stop_when_exhausted,
                        timeouts={"lease_s": scenario.lease_s, "shutdown_grace_s": GRACE_S},
                        worker_kinds=scenario.worker_kinds, keep=scenario.keep, slice_s=0.2, idle=scenario.idle)


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


def fence_pid(root: Path) -> int:
    """The process a fence may kill in place of a rank: ``sleep``, started by :func:`start_fence_target`."""
    return int((root / "fence-target.pid").read_text())


def start_fence_target(root: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    (root / "fence-target.pid").write_text(str(process.pid))


def fence_target_killed(root: Path) -> bool:
    """Whether the fence's process was SIGKILLed (it is reaped, and killed when it was not)."""
    pid = fence_pid(root)
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child (under MPI the master's rank started it)
        return _zombie_killed(pid)
    if not done:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return False
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _zombie_killed(pid: int) -> bool:
    """Whether a process that is not our child ended by SIGKILL: a zombie nobody reaps keeps its
    wait status in ``/proc/<pid>/stat`` (field 52); one that is gone was reaped after it ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    if fields[0] != "Z":
        os.kill(pid, signal.SIGKILL)
        return False
    status = int(fields[49])
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def real_master(ctx: RankState, transport, stage: Stage, clock=time.time) -> MasterDriver:
    driver = MasterDriver(ctx, transport, clock=clock)
    instruction = stage.dies_at.get(ctx.stable)
    if instruction is not None:
        def die(_):
            raise Dies(f"master {ctx.stable} dies at {instruction.__name__}")
        driver._perform[instruction] = die
    return driver


# -- benches: where the roles play ------------------------------------------------------------------------


class LoopbackBench:
    """Every rank in this process: the real roles step whenever a scripted rank waits, and time is
    a clock this bench advances."""

    STEP_S = 0.005

    def __init__(self, root: Path, scenario: Scenario):
        self.root = root
        self.scenario = scenario
        self.now = time.time()
        self.deadline = self.now + scenario.deadline_s
        prepare(root, scenario, self.now)

    def stage(self, stage: Stage) -> dict[int, dict]:
        """Play ``stage``: what its scripted ranks observed, by rank."""
        self.open(stage)
        observed = {rank: play(self) for rank, play in stage.roles.items() if callable(play)}
        self.finish()
        return observed

    def open(self, stage: Stage) -> None:
        """Start the stage's real roles on a fresh loopback hub."""
        if stage.before:
            stage.before(self.root, self.now)
        self.hub = Loopback(range(RANKS), LIMIT)
        self.endpoints = {rank: self.hub.endpoint(rank) for rank in range(RANKS)}
        self.masters, self.workers, self.dead = {}, {}, {}
        for rank, role in stage.roles.items():
            if role == MASTER_ROLE:
                ctx = rank_state(self.root, self.scenario, stage, rank)
                self.masters[rank] = real_master(ctx, self.endpoints[rank], stage, clock=lambda: self.now)
                self._guard(rank, self.masters[rank].prepare)
            elif role == WORKER_ROLE:
                ctx = rank_state(self.root, self.scenario, stage, rank)
                self.workers[rank] = WorkerLoop(ctx, self.endpoints[rank], clock=lambda: self.now)
                self.workers[rank].start()

    def _guard(self, rank: int, action) -> None:
        if rank in self.dead:
            return
        try:
            action()
        except Dies as exc:  # it stops where it was: nothing more is sent or cleaned up
            self.dead[rank] = str(exc)

    def transport(self, rank: int):
        return self.endpoints[rank]

    def live(self) -> bool:
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

    def idle(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.pump()

    def expect(self, rank: int, source: int, channel: str) -> dict | None:
        """The next message ``rank`` receives from ``source``; None once every real role stopped."""
        for _ in range(400_000):
            raw = self.endpoints[rank].receive(source, channel, f"{channel} from {source}")
            if raw is not None:
                return envelope.decode(raw, LIMIT)
            if not self.live():
                return None
            self.pump()
        raise AssertionError("the real roles neither answered nor stopped")

    def collect(self, rank: int, source: int, channel: str, seconds: float) -> list[dict]:
        """Every message ``rank`` receives from ``source`` within ``seconds``."""
        end, got = self.now + seconds, []
        while self.now < end:
            raw = self.endpoints[rank].receive(source, channel, f"{channel} from {source}")
            if raw is not None:
                got.append(envelope.decode(raw, LIMIT))
            self.pump()
        return got

    def flush(self) -> None:
        """Sends complete at once."""

    def finish(self) -> None:
        for _ in range(400_000):
            if not self.live():
                break
            self.pump()
        else:
            raise AssertionError("the real roles did not stop")
        for driver in self.masters.values():
            driver.transport.close()
            driver.close()
        for worker in self.workers.values():
            worker.finish()


class MpiBench:
    """One scripted rank of an MPI job (``mpi_job.py``): real time, the other roles in their own processes."""

    def __init__(self, root: Path, transport, deadline: float):
        self.root = root
        self._transport = transport
        self.deadline = deadline
        self.end = deadline + GRACE_S + 1.0  # every real role has stopped by then

    def transport(self, rank: int):
        return self._transport

    def pump(self) -> None:
        self._transport.progress()
        time.sleep(0.0005)

    def idle(self, seconds: float) -> None:
        end = time.time() + seconds
        while time.time() < end:
            self.pump()

    def expect(self, rank: int, source: int, channel: str) -> dict | None:
        while time.time() < self.end:
            raw = self._transport.receive(source, channel, f"{channel} from {source}")
            if raw is not None:
                return envelope.decode(raw, LIMIT)
            self.pump()
        return None

    def collect(self, rank: int, source: int, channel: str, seconds: float) -> list[dict]:
        end, got = time.time() + seconds, []
        while time.time() < end:
            raw = self._transport.receive(source, channel, f"{channel} from {source}")
            if raw is not None:
                got.append(envelope.decode(raw, LIMIT))
            self.pump()
        return got

    def flush(self) -> None:
        while self._transport.busy:
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


def collect_frontier(bench) -> dict:
    messages = []
    while (message := bench.expect(PEER, MASTER, FRONTIER)) is not None:
        messages.append(message)
    return {"frontier": messages}


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


# -- the scenarios: scripted peers against the real master ---------------------------------------------------


def play_commit(bench) -> dict:
    ready(bench)

    def answer(work):
        return [result(bench, work, CHILDREN if work["input_hash"] == sha(SEED) else [])]

    return serve(bench, answer)


def check_commit(root: Path, observed: dict[int, dict]) -> None:
    worker, peer = observed[W1], observed[PEER]
    assert worker["works"][0] == sha(SEED) and worker["stop"] == "deadline"
    # the children this master owns come back as work; the one master 3 owns is forwarded to it
    assert sorted(worker["works"][1:]) == sorted(sha(c) for c in CHILDREN[:2])
    items = [i["input_hash"] for m in peer["frontier"] for i in m["items"]]
    assert items == [sha(CHILDREN[2])]
    assert all(m["generation"] == 0 and m["master"] == MASTER for m in peer["frontier"])
    record = wal_state(root, SEED)
    assert record["state"] == "done" and sorted(record["done"]["claimed"]) == sorted(sha(c) for c in CHILDREN)
    assert all(corpus_of(root).read(sha(c)) == c for c in CHILDREN)
    commits = events(root, MASTER, "commit")
    assert len(commits) == 3 and commits[0]["generated"] == 3 and commits[0]["novel"] == 3
    check_every_line_names_its_stimulus(root)


def play_pipeline(bench) -> dict:
    """Hold every lease the master sends before answering any: the pipeline's depth."""
    ready(bench)
    held = [bench.expect(W1, MASTER, DATA), *bench.collect(W1, MASTER, DATA, 0.3)]  # no result sent yet
    extra = None
    for work in held:
        send(bench, W1, MASTER, DATA, result(bench, work))
    rest = serve(bench, empty_results(bench))
    return {"held": [w["input_hash"] for w in held], "extra": extra is not None, **rest}


PIPELINE_SEEDS = tuple(owned_by(MASTER, "pipeline", PIPELINE + 2))


def check_pipeline(root: Path, observed: dict[int, dict]) -> None:
    seen = observed[W1]
    assert 2 <= len(seen["held"]) <= PIPELINE and not seen["extra"]
    done = [r for r in records(root).values() if r["state"] == "done"]
    assert len(done) == len(PIPELINE_SEEDS)  # the held ones, then the rest
    lease_of = {r["work_hash"]: r["lease"]["token"] for r in records(root).values()}
    tokens = [int(lease_of[e["work_hash"]].split(".")[-1]) for e in events(root, MASTER, "commit")]
    assert tokens == sorted(tokens)  # committed in the order they were leased
    check_counted_once(root)


def play_return_after_deadline(bench) -> dict:
    """Hold a full pipeline until just past the deadline, then do what a worker does there: the
    RESULT of the lease it ran and a RETURN of the others (and of one lease it never held)."""
    ready(bench)
    held = [bench.expect(W1, MASTER, DATA), *bench.collect(W1, MASTER, DATA, 0.3)]
    bench.idle(max(0.0, bench.deadline - _now(bench)) + 0.05)
    send(bench, W1, MASTER, DATA, result(bench, held[0]))
    tokens = [w["lease"] for w in held[1:]]
    send(bench, W1, MASTER, DATA, envelope.encode("RETURN", LIMIT, generation=0, worker=W1,
                                                  leases=[*tokens, "0.0.999"]))
    returned_at = _now(bench)
    rest = serve(bench, empty_results(bench))
    return {"held": [w["input_hash"] for w in held], "returned": tokens, "returned_at": returned_at, **rest}


def _now(bench) -> float:
    return bench.now if isinstance(bench, LoopbackBench) else time.time()


def check_return_after_deadline(root: Path, observed: dict[int, dict]) -> None:
    seen = observed[W1]
    assert 2 <= len(seen["held"]) <= PIPELINE and len(seen["returned"]) == len(seen["held"]) - 1
    assert seen["works"] == [] and seen["stop"] == "deadline"  # nothing leased after the deadline
    (returned,) = events(root, MASTER, "leases-returned")
    assert returned["worker"] == W1 and returned["count"] == len(seen["returned"])
    assert any("does not hold" in r for r in rejections(root))  # the lease it never held
    states = {sha(d): (wal_state(root, d) or {}).get("state") for d in PIPELINE_SEEDS}
    assert states[seen["held"][0]] == "done"
    assert all(states[h] == "leased" for h in seen["held"][1:])  # released, reclaimed by a later generation
    (stop,) = events(root, MASTER, "master-stop")
    assert stop["abandoned"] == 0 and stop["totals"]["analyzed"] == 1
    assert stop["t"] - seen["returned_at"] < GRACE_S  # it stopped at the RETURN, not after its grace
    check_counted_once(root)


def play_out_of_order(bench) -> dict:
    ready(bench)
    first, second = bench.expect(W1, MASTER, DATA), bench.expect(W1, MASTER, DATA)
    send(bench, W1, MASTER, DATA, result(bench, second))  # leases run in order: refused
    send(bench, W1, MASTER, DATA, result(bench, first))
    send(bench, W1, MASTER, DATA, result(bench, second))
    rest = serve(bench, empty_results(bench))
    return {"first": first["input_hash"], "second": second["input_hash"], **rest}


def check_out_of_order(root: Path, observed: dict[int, dict]) -> None:
    assert any("does not match the lease" in r for r in rejections(root))
    states = records(root)
    assert states[observed[W1]["first"]]["state"] == "done"
    # the refused RESULT released its lease; the input went back and was done later (or is held at the end)
    assert states[observed[W1]["second"]]["state"] in ("done", "leased")
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
    assert observed[W1]["stop"] == "deadline"
    check_every_line_names_its_stimulus(root)


def play_stale_fences(bench) -> dict:
    """RESULTs whose fence differs from the lease in one field each, then the genuine one."""
    ready(bench)
    work = bench.expect(W1, MASTER, DATA)
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
    check_counted_once(root)


def play_tampered_staging(bench) -> dict:
    """A RESULT whose staged object is changed after its SHA-256 was taken, one naming an object it
    never staged, then the genuine one."""
    ready(bench)
    work = bench.expect(W1, MASTER, DATA)
    tampered = result(bench, work, [b"tampered-child"])
    staged_file = StateDir(bench.root).worker_staging(W1) / f"{work['lease']}@{sha(b'tampered-child')}"
    staged_file.write_bytes(b"something else entirely")
    send(bench, W1, MASTER, DATA, tampered)
    again = bench.expect(W1, MASTER, DATA)
    unstaged = json.loads(result(bench, again))
    unstaged["candidates"] = [{"sha256": sha(b"never staged"), "length": 12, "coverage": [1], "hint": None}]
    send(bench, W1, MASTER, DATA, json.dumps(unstaged).encode())
    third = bench.expect(W1, MASTER, DATA)
    send(bench, W1, MASTER, DATA, result(bench, third, [b"genuine-child"]))
    return serve(bench, empty_results(bench))


def check_tampered_staging(root: Path, observed: dict[int, dict]) -> None:
    record = wal_state(root, SEED)
    assert record["state"] == "done" and record["done"]["claimed"] == [sha(b"genuine-child")]
    corpus = corpus_of(root)
    assert not corpus.has(sha(b"tampered-child")) and not corpus.has(sha(b"never staged"))
    assert len(events(root, MASTER, "result-rejected")) >= 2
    check_counted_once(root)


def play_implausible(bench) -> dict:
    """Statistics no worker can have measured, and a finding that names an input not in the result:
    each releases the lease and puts the input back, until it is dropped."""
    ready(bench)
    work = bench.expect(W1, MASTER, DATA)
    send(bench, W1, MASTER, DATA, result(bench, work, stats={"generated": -1, "seconds": 0.1}))
    work = bench.expect(W1, MASTER, DATA)
    send(bench, W1, MASTER, DATA, result(bench, work, stats={"seconds": 1e9}))
    work = bench.expect(W1, MASTER, DATA)
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
    assert observed[W1] == {"works": [], "stop": "deadline"}  # never leased again
    assert wal_state(root, SEED)["state"] == "leased"  # no manifest: nothing of it was published
    check_counted_once(root)


FLOOD = 300  # a master takes one message per worker per turn: the flood delays its sender's own READY


def play_flood(bench) -> dict:
    stale = envelope.encode("READY", LIMIT, generation=9, worker=W1)
    for _ in range(FLOOD):
        send(bench, W1, MASTER, DATA, stale)
    ready(bench)
    return serve(bench, empty_results(bench))


def check_flood(root: Path, observed: dict[int, dict]) -> None:
    lines = [e for e in events(root, MASTER, "message-rejected") if e.get("source") == W1]
    assert 0 < len(lines) <= 4 * BURST < FLOOD  # rate-limited: the flood never fills the log
    assert wal_state(root, SEED)["state"] == "done"  # and the genuine READY was served


def play_peer_forwards(bench) -> dict:
    stale = envelope.encode("FRONTIER", LIMIT, generation=5, master=PEER, items=[], coverage=[])
    send(bench, PEER, MASTER, FRONTIER, stale)
    forged = envelope.encode("FRONTIER", LIMIT, generation=0, master=W4, items=[], coverage=[])
    send(bench, PEER, MASTER, FRONTIER, forged)
    item = {"input_hash": sha(FORWARDED), "priority": 9, "hint": {"depth": 4}, "length": 9}
    send(bench, PEER, MASTER, FRONTIER, envelope.encode("FRONTIER", LIMIT, generation=0, master=PEER,
                                                        items=[item], coverage=[7]))
    bench.flush()
    return {}


def play_worker_after_peer(bench) -> dict:
    bench.idle(0.3)  # the peer's FRONTIER arrives first (under MPI, in another process)
    ready(bench)
    return serve(bench, empty_results(bench))


def check_frontier(root: Path, observed: dict[int, dict]) -> None:
    assert any("FRONTIER of generation 5 from master 3" in r for r in rejections(root))
    assert any("from master 3" in r and "generation 0" in r for r in rejections(root))
    works = observed[W1]["works"]
    assert works[0] == sha(FORWARDED)  # priority 9 goes before the seed
    assert sha(SEED) in works
    assert wal_state(root, FORWARDED)["state"] == "done"
    assert wal_state(root, FORWARDED)["manifest"]["worker"] == W1
    check_every_line_names_its_stimulus(root)


def play_silent_worker(bench) -> dict:
    ready(bench)
    return serve(bench, None)


def check_lease_expiry_reported(root: Path, observed: dict[int, dict]) -> None:
    (expired,) = events(root, MASTER, "lease-expired")
    assert expired["worker"] == W1 and expired["fenced"] is False and "only local ranks" in expired["reason"]
    assert expired["held_s"] > 0.5
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
    """A master that sends its real worker every kind of wrong WORK before one right one, then STOP."""
    message = bench.expect(MASTER, W1, DATA)
    assert message["type"] == "READY"
    work = {"generation": 0, "shard": "g0-m0", "lease": "0.0.1", "work_hash": sha(b"work"),
            "input_hash": sha(SEED), "worker": W1, "hint": None}
    for payload in (b"garbage", envelope.encode("WORK", LIMIT, **{**work, "generation": 7}),
                    envelope.encode("WORK", LIMIT, **{**work, "worker": W2}),
                    envelope.encode("READY", LIMIT, generation=0, worker=W1),
                    envelope.encode("WORK", LIMIT, **work)):
        send(bench, MASTER, W1, DATA, payload)
    results = []
    while (message := bench.expect(MASTER, W1, DATA)) is not None and message["type"] == "RESULT":
        results.append(message)
        break
    late = bench.collect(MASTER, W1, DATA, 0.2)  # no second RESULT comes
    send(bench, MASTER, W1, DATA, envelope.encode("STOP", LIMIT, generation=0, reason="exhausted"))
    bench.flush()
    return {"results": [{k: r[k] for k in ("lease", "input_hash", "worker", "generation")} for r in results],
            "late": bool(late), "candidates": len(results[0]["candidates"]) if results else None}


def check_worker_fences_its_master(root: Path, observed: dict[int, dict]) -> None:
    seen = observed[MASTER]
    assert seen["results"] == [{"lease": "0.0.1", "input_hash": sha(SEED), "worker": W1, "generation": 0}]
    assert not seen["late"] and seen["candidates"] == 3
    reasons = rejections(root, W1)
    assert any("not UTF-8 JSON" in r for r in reasons), reasons
    assert sum("is not my work" in r for r in reasons) == 3, reasons  # generation 7, worker 2, a READY
    assert stop_reasons(root, W1) == ["exhausted"]


def play_master_goes_quiet(bench) -> dict:
    message = bench.expect(MASTER, W1, DATA)
    return {"ready": message["type"] if message else None}


def check_worker_gives_up(root: Path, observed: dict[int, dict]) -> None:
    assert observed[MASTER] == {"ready": "READY"}
    assert stop_reasons(root, W1) == ["no STOP from master in time"]


# -- the scenarios: the real worker -----------------------------------------------------------------------------


def check_real_worker(root: Path, observed: dict[int, dict]) -> None:
    (executed,) = [e["executed"] for e in events(root, W1, "worker-stop")]
    assert executed >= 3 and stop_reasons(root, W1) == ["deadline"]
    done = [r for r in records(root).values() if r["state"] == "done"]
    assert len(done) >= 3 and all(r["manifest"]["worker"] == W1 for r in done)
    forwarded = [i["input_hash"] for m in observed[PEER]["frontier"] for i in m["items"]]
    assert forwarded and all(owner(h, MASTERS) == PEER for h in forwarded)
    assert all(corpus_of(root).has(h) for h in forwarded)
    (stop,) = events(root, MASTER, "master-stop")
    assert stop["totals"]["analyzed"] == len(done)
    check_counted_once(root)
    check_every_line_names_its_stimulus(root)


def check_two_workers(root: Path, observed: dict[int, dict]) -> None:
    for worker in (W1, W2):
        (executed,) = [e["executed"] for e in events(root, worker, "worker-stop")]
        assert executed >= 1, worker
    done = [r for r in records(root).values() if r["state"] == "done"]
    assert {r["manifest"]["worker"] for r in done} == {W1, W2}
    check_counted_once(root)


def check_findings(root: Path, observed: dict[int, dict]) -> None:
    done = [r for r in records(root).values() if r["state"] == "done"]
    manifests = [r["manifest"] for r in done]
    found = [f for m in manifests for f in m["findings"]]
    assert found, "the simulate executor reports one input in two as a finding"
    for m in manifests:
        keys = [(f["kind"], f["signature"], f["sha256"]) for f in m["findings"]]
        assert len(keys) == len(set(keys))
        assert all(f["sha256"] == m["input_hash"] for f in m["findings"])
    unique = read_findings(StateDir(root))
    assert 1 <= len(unique) <= 3 and all(u.kind == "exception" for u in unique)
    assert sum(len(u.inputs) for u in unique) == len({f["sha256"] for f in found})
    check_counted_once(root)


def check_truncated(root: Path, observed: dict[int, dict]) -> None:
    assert events(root, W1, "result-truncated")
    done = [r for r in records(root).values() if r["state"] == "done"]
    assert done and all(len(r["manifest"]["objects"]) < 80 for r in done)
    named = {(r["lease"]["token"], o["sha256"]) for r in done for o in r["manifest"]["objects"]}
    left = [p.name for p in StateDir(root).worker_staging(W1).iterdir() if "@" in p.name]
    assert all(tuple(name.split("@")) in named for name in left), left  # nothing staged that no manifest names
    check_counted_once(root)


def check_two_masters(root: Path, observed: dict[int, dict]) -> None:
    done = [r for r in records(root).values() if r["state"] == "done"]
    by = {m: [r for r in done if r["manifest"]["master"] == m] for m in MASTERS}
    assert by[MASTER] and by[PEER]
    assert all(owner(r["input_hash"], MASTERS) == r["manifest"]["master"] for r in done)  # each by its owner
    children = [r for r in by[PEER] if r["input_hash"] not in {sha(s) for s in simulate_seeds()}]
    assert children, "master 3 analyzed only seeds: nothing was forwarded to it"
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


def simulate_seeds() -> list[bytes]:
    return engine("simulate", None, REAL["options"]).seeds()


# -- the scenarios: restarts ---------------------------------------------------------------------------------


def resumed(root: Path, now: float) -> None:
    """The whole job was lost and started again: a resume receipt opens the next epoch."""
    store = snapshots(root)
    previous = store.current()
    nxt, receipt = resume(previous, now, 0.2, previous.hosts)
    store.commit(nxt, receipt)


def check_reclaimed(root: Path, observed: dict[int, dict]) -> None:
    record = wal_state(root, SEED)
    assert record["state"] == "done" and record["done"]["generation"] == 1
    assert [lease["generation"] for lease in record["history"]] == [0]  # the lapsed lease of generation 0
    ready_lines = [e for e in events(root, MASTER, "master-ready") if e["generation"] == 1]
    assert ready_lines[0]["reclaimed"] == 1
    first = [e for e in events(root, W1, "corpus-read-verified") if e["generation"] == 1]
    assert first and first[0]["sha256"] == sha(SEED)  # reclaimed work goes first
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
    check_counted_once(root)


def busy_for(master: int, **options) -> dict:
    """``simulate`` options whose seeds and their children give ``master`` work of its own: with
    another master scripted or silent, work it owns but never forwards back would leave it idle."""
    for seed in range(1000):
        trial = {"cost_s": 0, "children": 4, "space": 1_000_000, "seeds": 4, "seed": seed, **options}
        executor = engine("simulate", None, trial)
        mine = [s for s in executor.seeds() if owner(sha(s), MASTERS) == master]
        children = [c for s in mine for c in executor.run(s).candidates if owner(sha(c), MASTERS) == master]
        if len(mine) >= 2 and len(children) >= 5:
            return trial
    raise AssertionError("no simulate seed gives the master enough work")


REAL = {"options": busy_for(MASTER)}


def check_fuzzer_slices(root: Path, observed: dict[int, dict]) -> None:
    """A fuzzer worker's slices are published like results: new inputs, counted once, analyzed by
    the concolic-kind worker; of the analysis results what added nothing is dropped (keep =
    novel), a slice keeps what its fuzzer kept; the staging is gone."""
    states = records(root)
    done = [r for r in states.values() if r["state"] == "done"]
    slices = [r for r in done if r["manifest"]["slice"] is not None]
    analyzed = [r for r in done if r["manifest"]["slice"] is None]
    assert slices and analyzed
    assert all(r["manifest"]["kind"] == "simfuzz" and r["manifest"]["worker"] == W1 for r in slices)
    assert all(r["manifest"]["kind"] == "simulate" and r["manifest"]["worker"] == W2 for r in analyzed)
    assert all(slice_hash(r["manifest"]["slice"]) == r["input_hash"] for r in slices)
    assert len({r["manifest"]["slice"]["seq"] for r in slices}) == len(slices)  # each slice once
    found = {o["sha256"] for r in slices for o in r["manifest"]["objects"] if o["sha256"] in r["done"]["claimed"]}
    assert found & {r["input_hash"] for r in analyzed}, "no input a fuzzer kept was analyzed"
    assert all(o["novel"] for r in analyzed for o in r["manifest"]["objects"]
               if not r["manifest"]["findings"])  # keep = novel: only test cases that added coverage
    assert sum(len(r["manifest"]["dropped"]) for r in analyzed) > 0
    assert all(r["manifest"]["dropped"] == [] for r in slices)  # what a fuzzer kept is its own queue
    assert any(not o["novel"] for r in slices for o in r["manifest"]["objects"])
    crashes = [f for r in slices for f in r["manifest"]["findings"]]
    assert crashes and all(f["kind"] == "crash" for f in crashes)
    staged = [p.name for w in (W1, W2) for p in StateDir(root).worker_staging(w).iterdir() if "@" in p.name]
    pending = {(r["lease"]["token"], n) for r in states.values() if r["state"] != "done" for n in
               [o["sha256"] for o in (r["manifest"] or {"objects": []})["objects"]]}
    leased = {r["lease"]["token"] for r in states.values() if r["state"] == "leased"}
    assert all(name.split("@")[0] in leased or tuple(name.split("@")) in pending for name in staged), staged
    (stop,) = events(root, MASTER, "master-stop")
    assert stop["totals"]["slices"] == len(slices) and stop["totals"]["analyzed"] == len(analyzed)
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
    analyzed = [r for r in done if r["manifest"]["slice"] is None]
    assert analyzed and all(r["manifest"]["kind"] == "simulate" and r["manifest"]["worker"] == W2 for r in analyzed)
    slices = [r for r in done if r["manifest"]["slice"] is not None]
    assert len({(r["manifest"]["slice"]["worker"], r["manifest"]["slice"]["seq"]) for r in slices}) == len(slices)
    check_counted_once(root)


SCENARIOS = (
    # scripted workers and peers against the real master
    Scenario("commit", (Stage({MASTER: MASTER_ROLE, W1: play_commit, PEER: collect_frontier}),), check_commit),
    Scenario("pipeline", (Stage({MASTER: MASTER_ROLE, W1: play_pipeline}),), check_pipeline, seeds=PIPELINE_SEEDS),
    Scenario("return-after-deadline", (Stage({MASTER: MASTER_ROLE, W1: play_return_after_deadline}),),
             check_return_after_deadline, seeds=PIPELINE_SEEDS, deadline_s=1.0),
    Scenario("out-of-order-result", (Stage({MASTER: MASTER_ROLE, W1: play_out_of_order}),), check_out_of_order,
             seeds=tuple(owned_by(MASTER, "ooo", 3))),
    Scenario("hostile-messages", (Stage({MASTER: MASTER_ROLE, W1: play_hostile}),), check_hostile),
    Scenario("stale-fences", (Stage({MASTER: MASTER_ROLE, W1: play_stale_fences}),), check_stale_fences),
    Scenario("tampered-staging", (Stage({MASTER: MASTER_ROLE, W1: play_tampered_staging}),), check_tampered_staging),
    Scenario("implausible-results", (Stage({MASTER: MASTER_ROLE, W1: play_implausible}),), check_implausible),
    Scenario("message-flood", (Stage({MASTER: MASTER_ROLE, W1: play_flood}),), check_flood, deadline_s=3.0),
    Scenario("frontier-from-a-peer", (Stage({MASTER: MASTER_ROLE, PEER: play_peer_forwards,
                                             W1: play_worker_after_peer}),), check_frontier),
    Scenario("lease-expiry-reported", (Stage({MASTER: MASTER_ROLE, W1: play_silent_worker}),),
             check_lease_expiry_reported, deadline_s=1.5, lease_s=0.6),
    Scenario("lease-expiry-fenced", (Stage({MASTER: MASTER_ROLE, W1: play_silent_worker},
                                           hosts={MASTER: "host-a", W1: "host-a"}),),
             check_lease_expiry_fenced, deadline_s=1.5, lease_s=0.6, setup=start_fence_target),
    # the real worker against a scripted master
    Scenario("worker-fences-its-master", (Stage({MASTER: play_scripted_master, W1: WORKER_ROLE}),),
             check_worker_fences_its_master),
    Scenario("worker-gives-up", (Stage({MASTER: play_master_goes_quiet, W1: WORKER_ROLE}),), check_worker_gives_up,
             deadline_s=0.3),
    # the real master and the real worker
    Scenario("real-worker-commit", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: collect_frontier}),),
             check_real_worker, options=REAL["options"], seeds=None),
    Scenario("two-workers", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, W2: WORKER_ROLE}),), check_two_workers,
             options=REAL["options"], seeds=None),
    Scenario("findings-in-manifests", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE}),), check_findings,
             options=busy_for(MASTER, findings=2), seeds=None),
    Scenario("oversized-result", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE}),), check_truncated,
             options=busy_for(MASTER, children=120), seeds=None),
    Scenario("frontier-between-real-masters", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: MASTER_ROLE,
                                                      W4: WORKER_ROLE}),), check_two_masters,
             options=REAL["options"], seeds=None),
    Scenario("exhaustion-stops-every-rank", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, PEER: MASTER_ROLE,
                                                    W4: WORKER_ROLE}),), check_exhausted, deadline_s=20.0,
             options={"cost_s": 0, "children": 2, "space": 10, "seeds": 2}, stop_when_exhausted=True, seeds=None),
    # restarts from the WAL
    Scenario("lapsed-lease-reclaimed", (Stage({MASTER: MASTER_ROLE, W1: play_silent_worker}),
                                        Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE}, before=resumed)),
             check_reclaimed),
    Scenario("master-restarts-and-replays", (Stage({MASTER: MASTER_ROLE, W1: play_answer_seed_with_children},
                                                   dies_at={MASTER: ev.MarkDone}),
                                             Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE}, before=resumed)),
             check_replayed),
    Scenario("poison-quarantined", (Stage({MASTER: MASTER_ROLE}),), check_quarantined, setup=poisoned, seeds=()),
    # worker kinds: a fuzzer's slices beside an analysis worker, one corpus
    Scenario("fuzzer-slices-feed-the-analysis-worker", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE,
                                                               W2: WORKER_ROLE}),), check_fuzzer_slices,
             options={**busy_for(MASTER), "simfuzz": {"kept": 6, "space": 40, "findings": 5}}, seeds=None,
             worker_kinds="simfuzz:1,simulate:1", keep="novel", idle="wait"),
    Scenario("an-idle-analysis-worker-fuzzes", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, W2: WORKER_ROLE}),),
             check_idle_analyst_fuzzes, options={"cost_s": 0, "children": 1, "space": 4, "simfuzz": {"kept": 2, "space": 4}},
             worker_kinds="simfuzz:1,simulate:1", keep="novel"),
)
