"""The master's state machine (pure core): events in, instructions out.

Facts are answered here by hand or by a small in-memory model of the WAL; the orderings the
WAL needs are checked on the instruction streams (a WORK is sent only after the barrier that
made its lease durable, a record is published only after its manifest's barrier, marked done
only after its objects' barrier).
"""

from __future__ import annotations

import ast
import hashlib
import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symcc_ulfm.core import envelope
from symcc_ulfm.core.master import events as ev
from symcc_ulfm.core.master import fields, machine, mix, rounds, start
from symcc_ulfm.core.master.fields import MasterConfig
from symcc_ulfm.core.master.machine import MasterState
from symcc_ulfm.core.master.rounds import LENT_SLICE_S, MAX_REJECTIONS, PIPELINE
from symcc_ulfm.core.membership import Receipt

LIMIT = 1 << 20
GEN = 0
EXECUTOR_SHA = "e" * 64


def h(i: int | str) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def config(**change) -> MasterConfig:
    base = dict(me=0, generation=GEN, workers=(1, 2), masters=(0,), limit=LIMIT, lease_s=10.0, deadline=1000.0,
                executor="simulate", executor_sha=EXECUTOR_SHA,
                grace_s=1.0, peers={0: {"host": "a", "pid": 100}, 1: {"host": "a", "pid": 101},
                                    2: {"host": "b", "pid": 102}})
    return MasterConfig(**{**base, **change})


class Model:
    """Answers the machine's instructions like the driver would, over an in-memory WAL."""

    def __init__(self, state: MasterState, corpus=(), records=(), receipts=(), markers=None):
        self.state = state
        self.receipts = tuple(receipts)
        self.markers = dict(markers or {})  # (worker, generation) -> the lease its running marker names
        self.corpus = list(corpus)
        self.records = {r["work_hash"]: r for r in records}
        self.done: list[ev.Instruction] = []  # every instruction performed, in order
        self.syncs = 0
        self.tokens = 0
        self.lease_outcome = {}  # input hash -> outcome other than "leased"
        self.reject_accept: set[str] = set()  # tokens the QueryStore refuses
        self.refuse_manifest: set[str] = set()  # inputs whose next manifest cannot be written

    def feed(self, event: ev.Event) -> list[ev.Instruction]:
        performed = []
        while event is not None:
            fact = None
            for instruction in self.state.handle(event):
                performed.append(instruction)
                fact = self.perform(instruction, event.now)
            event = fact
        self.done += performed
        return performed

    def perform(self, i: ev.Instruction, now: float) -> ev.Event | None:
        if isinstance(i, ev.Scan):
            return ev.Scanned(now, tuple(self.records.values()))
        if isinstance(i, ev.ReadDeaths):
            return ev.DeathsRead(now, self.receipts)
        if isinstance(i, ev.ReadMarkers):
            return ev.MarkersRead(now, tuple((pair, self.markers.get(pair)) for pair in i.pairs))
        if isinstance(i, ev.ListCorpus):
            return ev.Listed(now, tuple((name, True) for name in self.corpus))
        if isinstance(i, ev.PollExhaustion):
            return ev.Polled(now, None)
        if isinstance(i, ev.Accept):
            return ev.Accepted(now, "refused by the store" if i.token in self.reject_accept else None)
        if isinstance(i, ev.WriteManifest):
            if i.manifest["input_hash"] in self.refuse_manifest:
                self.refuse_manifest.discard(i.manifest["input_hash"])
                return ev.Committing(now, "no space left on device")
            self.records[i.work] = {"work_hash": i.work, "state": "committing", "manifest": i.manifest,
                                    "input_hash": i.manifest["input_hash"], "lease": i.lease}
            return ev.Committing(now)
        if isinstance(i, ev.Publish):
            return ev.Published(now, i.work, [o["sha256"] for o in self.records[i.work]["manifest"]["objects"]])
        if isinstance(i, ev.Lease):
            self.tokens += 1
            token = f"{GEN}.0.{self.tokens}"
            outcome = self.lease_outcome.get(i.input_hash, "leased")
            lease = {"generation": GEN, "master": 0, "shard": "g0-m0", "token": token, "worker": i.worker}
            return ev.Leased(now, outcome, h(("work", i.input_hash)), token, "g0-m0", lease,
                             None if outcome in ("leased", "done", "committing") else "no")
        if isinstance(i, ev.Barrier):
            self.syncs += 1
            return ev.Synced(now, self.syncs)
        if isinstance(i, ev.MarkDone):
            record = self.records[i.work]
            record.update(state="done", done={"generation": GEN, "master": 0, "claimed": i.claimed})
            return ev.Done(now, dict(record))
        return None

    def sent(self, kind: str) -> list[dict]:
        return [envelope.decode(i.payload, LIMIT) for i in self.done
                if isinstance(i, ev.Send) and envelope.decode(i.payload, LIMIT)["type"] == kind]

    def logs(self, name: str) -> list[ev.Log]:
        return [i for i in self.done if isinstance(i, ev.Log) and i.event == name]


def ready(worker: int, generation: int = GEN) -> bytes:
    return envelope.encode("READY", LIMIT, generation=generation, worker=worker)


def result_for(work: dict, candidates=(), **change) -> bytes:
    fence = {k: work[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
    cands = [{"sha256": h(c), "length": 1, "coverage": [c], "hint": None} for c in candidates]
    message = {**fence, "candidates": cands, "findings": [], "stats": {"seconds": 0.01}, "error": None, **change}
    return envelope.encode("RESULT", LIMIT, **message)


def started(corpus=(), records=(), receipts=(), markers=None, **change) -> Model:
    model = Model(MasterState(config(**change)), corpus, records, receipts, markers)
    model.feed(ev.Start(1.0))
    return model


# -- start ---------------------------------------------------------------------------------------


def test_start_scans_lists_then_is_ready():
    model = Model(MasterState(config()), corpus=[h(1), h(2)])
    kinds = [type(i) for i in model.feed(ev.Start(1.0))]
    assert kinds == [ev.Scan, ev.ListCorpus, ev.Log]  # nothing lapsed: no deaths to read
    (line,) = model.logs("master-ready")
    assert line.fields["frontier"] == 2 and line.fields["replayed"] == 0
    assert line.stimulus == "start-1"  # every instruction of the start carries its stimulus


def test_committing_records_it_owns_are_replayed_then_rescanned_and_counted():
    manifest = {"master": 4, "generation": 0, "worker": 5, "objects": [], "dropped": [], "kind": "test", "slice": None, "generated": 0, "findings": [],
                "stats": {}}
    committing = {"work_hash": h("w"), "input_hash": h("i"), "state": "committing", "manifest": manifest}
    state = MasterState(config(generation=1))
    out = state.handle(ev.Start(1.0))
    assert isinstance(out[-1], ev.Scan)
    out = state.handle(ev.Scanned(1.0, (committing,)))
    assert out == [ev.Replay("start-1", h("w"))]
    done = {**committing, "state": "done", "done": {"generation": 1, "master": 0, "claimed": []}}
    out = state.handle(ev.Replayed(1.0, h("w"), done))
    assert isinstance(out[-1], ev.Scan)
    assert [i.fields["replayed"] for i in out if isinstance(i, ev.Log) and i.event == "commit"] == [True]
    out = state.handle(ev.Scanned(1.0, (done,)))
    assert isinstance(out[-1], ev.ListCorpus)
    out = state.handle(ev.Listed(2.0, ()))
    assert out[0].fields["replayed"] == 1 and out[0].fields["seconds"] == 1.0


def test_a_replay_left_committing_by_an_integrity_error_is_logged_not_counted():
    committing = {"work_hash": h("w"), "input_hash": h("i"), "state": "committing"}
    state = MasterState(config())
    state.handle(ev.Start(1.0))
    state.handle(ev.Scanned(1.0, (committing,), problems=((h("bad"), "torn record"),)))
    out = state.handle(ev.Replayed(1.0, h("w"), None, "object tampered"))
    assert isinstance(out[-1], ev.ListCorpus)  # nothing replayed: no second scan
    assert [i.fields["work_hash"] for i in out if isinstance(i, ev.Log)] == [h("w")]
    assert state.frontier.totals["analyzed"] == 0


def test_lapsed_leases_of_older_generations_go_first():
    lapsed = {"work_hash": h("w"), "input_hash": h("lapsed"), "state": "leased", "executor_sha256": EXECUTOR_SHA,
              "lease": {"generation": 0, "master": 0, "shard": "g0-m0", "token": "0.0.1", "worker": 1},
              "history": []}
    model = started(corpus=[h(1), h("lapsed")], records=[lapsed], generation=1)
    assert model.logs("master-ready")[0].fields["reclaimed"] == 1
    assert model.state.queue.next_input() == h("lapsed")


def poisoned_record(generations, running=True):
    """A leased record whose lease of each generation in ``generations`` was held by worker 1."""
    leases = [{"generation": g, "master": 0, "shard": f"g{g}-m0", "token": f"{g}.0.1", "worker": 1}
              for g in generations]
    record = {"work_hash": h("pw"), "input_hash": h("poison"), "state": "leased", "lease": leases[-1],
              "executor_sha256": EXECUTOR_SHA,
              "history": leases[:-1]}
    markers = {(1, g): (f"{g}.0.1" if running else None) for g in generations}
    return record, markers


def recovery(generation, missing):
    return Receipt(generation=generation, previous_sha256="0" * 64, missing=tuple(missing), promoted=(),
                   snapshot_sha256="0" * 64, layout_sha256="0" * 64)


@pytest.mark.parametrize("deaths, running, quarantined", [
    ((1, 2), True, True),     # worker 1 died executing it in generations 0 and 1
    ((1,), True, False),      # one strike is not enough (poison_deaths = 2)
    ((1, 2), False, False),   # it died holding the lease, but was executing another input
])
def test_a_lapsed_input_whose_leases_killed_poison_deaths_workers_is_quarantined(deaths, running, quarantined):
    record, markers = poisoned_record((0, 1), running)
    receipts = [recovery(g, [1]) for g in deaths]
    model = started(corpus=[h("poison")], records=[record], receipts=receipts, markers=markers, generation=2)
    model.feed(ev.Tick(2.0))  # the first round publishes what the start committed
    kinds = [type(i) for i in model.done]
    if not quarantined:
        assert ev.WriteManifest not in kinds and model.state.queue.next_input() == h("poison")
        assert model.logs("master-ready")[0].fields["quarantined"] == 0
        return
    (write,) = [i for i in model.done if isinstance(i, ev.WriteManifest)]
    manifest = write.manifest
    assert manifest["worker"] == manifest["master"] == 0 and manifest["objects"] == []
    assert [f["kind"] for f in manifest["findings"]] == ["crash"]
    assert [s["generation"] for s in manifest["quarantine"]["strikes"]] == [0, 1]
    # manifest, barrier, publication, barrier, done: the orderings of any commit
    order = [k for k in kinds if k in (ev.WriteManifest, ev.Barrier, ev.Publish, ev.MarkDone)]
    assert order[:5] == [ev.WriteManifest, ev.Barrier, ev.Publish, ev.Barrier, ev.MarkDone]
    ready_line = model.logs("master-ready")[0].fields
    assert ready_line["quarantined"] == 1 and ready_line["reclaimed"] == 0
    assert model.state.queue.next_input() is None  # settled: never leased again
    assert model.logs("input-quarantined")[0].fields["workers"] == [1, 1]


def test_a_poison_input_settled_meanwhile_is_skipped_not_quarantined():
    record, markers = poisoned_record((0, 1))
    model = Model(MasterState(config(generation=2)), [h("poison")], [record], [recovery(1, [1]), recovery(2, [1])],
                  markers)
    model.lease_outcome[h("poison")] = "done"
    model.feed(ev.Start(1.0))
    assert not [i for i in model.done if isinstance(i, ev.WriteManifest)]
    assert model.logs("quarantine-skipped")[0].fields["outcome"] == "done"


# -- none -> leased -> committing -> done --------------------------------------------------------


def test_work_is_sent_only_after_the_barrier_that_makes_its_lease_durable():
    model = started(corpus=[h(1)])
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    performed = model.feed(ev.Tick(2.0))
    kinds = [type(i) for i in performed]
    assert kinds.index(ev.Lease) < kinds.index(ev.Barrier) < kinds.index(ev.Send)
    assert kinds[-1] is ev.CloseBatch
    (work,) = model.sent("WORK")
    assert work["input_hash"] == h(1) and work["worker"] == 1
    (stimulus,) = {i.stimulus for i in performed}  # the tick's id, through every fact
    assert stimulus.startswith("tick-")


@pytest.mark.parametrize("idle_kind", ["simfuzz", None])
def test_an_analysis_worker_with_nothing_to_analyze_is_lent_to_the_idle_kind(idle_kind):
    """Worker 1 fuzzes (simfuzz), worker 2 analyzes: one queued input goes to worker 2; once the
    queue is empty worker 2 gets a slice of the idle kind (its manifest names that kind), or
    nothing when the campaign's analysis workers wait."""
    model = started(corpus=[h(1)], kinds={1: "simfuzz"}, fuzzers=frozenset({"simfuzz"}), idle_kind=idle_kind)
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.FromWorker(2.0, 2, ready(2)))
    model.feed(ev.Tick(2.0))
    first = {w["worker"]: w for w in model.sent("WORK")}
    assert first[2]["input_hash"] == h(1) and first[2]["hint"] is None
    assert first[1]["hint"]["kind"] == "simfuzz" and first[1]["hint"]["worker"] == 1
    model.feed(ev.FromWorker(3.0, 2, result_for(first[2])))
    model.feed(ev.Tick(3.1))
    model.feed(ev.Tick(3.2))
    later = [w for w in model.sent("WORK") if w["worker"] == 2 and w["lease"] != first[2]["lease"]]
    if idle_kind is None:
        assert later == []
        return
    (lent,) = later
    assert lent["hint"]["kind"] == "simfuzz" and lent["hint"]["worker"] == 2
    assert lent["hint"]["seconds"] == min(LENT_SLICE_S, first[1]["hint"]["seconds"])  # short: inputs wait behind it
    model.feed(ev.FromWorker(4.0, 2, result_for(lent, [7])))
    model.feed(ev.Tick(4.1))
    model.feed(ev.Tick(4.2))
    manifest = model.records[lent["work_hash"]]["manifest"]
    assert manifest["kind"] == "simfuzz" and manifest["slice"] == lent["hint"] and manifest["worker"] == 2


def measured_record(name: str, kind: str, edges: int, novel: tuple[str, ...] = ()) -> dict:
    """A done record of an earlier generation: ``edges`` new edges in one CPU-second, its novel objects."""
    objects = [{"sha256": o, "length": 1, "novel": True, "coverage": [900 + i], "hint": None}
               for i, o in enumerate(novel)]
    manifest = {"generation": 0, "master": 0, "worker": 1, "kind": kind, "objects": objects, "findings": [],
                "stats": {"seconds": 5.0, "cpu_seconds": 1.0}, "new_edges": edges, "slice": None, "dropped": [],
                "generated": len(objects)}
    return {"work_hash": h(("work", name)), "input_hash": h(name), "state": "done", "executor_sha256": EXECUTOR_SHA,
            "manifest": manifest, "done": {"generation": 0, "master": 0, "claimed": [o["sha256"] for o in objects]}}


MEASURED = [measured_record(f"a{i}", "simulate", 0) for i in range(3)] + \
           [measured_record(f"f{i}", "simfuzz", 6) for i in range(3)]
ADAPTIVE = dict(kinds={1: "simfuzz"}, fuzzers=frozenset({"simfuzz"}), idle_kind="simfuzz", mix="adaptive",
                generation=1)


@pytest.mark.parametrize("novel_queued", [False, True])
def test_the_adaptive_mix_lends_an_analysis_worker_while_inputs_wait_unless_novel_ones_do(novel_queued):
    """From the WAL alone: the analysis kind added no edges, the fuzzer six per CPU-second. With
    inputs queued, worker 2 runs a slice of the fuzzer kind as long as a fuzzer's, named by the
    decision's SHA-256; its manifest records the decision and its inputs. An input that added
    coverage waiting keeps it analyzing (the floor)."""
    extra = [measured_record("n", "simfuzz", 1, novel=(h("novel"),))] if novel_queued else []
    model = started(corpus=[h(1), h(2), *([h("novel")] if novel_queued else [])], records=MEASURED + extra,
                    **ADAPTIVE)
    model.feed(ev.FromWorker(2.0, 1, ready(1, 1)))
    model.feed(ev.FromWorker(2.0, 2, ready(2, 1)))
    model.feed(ev.Tick(2.0))
    (decided,) = model.logs("mix")
    works = {w["worker"]: w for w in model.sent("WORK")}
    if novel_queued:
        assert decided.fields["lent"] == 0 and decided.fields["reason"] == "floor"
        assert works[2]["hint"] is None  # an input, not a slice
        return
    assert decided.fields["lent"] == 1 and decided.fields["reason"] == "yield"
    lent = works[2]
    assert lent["hint"]["kind"] == "simfuzz" and lent["hint"]["seconds"] == works[1]["hint"]["seconds"]
    assert model.state.queue.pending == 2  # the inputs wait
    model.feed(ev.FromWorker(3.0, 2, result_for(lent, [7])))
    model.feed(ev.Tick(3.1))
    model.feed(ev.Tick(3.2))
    manifest = model.records[lent["work_hash"]]["manifest"]
    decision = manifest["mix"]
    assert mix.Decision(decision["lent"], decision["reason"],
                        {k: v for k, v in decision.items() if k not in ("lent", "reason")}).sha256 == lent["hint"]["mix"]
    assert decision["slots"] == [1, 1] and decision["previous"] == 0 and decision["novel_queued"] is False
    assert sorted(e[0] for e in decision["window"]["simfuzz"]) == sorted(r["work_hash"] for r in MEASURED[3:])
    assert manifest["new_edges"] == 1  # coverage id 7 (edge 0) was new


def test_a_master_takes_the_mix_it_decided_last_from_the_wal():
    """The last decision this master recorded lent the analysis worker: with yields in the band it stays
    lent after a restart (hysteresis restored), where a fresh master would keep it analyzing."""
    lent_before = measured_record("s", "simfuzz", 0)
    lent_before["manifest"].update(mix={"lent": 1}, slice={"seq": 4})
    band = [measured_record(f"a{i}", "simulate", 1) for i in range(3)] + \
           [measured_record(f"f{i}", "simfuzz", 4) for i in range(3)]  # want = 2 * 1/5 analysis slots: the band
    for records, lent in ((band, 0), (band + [lent_before], 1)):
        model = started(corpus=[h(1)], records=records, **ADAPTIVE)
        model.feed(ev.FromWorker(2.0, 2, ready(2, 1)))
        model.feed(ev.Tick(2.0))
        assert model.state.mix_decision.lent == lent and model.state.mix_decision.reason == "band"


def test_a_result_is_committed_then_published_and_done_in_the_next_round():
    model = started(corpus=[h(1)])
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    (work,) = model.sent("WORK")
    model.feed(ev.FromWorker(3.0, 1, result_for(work, candidates=[7, 8])))
    first = model.feed(ev.Tick(3.0))
    kinds = [type(i) for i in first]
    assert kinds.index(ev.Accept) < kinds.index(ev.WriteManifest) < kinds.index(ev.Barrier)
    assert ev.Publish not in kinds and ev.MarkDone not in kinds
    assert [i.key for i in model.logs("commit")] == []
    second = model.feed(ev.Tick(4.0))  # the next round publishes, then marks done after its barrier
    kinds = [type(i) for i in second]
    assert kinds.index(ev.Publish) < kinds.index(ev.Barrier) < kinds.index(ev.MarkDone)
    assert not model.logs("commit")  # counted once the done record is durable
    third = model.feed(ev.Tick(5.0))  # idle: one more barrier, then count
    assert [type(i) for i in third][:3] == [ev.PollExhaustion, ev.Barrier, ev.Log]
    (commit,) = model.logs("commit")
    assert commit.fields["generated"] == 2 and commit.fields["novel"] == 2
    assert model.state.frontier.totals["analyzed"] == 1


def test_results_wait_for_the_commit_delay_to_share_a_barrier():
    model = started(corpus=[h(1), h(2)], workers=(1,))
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    model.feed(ev.Tick(2.0))
    works = model.sent("WORK")
    assert len(works) == 2  # both inputs, in one worker's pipeline
    model.state.task_s = 1.0
    model.feed(ev.FromWorker(3.0, 1, result_for(works[0])))
    assert ev.WriteManifest not in [type(i) for i in model.feed(ev.Tick(3.001))]  # waits
    assert ev.WriteManifest in [type(i) for i in model.feed(ev.Tick(3.03))]  # the delay is over


def finding_result(work: dict, *children: tuple[int, int, str | None]) -> bytes:
    """A RESULT whose children are ``(name, coverage id, signature of an exception or None)``."""
    cands = [{"sha256": h(name), "length": 1, "coverage": [edge], "hint": None} for name, edge, _ in children]
    found = [{"kind": "exception", "signature": sig, "detail": "d", "sha256": h(name)}
             for name, _, sig in children if sig is not None]
    fence = {k: work[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
    return envelope.encode("RESULT", LIMIT, **fence, candidates=cands, findings=found, stats={"seconds": 0.01},
                           error=None)


def committed(model: Model, work: dict) -> dict:
    return model.records[work["work_hash"]]["manifest"]


def test_keep_novel_keeps_the_first_input_of_each_finding_and_drops_repeated_hits():
    model = started(corpus=[h(1), h(2)], workers=(1,), keep="novel")
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    first = model.sent("WORK")[-1]
    model.feed(ev.FromWorker(2.5, 1, finding_result(first, (10, 7, "A"), (11, 7, "B"), (12, 7, "A"), (13, 7, None))))
    model.feed(ev.Tick(3.0))
    manifest = committed(model, first)
    assert [o["sha256"] for o in manifest["objects"]] == [h(10), h(11)]  # novel; the first of "B"
    assert sorted(manifest["dropped"]) == sorted([h(12), h(13)])  # a repeated hit of "A"; nothing new
    assert [(f["signature"], f["sha256"]) for f in manifest["findings"]] == [("A", h(10)), ("B", h(11))]
    second = model.sent("WORK")[-1]
    assert second["lease"] != first["lease"]
    model.feed(ev.FromWorker(3.5, 1, finding_result(second, (14, 7, "B"), (15, 7, "C"), (16, 8, "B"))))
    model.feed(ev.Tick(4.0))
    manifest = committed(model, second)
    assert [o["sha256"] for o in manifest["objects"]] == [h(15), h(16)]  # the first of "C"; novel
    assert manifest["dropped"] == [h(14)]
    assert [(f["signature"], f["sha256"]) for f in manifest["findings"]] == [("C", h(15)), ("B", h(16))]


def test_a_finding_whose_manifest_was_not_written_is_kept_from_the_next_result():
    model = started(corpus=[h(1), h(2)], workers=(1,), keep="novel")
    model.refuse_manifest.add(h(1))
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    first = model.sent("WORK")[-1]
    assert first["input_hash"] == h(1)
    model.feed(ev.FromWorker(2.5, 1, finding_result(first, (10, 7, None), (11, 7, "A"))))
    model.feed(ev.Tick(3.0))
    assert first["work_hash"] not in model.records and model.logs("result-rejected")
    second = model.sent("WORK")[-1]
    assert second["lease"] != first["lease"]
    model.feed(ev.FromWorker(3.5, 1, finding_result(second, (12, 7, None), (13, 7, "A"))))
    model.feed(ev.Tick(4.0))
    manifest = committed(model, second)
    assert [(f["signature"], f["sha256"]) for f in manifest["findings"]] == [("A", h(13))]
    assert h(13) in [o["sha256"] for o in manifest["objects"]]


def test_a_master_learns_the_findings_its_corpus_holds_from_the_done_records():
    manifest = {"master": 0, "generation": 0, "worker": 1, "objects": [], "dropped": [], "kind": "test",
                "slice": None, "generated": 1, "stats": {},
                "findings": [{"kind": "exception", "signature": "A", "detail": "d", "sha256": h(1), "time": 1.0}]}
    record = {"work_hash": h("w"), "state": "done", "input_hash": h(1), "manifest": manifest,
              "done": {"generation": 0, "master": 0, "claimed": []}}
    model = started(corpus=[h(1), h(2)], records=[record], workers=(1,), keep="novel")
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    (work,) = model.sent("WORK")
    model.feed(ev.FromWorker(2.5, 1, finding_result(work, (10, 7, None), (11, 7, "A"))))
    model.feed(ev.Tick(3.0))
    manifest = committed(model, work)
    assert manifest["dropped"] == [h(11)] and manifest["findings"] == []


def test_a_refused_result_requeues_its_input_until_it_is_dropped():
    model = started(corpus=[h(1)], workers=(1,))
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    now = 2.0
    for _ in range(MAX_REJECTIONS):
        model.feed(ev.Tick(now))
        work = model.sent("WORK")[-1]
        assert work["input_hash"] == h(1)
        model.reject_accept.add(work["lease"])
        model.feed(ev.FromWorker(now + 0.5, 1, result_for(work)))
        performed = model.feed(ev.Tick(now + 1))
        assert [i.token for i in performed if isinstance(i, ev.Release)] == [work["lease"]]
        now += 2
    assert len(model.logs("result-rejected")) == MAX_REJECTIONS
    (dropped,) = model.logs("input-dropped")
    assert dropped.fields["rejections"] == MAX_REJECTIONS
    assert model.state.queue.pending == 0


@pytest.mark.parametrize(("outcome", "requeued", "logged"), [("done", False, False), ("committing", False, False),
                                                            ("retry", True, True), ("refused", False, True)])
def test_a_lease_that_cannot_be_taken_is_released_and_the_next_input_tried(outcome, requeued, logged):
    model = started(corpus=[h(1), h(2)], workers=(1,))
    first = model.state.queue._queue[0][-1]
    model.lease_outcome[first] = outcome
    if outcome == "committing":
        model.records[h(("work", first))] = {"work_hash": h(("work", first)), "state": "committing",
                                             "input_hash": first, "manifest": {"objects": []}}
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    performed = model.feed(ev.Tick(2.0))
    assert isinstance(performed[[type(i) for i in performed].index(ev.Lease) + 1], ev.Release)
    assert [w["input_hash"] for w in model.sent("WORK")] != [first]
    assert (first in [q[-1] for q in model.state.queue._queue]) == requeued
    assert bool(model.logs("lease-refused")) == logged
    if outcome == "committing":  # replayed in the same batch, under its held lock
        kinds = [type(i) for i in performed]
        assert kinds.index(ev.Publish) < kinds.index(ev.Barrier) < kinds.index(ev.MarkDone)


# -- hostile messages ----------------------------------------------------------------------------


def _leased_model() -> tuple[Model, dict]:
    model = started(corpus=[h(1)], workers=(1, 2))
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    return model, model.sent("WORK")[0]


HOSTILE = {
    "garbage": lambda work: b"\xff\x00 not json",
    "unknown type": lambda work: b'{"v": 1, "type": "PWN"}',
    "old version": lambda work: b'{"v": 0, "type": "READY", "generation": 0, "worker": 1}',
    "extra field": lambda work: b'{"v": 1, "type": "READY", "generation": 0, "worker": 1, "x": 1}',
    "forged lease": lambda work: result_for(work, lease="0.0.999"),
    "stale generation": lambda work: result_for(work, generation=7),
    "impostor": lambda work: result_for(work, worker=2),
    "wrong work": lambda work: result_for(work, work_hash=h("other")),
    "ready of another generation": lambda work: ready(1, generation=3),
    "ready for another worker": lambda work: ready(2),
    "a master's message": lambda work: envelope.encode("FRONTIER", LIMIT, generation=0, master=1, items=[],
                                                       coverage=[]),
    "finding of a foreign input": lambda work: result_for(work, findings=[
        {"kind": "exception", "signature": "s", "detail": "d", "sha256": h("foreign")}]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_worker_message_is_rejected_and_logged(name):
    model, work = _leased_model()
    raw = HOSTILE[name](work)
    performed = model.feed(ev.FromWorker(3.0, 1, raw))
    performed += model.feed(ev.Tick(3.0))
    performed += model.feed(ev.Tick(4.0))
    rejected = [i for i in performed if isinstance(i, ev.Log) and i.event in ("message-rejected", "result-rejected")]
    assert rejected and rejected[0].key == 1
    assert ev.MarkDone not in [type(i) for i in performed] and model.state.frontier.totals["analyzed"] == 0


def test_a_result_from_a_worker_holding_no_lease_is_rejected():
    model = started(corpus=[h(1)])
    (line,) = model.feed(ev.FromWorker(2.0, 2, result_for({"generation": 0, "shard": "g0-m0", "lease": "0.0.1",
                                                              "work_hash": h(2), "input_hash": h(1), "worker": 2})))
    assert line.event == "message-rejected" and "holds no lease" in line.fields["reason"]


@pytest.mark.parametrize("change", [{"generation": 1}, {"master": 3}])
def test_a_frontier_message_must_come_from_its_master_in_this_generation(change):
    state = MasterState(config(masters=(0, 4)))
    raw = envelope.encode("FRONTIER", LIMIT, **{"generation": 0, "master": 4, "items": [], "coverage": [5], **change})
    (line,) = state.handle(ev.FromMaster(1.0, 4, raw))
    assert line.event == "message-rejected" and line.key == 4
    assert 5 not in state.queue.coverage


def test_a_frontier_message_queues_owned_inputs_and_learns_coverage():
    state = MasterState(config(masters=(0, 4)))
    mine = next(h(i) for i in range(100) if state.queue.owns(h(i)))
    raw = envelope.encode("FRONTIER", LIMIT, generation=0, master=4, coverage=[9],
                          items=[{"input_hash": mine, "priority": 2, "hint": {"depth": 1}, "length": 3}])
    (line,) = state.handle(ev.FromMaster(1.0, 4, raw))  # taken: logged, rate-limited by its source
    assert (line.event, line.key, line.fields) == ("frontier-taken", 4, {"source": 4, "items": 1, "coverage": 1})
    assert state.queue.next_input() == mine and state.frontier.hints[mine] == {"depth": 1}
    assert 9 in state.queue.coverage and state.frontier.items_received == 1


def test_transport_refusals_are_logged_rate_limited_by_source():
    state = MasterState(config())
    (line,) = state.handle(ev.Refused(1.0, 2, "message larger than 16 bytes"))
    assert (line.event, line.key, line.fields["source"]) == ("message-rejected", 2, 2)


# -- fencing, deadline, failure --------------------------------------------------------------------


def test_a_worker_holding_a_lease_too_long_is_fenced_on_this_host_and_reported_elsewhere():
    model = started(corpus=[h(1), h(2)])
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.FromWorker(2.0, 2, ready(2)))
    model.feed(ev.Tick(2.0))
    performed = model.feed(ev.Tick(13.0))
    assert [i.pid for i in performed if isinstance(i, ev.Kill)] == [101]  # worker 1 runs on this host
    fenced = {i.fields["worker"]: i.fields["fenced"] for i in performed if isinstance(i, ev.Log)
              and i.event == "lease-expired"}
    assert fenced == {1: True, 2: False}
    assert not any(isinstance(i, ev.Kill) for i in model.feed(ev.Tick(14.0)))  # once


def test_at_the_deadline_the_master_drains_releases_and_stops_its_workers():
    model = started(corpus=[h(1)], deadline=5.0, workers=(1, 2))
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    (work,) = model.sent("WORK")
    assert not model.state.stopped
    model.feed(ev.Tick(5.0))  # deadline: waits (grace) for the outstanding result
    assert model.logs("deadline") and not model.state.stopped
    performed = model.feed(ev.Tick(6.5))
    assert model.state.stopped and isinstance(performed[-1], ev.Stop)
    assert [i.token for i in performed if isinstance(i, ev.Release)] == [work["lease"]]
    assert [s["reason"] for s in model.sent("STOP")] == ["deadline", "deadline"]
    (stop,) = model.logs("master-stop")
    assert stop.fields["abandoned"] == 1 and stop.fields["syncs"] == model.syncs
    # each abandoned lease is named with its worker and input (never dropped silently)
    assert stop.fields["abandoned_leases"] == [{"worker": 1, "input": work["input_hash"], "slice": False}]
    with pytest.raises(RuntimeError):
        model.state.handle(ev.Tick(7.0))


@pytest.mark.parametrize("reason", ["exhausted", "budget"])
def test_the_masters_decision_stops_with_its_reason(reason):
    model = started(corpus=[])
    state = model.state
    out = state.handle(ev.Tick(2.0))
    assert isinstance(out[-1], ev.PollExhaustion) and out[-1].idle
    performed = []
    for i in state.handle(ev.Polled(2.0, reason)):
        performed.append(i)
        fact = model.perform(i, 2.0)
        while fact is not None:
            more = state.handle(fact)
            performed += more
            fact = model.perform(more[-1], 2.0) if more else None
    assert state.stopped and state.reason == reason
    assert [envelope.decode(i.payload, LIMIT)["reason"] for i in performed if isinstance(i, ev.Send)] == [reason] * 2
    assert [i.fields["remaining_s"] for i in performed if isinstance(i, ev.Log) and i.event == reason] == [998.0]


def test_a_worker_is_satisfied_by_results_leased_by_this_master_in_this_generation():
    model = started(corpus=[h(i) for i in range(8)], stop_after=1)
    state = model.state
    assert not state.status().satisfied and not started(corpus=[]).state.status().satisfied
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    work = model.sent("WORK")
    model.feed(ev.FromWorker(2.1, 1, result_for(work[0])))
    for now in (2.2, 2.3, 2.4, 2.5):
        model.feed(ev.Tick(now))
    assert state.results == {1: 1, 2: 0} and not state.status().satisfied  # worker 2 sent no READY
    model.feed(ev.FromWorker(3.0, 2, ready(2)))
    model.feed(ev.Tick(3.0))
    (mine,) = [w for w in model.sent("WORK") if w["worker"] == 2]
    model.feed(ev.FromWorker(3.1, 2, result_for(mine)))
    for now in (3.2, 3.3, 3.4, 3.5):
        model.feed(ev.Tick(now))
    assert state.results == {1: 1, 2: 1} and state.status().satisfied


def test_a_failure_counts_the_durable_done_records_without_forwarding():
    model = started(corpus=[h(1)], masters=(0, 4))
    mine = model.state.queue
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    work = model.sent("WORK")
    assert work, "this master owns h(1) or nothing to lease"
    model.feed(ev.FromWorker(3.0, 1, result_for(work[0], candidates=[3, 4, 5, 6])))
    model.feed(ev.Tick(3.0))
    model.state.waiting.clear()
    model.feed(ev.Tick(4.0))  # published and marked done; counted after the next barrier
    assert mine is model.state.queue
    performed = model.feed(ev.Failed(5.0))
    assert [type(i) for i in performed][0] is ev.Barrier
    assert not any(isinstance(i, ev.Forward) for i in performed)
    assert model.state.frontier.totals["analyzed"] == 1


def test_a_fact_nobody_asked_for_is_a_bug():
    state = MasterState(config())
    with pytest.raises(RuntimeError):
        state.handle(ev.Synced(1.0, 1))
    state.handle(ev.Start(1.0))
    with pytest.raises(RuntimeError):
        state.handle(ev.Tick(1.0))  # the start waits for its scan


# -- properties ----------------------------------------------------------------------------------

STEPS = st.lists(st.tuples(st.sampled_from(["ready", "result", "tick", "refuse"]), st.sampled_from([1, 2])),
                 max_size=40)


@settings(max_examples=60, deadline=None)
@given(steps=STEPS, seeds=st.integers(1, 6))
def test_every_wal_ordering_holds_for_any_interleaving(steps, seeds):
    model = started(corpus=[h(i) for i in range(seeds)])
    now = 2.0
    for step, worker in steps:
        now += 0.05
        if step == "ready":
            model.feed(ev.FromWorker(now, worker, ready(worker)))
        elif step == "result":
            held = model.state.outstanding[worker]
            if held:
                work = {**held[0].fence.fields()}
                model.feed(ev.FromWorker(now, worker, result_for(work, candidates=[int(now * 100)])))
        elif step == "refuse":
            model.feed(ev.Refused(now, worker, "oversized"))
        else:
            model.feed(ev.Tick(now))
    model.feed(ev.Tick(now + 1))
    _check_orderings(model.done)
    sent = len(model.sent("WORK"))
    assert sent == model.state.dispatched
    assert model.state.held() + model.state.frontier.totals["analyzed"] + len(model.state.pending) + sum(
        1 for i in model.done if isinstance(i, ev.Log) and i.event == "result-rejected") <= sent
    assert all(len(q) <= PIPELINE for q in model.state.outstanding.values())


def _check_orderings(performed: list[ev.Instruction]) -> None:
    leased_at, manifest_at, published_at = {}, {}, {}
    barriers = 0
    batch_open = False
    for i in performed:
        if isinstance(i, ev.OpenBatch):
            assert not batch_open
            batch_open = True
        elif isinstance(i, ev.CloseBatch):
            batch_open = False
        elif isinstance(i, ev.Barrier):
            barriers += 1
        elif isinstance(i, ev.Lease):
            assert batch_open
            leased_at[i.input_hash] = barriers
        elif isinstance(i, ev.Send) and b'"WORK"' in i.payload:
            assert leased_at[envelope.decode(i.payload, LIMIT)["input_hash"]] < barriers
        elif isinstance(i, ev.WriteManifest):
            assert batch_open
            manifest_at[i.work] = barriers
        elif isinstance(i, ev.Publish):
            assert batch_open and manifest_at[i.work] < barriers
            published_at[i.work] = barriers
        elif isinstance(i, ev.MarkDone):
            assert batch_open and published_at[i.work] < barriers


# -- the state, declared once --------------------------------------------------------------------


def _self_attributes(module) -> tuple[set[str], set[str], set[str]]:
    """The attributes a module's classes assign on ``self``, those they read, and the methods they define."""
    tree = ast.parse(inspect.getsource(module))
    assigned, read, defined = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            (assigned if isinstance(node.ctx, ast.Store) else read).add(node.attr)
        elif isinstance(node, ast.FunctionDef):
            defined.add(node.name)
    return assigned, read, defined


def test_the_state_the_parts_of_the_machine_share_is_declared_once():
    """Only ``MasterFields`` creates the state: the transitions assign nothing it does not declare
    (the machine adds its two dispatch tables), and a part of the machine reads only what it or
    ``MasterFields`` defines."""
    declared, _, methods = _self_attributes(fields)
    shared = declared | methods | {"config"}
    for part in (machine, start, rounds):
        assigned, read, own = _self_attributes(part)
        assert assigned - declared - ({"_handlers", "_steps"} if part is machine else set()) == set(), part.__name__
        if part is not machine:  # the machine is where the parts meet
            assert read - shared - own == set(), part.__name__


# -- concolic work by edge (core.master.branches) ---------------------------------------------------


def _answer_in_turn(model: Model, coverage: dict[int, list[int]], tried: dict[str, list[int]], until: float) -> None:
    """Worker 1 answers its leases one at a time, in order (children by name, with their coverage),
    and the master ticks between answers."""
    answered, now = 0, 2.0
    while now < until:
        works = model.sent("WORK")
        if answered < len(works):
            work = works[answered]
            answered += 1
            names = coverage if work["input_hash"] == h(1) else {}
            cands = [{"sha256": h(n), "length": 1, "coverage": cov, "hint": None} for n, cov in names.items()]
            fence = {k: work[k] for k in ("generation", "shard", "lease", "work_hash", "input_hash", "worker")}
            model.feed(ev.FromWorker(now, 1, envelope.encode(
                "RESULT", LIMIT, **fence, candidates=cands, findings=[], stats={"seconds": 0.01}, error=None,
                tried=tried.get(work["input_hash"], []))))
        for _ in range(3):
            now += 1.0
            model.feed(ev.Tick(now))


@pytest.mark.parametrize("order", ["seed", "edge"])
def test_in_edge_order_the_record_goes_up_in_manifests_and_down_with_the_leases(order):
    model = started(corpus=[h(1)], workers=(1,), order=order)
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    _answer_in_turn(model, {7: [7], 8: [8]}, {h(1): [5, 6], h(7): [9]}, until=40.0)
    manifests = {r["input_hash"]: r["manifest"] for r in model.records.values()}
    works = model.sent("WORK")
    assert [w["input_hash"] for w in works] == [h(1), h(7), h(8)]
    if order == "seed":  # the old order: no record kept, none handed down
        assert all("tried" not in m for m in manifests.values()) and all("tried" not in w for w in works)
        return
    assert manifests[h(1)]["tried"] == [5, 6] and manifests[h(7)]["tried"] == [9]
    assert "tried" not in works[0] and works[1]["tried"] == [5, 6]  # each id goes to a worker once
    assert works[2].get("tried", []) in ([], [9])
    assert model.state.frontier.branches._order == [5, 6, 9]


def test_in_edge_order_an_input_whose_edges_were_all_analyzed_is_skipped_logged_and_counted():
    model = started(corpus=[h(1)], workers=(1,), order="edge")
    model.feed(ev.FromWorker(2.0, 1, ready(1)))
    model.feed(ev.Tick(2.0))
    children = {10: [1, 2, 3], 11: [1, 2], 12: [1], 13: [2], 14: [3]}
    _answer_in_turn(model, children, {}, until=80.0)
    leased = [w["input_hash"] for w in model.sent("WORK")]
    skipped = [line.fields["input_hash"] for line in model.logs("input-skipped")]
    assert leased[:2] == [h(1), h(10)]  # the seed, then the child with the most edges no analysis was on
    assert skipped and not set(skipped) & set(leased) and set(skipped) | set(leased) == {h(1), *map(h, children)}
    assert model.state.frontier.totals["skipped"] == len(skipped)
    assert model.state.status().idle  # a skipped input is settled: nothing is left queued
