"""The master's protocol scenarios: scripted peers against one real master driver.

A scenario is played by scripted ranks (a worker, a peer master) against ``master.MasterDriver``
on a real state directory, over any transport: ``test_master_protocol`` runs every scenario
over the loopback transport in-process (with a clock it advances itself) and over MPI under
``mpiexec`` (``protocol_mpi.py``, real time). The same check then judges what the scripted
ranks observed and what the master left in the state directory. Kept free of pytest so that
the MPI child can import it with only ``tests/`` on sys.path.

Layout: four ranks, one worker per master: masters 0 (under test) and 2 (scripted), workers 1
(scripted) and 3 (silent). Every rank is on a host of its own, so a lease that expires is
reported, never fenced by a kill.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from symcc_ulfm.core import envelope
from symcc_ulfm.core.canonical import sha256_hex
from symcc_ulfm.core.master.ownership import owner
from symcc_ulfm.core.membership import initial_membership
from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.core.policy import Policy, build_policy
from symcc_ulfm.runtime.injection import Injector
from symcc_ulfm.runtime.loopback import Loopback
from symcc_ulfm.runtime.master_driver import MasterDriver
from symcc_ulfm.runtime.rank_state import RankState
from symcc_ulfm.runtime.transport import DATA, FRONTIER, SENTINEL
from symcc_ulfm.store.corpus import Corpus
from symcc_ulfm.store.identity import write_identity
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.store.runlog import RankLog
from symcc_ulfm.store.staging import WorkerStaging
from symcc_ulfm.store.wal import WorkWAL

RANKS = 4
MASTER, WORKER, PEER = 0, 1, 2
MASTERS = (0, 2)
HOSTS = ("host-a", "host-b", "host-c", "host-d")
LIMIT = 4096
GRACE_S = 0.5


def owned_by(master: int, prefix: str, count: int = 1) -> list[bytes]:
    """``count`` inputs that rendezvous ownership gives to ``master``."""
    found, i = [], 0
    while len(found) < count:
        data = f"{prefix}-{i}".encode()
        if owner(hashlib.sha256(data).hexdigest(), MASTERS) == master:
            found.append(data)
        i += 1
    return found


SEED = owned_by(MASTER, "seed")[0]
CHILDREN = [*owned_by(MASTER, "child", 2), *owned_by(PEER, "child")]  # two stay here, one goes to master 2
FORWARDED = owned_by(MASTER, "forwarded")[0]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the state directory and the master under test ------------------------------------------------------


def policy_of(scenario: Scenario) -> Policy:
    return build_policy(ranks=RANKS, warm_spares=0, workers_per_master=1, deadline_s=scenario.deadline_s,
                        executor="simulate", ulfm=False, max_message_bytes=LIMIT, stop_when_exhausted=False,
                        timeouts={"lease_s": scenario.lease_s, "shutdown_grace_s": GRACE_S})


def prepare(root: Path) -> None:
    """A state directory with the executor identity and one seed."""
    state = StateDir(root, FileModes()).create()
    write_identity(state.executor, {"executor": "protocol-scenarios"}, state.modes.snapshot)
    corpus_of(root).publish_seed(SEED)


def rank_state(root: Path, scenario: Scenario, stable: int, started_at: float) -> dict:
    """The arguments of a ``RankState`` for ``stable`` in generation 0 of ``scenario``."""
    policy = policy_of(scenario)
    state = StateDir(root, FileModes())
    log = RankLog(state.rank_log(stable), stable, state.modes.snapshot)
    membership = initial_membership(RANKS, 0, 1, HOSTS, sha256_hex(policy.to_bytes()), started_at)
    return dict(stable=stable, policy=policy, state=state, log=log, injector=Injector((), stable, log),
                membership=membership, peers=[{"host": host, "pid": 0} for host in HOSTS])


# -- benches: where the scripted ranks play ----------------------------------------------------------------


class LoopbackBench:
    """Every rank in this process: the master steps whenever a scripted rank waits, and time is a
    clock this bench advances (a deadline or a lease expiry takes no real time)."""

    STEP_S = 0.01

    def __init__(self, root: Path, scenario: Scenario):
        prepare(root)
        self.root = root
        self.now = time.time()
        self.hub = Loopback(range(RANKS), LIMIT)
        ctx = RankState(**rank_state(root, scenario, MASTER, self.now))
        self.driver = MasterDriver(ctx, self.hub.endpoint(MASTER), clock=lambda: self.now)
        self.driver.prepare()
        self.endpoints = {rank: self.hub.endpoint(rank) for rank in range(RANKS)}

    def transport(self, rank: int):
        return self.endpoints[rank]

    def pump(self) -> None:
        if not self.driver.stopped:
            self.now += self.STEP_S
            self.driver.step()

    def idle(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end and not self.driver.stopped:
            self.pump()

    def expect(self, rank: int, source: int, channel: str) -> dict | None:
        """The next message ``rank`` receives from ``source``; None once the master stopped."""
        for _ in range(200_000):
            raw = self.endpoints[rank].receive(source, channel, f"{channel} from {source}")
            if raw is not None:
                return envelope.decode(raw, LIMIT)
            if self.driver.stopped:
                return None
            self.pump()
        raise AssertionError("the master neither answered nor stopped")

    def flush(self) -> None:
        """Sends complete at once."""

    def finish(self) -> None:
        while not self.driver.stopped:
            self.pump()
        self.driver.close()


class MpiBench:
    """One scripted rank of an MPI job (``protocol_mpi.py``): real time, the master in its own process."""

    def __init__(self, root: Path, transport, deadline: float):
        self.root = root
        self._transport = transport
        self.end = deadline + GRACE_S + 1.0  # the master has stopped by then

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

    def flush(self) -> None:
        while self._transport.busy:
            self.pump()


# -- what the scripted ranks do ----------------------------------------------------------------------------


def send(bench, rank: int, dest: int, channel: str, payload: bytes) -> None:
    bench.transport(rank).send(dest, channel, payload, f"{channel} to {dest}")


def ready(bench) -> None:
    send(bench, WORKER, MASTER, DATA, envelope.encode("READY", LIMIT, generation=0, worker=WORKER))


def result(bench, work: dict, children: list[bytes] = (), **change) -> bytes:
    """A RESULT for ``work`` whose children are staged in the worker's own staging directory."""
    state = StateDir(bench.root, FileModes())
    staging = WorkerStaging(state.root, WORKER, state.modes.corpus, state.modes.snapshot_dir)
    candidates = []
    for i, child in enumerate(children):
        digest, _ = staging.stage(work["lease"], child)
        candidates.append({"sha256": digest, "length": len(child), "coverage": [100 + i], "hint": None})
    fence = {k: work[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
    message = {**fence, "candidates": candidates, "findings": [], "stats": {"seconds": 0.001}, "error": None,
               **change}
    return json.dumps({"v": envelope.VERSION, "type": "RESULT", **message}).encode()


def serve(bench, answer: Callable[[dict], list[bytes]] | None) -> dict:
    """Take WORK until STOP (or the end), answering each with ``answer`` (None: never answer)."""
    works, stop = [], None
    while (message := bench.expect(WORKER, MASTER, DATA)) is not None:
        if message["type"] == "STOP":
            stop = message["reason"]
            break
        works.append(message["input_hash"])
        for payload in answer(message) if answer else ():
            send(bench, WORKER, MASTER, DATA, payload)
    bench.flush()
    return {"works": works, "stop": stop}


def collect_frontier(bench) -> dict:
    messages = []
    while (message := bench.expect(PEER, MASTER, FRONTIER)) is not None:
        messages.append(message)
    return {"frontier": messages}


def empty_results(bench) -> Callable[[dict], list[bytes]]:
    return lambda work: [result(bench, work)]


# -- reading what the master left ------------------------------------------------------------------------


def master_log(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "logs" / f"rank-{MASTER}.jsonl").read_text().splitlines()]


def wal_state(root: Path, data: bytes) -> dict | None:
    state = StateDir(root, FileModes())
    wal = WorkWAL(state.wal, state.root, corpus_of(root), state.modes.snapshot)
    records = {r["input_hash"]: r for r in wal.records()}
    return records.get(sha(data))


def corpus_of(root: Path) -> Corpus:
    state = StateDir(root, FileModes())
    return Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)


def rejections(root: Path) -> list[str]:
    return [e["reason"] for e in master_log(root) if e["event"] in ("message-rejected", "result-rejected")]


def check_every_line_names_its_stimulus(root: Path) -> None:
    lines = master_log(root)
    assert lines and all(isinstance(e.get("stimulus"), str) and e["stimulus"] for e in lines), lines


# -- the scenarios ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    phases: tuple[tuple[int, Callable[..., dict]], ...]  # (scripted rank, its play), in the loopback order
    check: Callable[[Path, dict[int, dict]], None]
    deadline_s: float = 1.5
    lease_s: float = 30.0


def play_commit(bench) -> dict:
    ready(bench)

    def answer(work):
        return [result(bench, work, CHILDREN if work["input_hash"] == sha(SEED) else [])]

    return serve(bench, answer)


def check_commit(root: Path, observed: dict[int, dict]) -> None:
    worker, peer = observed[WORKER], observed[PEER]
    assert worker["works"][0] == sha(SEED) and worker["stop"] == "deadline"
    # the children this master owns come back as work; the one master 2 owns is forwarded to it
    assert sorted(worker["works"][1:]) == sorted(sha(c) for c in CHILDREN[:2])
    items = [i["input_hash"] for m in peer["frontier"] for i in m["items"]]
    assert items == [sha(CHILDREN[2])]
    assert all(m["generation"] == 0 and m["master"] == MASTER for m in peer["frontier"])
    record = wal_state(root, SEED)
    assert record["state"] == "done" and sorted(record["done"]["claimed"]) == sorted(sha(c) for c in CHILDREN)
    assert all(corpus_of(root).read(sha(c)) == c for c in CHILDREN)
    commits = [e for e in master_log(root) if e["event"] == "commit"]
    assert len(commits) == 3 and commits[0]["generated"] == 3 and commits[0]["novel"] == 3
    check_every_line_names_its_stimulus(root)


def play_hostile(bench) -> dict:
    forged_work = {"generation": 0, "shard": "g0-m0", "lease": "0.0.77", "work_hash": sha(b"w"),
                   "input_hash": sha(SEED), "worker": WORKER}
    for payload in (b"\xff\xfe not json", b"{" + b" " * 5000 + b"}",
                    envelope.encode("READY", LIMIT, generation=7, worker=WORKER),
                    result(bench, forged_work),
                    envelope.encode("FRONTIER", LIMIT, generation=0, master=WORKER, items=[], coverage=[])):
        send(bench, WORKER, MASTER, DATA, payload)
    send(bench, WORKER, MASTER, SENTINEL, b"x")
    ready(bench)

    def answer(work):
        if work["input_hash"] != sha(SEED):
            return [result(bench, work)]
        return [result(bench, work, lease=work["lease"] + "9"), result(bench, work, [b"hostile-child"])]

    return serve(bench, answer)


def check_hostile(root: Path, observed: dict[int, dict]) -> None:
    reasons = rejections(root)
    for expected in ("not UTF-8 JSON", "larger than 4096", "READY for generation 7", "holds no lease",
                     "failure-sentinel", "FRONTIER is not a worker message", "does not match the lease"):
        assert any(expected in r for r in reasons), (expected, reasons)
    assert wal_state(root, SEED)["state"] == "done"  # the genuine RESULT after the forged one
    assert wal_state(root, SEED)["done"]["claimed"] == [sha(b"hostile-child")]
    assert observed[WORKER]["stop"] == "deadline"
    check_every_line_names_its_stimulus(root)


def play_silent_worker(bench) -> dict:
    ready(bench)
    return serve(bench, None)


def check_fencing(root: Path, observed: dict[int, dict]) -> None:
    (expired,) = [e for e in master_log(root) if e["event"] == "lease-expired"]
    assert expired["worker"] == WORKER and expired["fenced"] is False and "only local ranks" in expired["reason"]
    assert expired["held_s"] > 1.0
    (stop,) = [e for e in master_log(root) if e["event"] == "master-stop"]
    assert stop["abandoned"] == 1 and stop["totals"]["analyzed"] == 0
    assert wal_state(root, SEED)["state"] == "leased"  # never committed, reclaimed by a later generation
    assert observed[WORKER] == {"works": [sha(SEED)], "stop": "deadline"}
    check_every_line_names_its_stimulus(root)


def play_peer_forwards(bench) -> dict:
    stale = envelope.encode("FRONTIER", LIMIT, generation=5, master=PEER, items=[], coverage=[])
    send(bench, PEER, MASTER, FRONTIER, stale)
    item = {"input_hash": sha(FORWARDED), "priority": 9, "hint": {"depth": 4}}
    send(bench, PEER, MASTER, FRONTIER, envelope.encode("FRONTIER", LIMIT, generation=0, master=PEER,
                                                        items=[item], coverage=[7]))
    bench.flush()
    return {}


def play_worker_after_peer(bench) -> dict:
    bench.idle(0.3)  # the peer's FRONTIER arrives first (under MPI, in another process)
    ready(bench)
    return serve(bench, empty_results(bench))


def check_frontier(root: Path, observed: dict[int, dict]) -> None:
    assert any("FRONTIER of generation 5 from master 2" in r for r in rejections(root))
    works = observed[WORKER]["works"]
    assert works[0] == sha(FORWARDED)  # priority 9 goes before the seed
    assert sha(SEED) in works
    assert wal_state(root, FORWARDED)["state"] == "done"
    check_every_line_names_its_stimulus(root)


SCENARIOS = (
    Scenario("commit", ((WORKER, play_commit), (PEER, collect_frontier)), check_commit),
    Scenario("hostile", ((WORKER, play_hostile),), check_hostile),
    Scenario("fencing", ((WORKER, play_silent_worker),), check_fencing, deadline_s=2.5, lease_s=1.0),
    Scenario("frontier", ((PEER, play_peer_forwards), (WORKER, play_worker_after_peer)), check_frontier),
)


def run_loopback(root: Path, scenario: Scenario) -> tuple[dict[int, dict], LoopbackBench]:
    bench = LoopbackBench(root, scenario)
    observed = {rank: play(bench) for rank, play in scenario.phases}
    bench.finish()
    return observed, bench
