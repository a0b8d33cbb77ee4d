"""Hypothesis stateful test: the real WorkWAL against a small in-memory model.

The same random sequence of leases (any generation/master/worker), commits with current or
stale/forged leases, replays, and lost staging files drives both; after every step the outcome
(same exception class, or same resulting state) and the full durable state must agree.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from helpers.store import EXECUTOR, input_hash, open_env, tree_files
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from symcc_ulfm.errors import FenceError, IntegrityError, StaleGeneration
from symcc_ulfm.store.corpus import claim_owner
from symcc_ulfm.store.record import work_hash
from symcc_ulfm.store.wal import AlreadyDone, NeedsReplay

WORKS = 3
POOL = [b"p0", b"p1-longer", b"p2" * 5, b"p3", b"p4!"]
SHA = {p: hashlib.sha256(p).hexdigest() for p in POOL}
BY_SHA = {v: k for k, v in SHA.items()}
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None  # fsync is cheap there


class WalModel:
    """What the WAL should do, with none of its mechanics."""

    def __init__(self):
        self.records: dict[str, dict] = {}  # work -> {state, lease, objects, done}
        self.claims: dict[str, str] = {}  # sha -> work
        self.corpus: set[str] = set()
        self.staged: set[str] = set()  # relative staging paths present on disk

    def lease(self, work, lease):
        rec = self.records.get(work)
        if rec is None:
            self.records[work] = {"state": "leased", "lease": lease, "objects": None, "done": None, "history": []}
            return None
        if rec["state"] == "done":
            return AlreadyDone
        if rec["state"] == "committing":
            return NeedsReplay
        held = rec["lease"]
        if held["generation"] > lease["generation"]:
            return StaleGeneration
        if held["generation"] == lease["generation"] and held["master"] != lease["master"]:
            return FenceError
        rec["history"].append({"state": "leased", **held})
        rec["lease"] = lease
        return None

    def begin_commit(self, work, lease, objects):
        rec = self.records.get(work)
        if rec is None or rec["state"] != "leased":
            return FenceError
        if rec["lease"]["generation"] != lease["generation"]:
            return StaleGeneration
        if rec["lease"] != lease:
            return FenceError
        rec["state"] = "committing"
        rec["objects"] = sorted({o["sha256"]: o for o in objects}.values(), key=lambda o: o["sha256"])
        return None

    def _discard(self, rec):
        self.staged -= {o["staging"] for o in rec["objects"]}

    def replay(self, work, committer):
        rec = self.records.get(work)
        if rec is None or rec["state"] == "leased":
            return FenceError
        if rec["state"] == "done":
            self._discard(rec)
            return None
        claimed = []
        for obj in rec["objects"]:
            if self.claims.setdefault(obj["sha256"], work) != work:
                continue
            if obj["sha256"] not in self.corpus:
                if obj["staging"] not in self.staged:
                    return IntegrityError
                self.corpus.add(obj["sha256"])
            claimed.append(obj["sha256"])
        rec["state"] = "done"
        rec["done"] = {**committer, "claimed": claimed}
        self._discard(rec)
        return None


class WalMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="wal-stateful-", dir=SCRATCH))
        self.env = open_env(self.tmp / "state", lock_timeout_s=5.0)
        self.model = WalModel()
        self.tokens = 0

    def teardown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    @staticmethod
    def work(i: int) -> str:
        return work_hash(input_hash(i), EXECUTOR)

    def _outcome(self, call):
        try:
            call()
        except (FenceError, IntegrityError) as exc:
            return type(exc)
        return None

    # -- rules ------------------------------------------------------------------------------

    @rule(i=st.integers(0, WORKS - 1), generation=st.integers(0, 3), master=st.integers(0, 2),
          worker=st.integers(1, 3))
    def lease(self, i, generation, master, worker):
        self.tokens += 1
        lease = {"generation": generation, "master": master, "worker": worker,
                 "shard": f"g{generation}-m{master}", "token": f"{generation}.{master}.{self.tokens}"}
        expected = self.model.lease(self.work(i), dict(lease))
        actual = self._outcome(lambda: self.env.wal.lease(input_hash(i), EXECUTOR, dict(lease)))
        assert actual is expected, (actual, expected)
        event(f"lease -> {getattr(expected, '__name__', 'ok')}")

    @rule(i=st.integers(0, WORKS - 1),
          how=st.sampled_from(["current", "current", "current", "older", "token", "master", "worker"]),
          payloads=st.lists(st.sampled_from(POOL), max_size=4))
    def begin_commit(self, i, how, payloads):
        work = self.work(i)
        rec = self.model.records.get(work)
        lease = dict(rec["lease"]) if rec else {"generation": 0, "master": 0, "worker": 1, "shard": "g0-m0",
                                                "token": "0.0.0"}
        if how == "older":
            lease["generation"] = max(0, lease["generation"] - 1) if lease["generation"] else lease["generation"] + 1
        elif how == "token":
            lease["token"] += "x"
        elif how == "master":
            lease["master"] += 1
        elif how == "worker":
            lease["worker"] += 1
        staging = self.env.staging(lease["worker"])
        objects = []
        for data in payloads:
            digest, rel = staging.stage(lease["token"], data)
            self.model.staged.add(rel)
            objects.append({"sha256": digest, "length": len(data), "staging": rel})
        manifest = {"objects": objects, "dropped": [], "kind": "test", "slice": None, "generated": len(set(payloads)), "findings": []}
        expected = self.model.begin_commit(work, lease, objects)
        actual = self._outcome(lambda: self.env.wal.begin_commit(work, lease, manifest))
        assert actual is expected, (how, actual, expected)
        event(f"begin_commit -> {getattr(expected, '__name__', 'ok')}")

    @rule(i=st.integers(0, WORKS - 1), generation=st.integers(0, 4), master=st.integers(0, 9))
    def replay(self, i, generation, master):
        committer = {"generation": generation, "master": master}
        expected = self.model.replay(self.work(i), committer)
        actual = self._outcome(lambda: self.env.wal.replay_commit_once(self.work(i), committer))
        assert actual is expected, (actual, expected)
        event(f"replay -> {getattr(expected, '__name__', 'ok')}")

    @rule(i=st.integers(0, WORKS - 1), generation=st.integers(0, 3), master=st.integers(0, 2),
          worker=st.integers(1, 3), payloads=st.lists(st.sampled_from(POOL), min_size=1, max_size=4))
    def lease_then_commit(self, i, generation, master, worker, payloads):
        """The common path (lease, then commit under that lease) as one step, to reach deep states."""
        self.lease(i, generation, master, worker)
        self.begin_commit(i, "current", payloads)

    @rule(pick=st.integers(0, 10**6))
    def lose_staging(self, pick):
        if not self.model.staged:
            return
        rel = sorted(self.model.staged)[pick % len(self.model.staged)]
        (self.env.root / rel).unlink()
        self.model.staged.discard(rel)

    # -- agreement after every step -----------------------------------------------------------

    @invariant()
    def agree(self):
        wal = self.env.wal
        assert sorted(wal.work_hashes()) == sorted(self.model.records)
        for work, rec in self.model.records.items():
            real = wal.read(work)
            assert real["state"] == rec["state"]
            assert real["lease"] == rec["lease"]
            assert real["history"] == rec["history"]
            if rec["objects"] is None:
                assert real["manifest"] is None
            else:
                assert real["manifest"]["objects"] == rec["objects"]
            assert real["done"] == rec["done"]
        claims = {name: claim_owner(data, name) for name, data in tree_files(self.env.state.corpus / "claims").items()}
        assert claims == self.model.claims
        objects = tree_files(self.env.state.corpus / "objects")
        assert set(objects) == self.model.corpus
        assert all(data == BY_SHA[name] for name, data in objects.items())
        assert set(tree_files(self.env.state.staging)) == {rel[len("staging/"):] for rel in self.model.staged}


WalMachine.TestCase.settings = settings(
    max_examples=120,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestWal = WalMachine.TestCase
