"""``make slurm``: campaigns submitted with ``sbatch`` to a real two-node Slurm (``docs/slurm.md``).

``python -m symcc_ulfm.gates.slurm --out DIR``

Starts munge, a ``slurmctld`` and one ``slurmd`` per node on two network-namespace nodes of this
machine (:mod:`.slurmd.cluster`), then submits the documented script ``docs/slurm/campaign.sbatch``
(2 nodes x 5 tasks; the reference campaign with the failure schedule ``0:2``, ended by a budget of one
result per worker counted from generation 2, ``LAUNCH_ARGS``):

1. ``state/``: the schedule kills rank 2 (node a); once every rank of generation 1 has started
   its work the gate kills rank 7 (node b) from outside with SIGKILL. The oracle must pass with 2
   surviving nodes, receipts ``[2]`` then ``[7]``, ranks 0-4 on node a and 5-9 on node b.
2. ``daemon-loss/state``: once generation 1 has started the gate kills the job's ``prted`` step
   (``scancel --signal=KILL JOB.0``, node b's PRRTE daemon and its ranks). Open MPI 5.0 cannot
   recover from a lost daemon: the job must stop by itself, saying so, with the oracle not
   passing and no outcome written; then the same script with ``RESUME=1`` in a new job must
   finish the campaign with the oracle passing on 2 nodes.
3. ``compare/``: ``docs/slurm/compare.sbatch`` runs a comparison study of 4 cells, each a job step
   of one CPU, two at once; every cell must record its own step, the study must complete and verify.
4. ``notebook/`` (unless ``--no-notebook``): ``notebooks/f447_run.ipynb`` run by papermill on node a
   with ``engine_launcher="slurm"``: ipyparallel submits the engines as an sbatch job with our
   ULFM batch template; the notebook's own checks (oracle, seal, verify) must pass, on 2 nodes.

Everything is torn down (daemons, namespaces, the runtime directory) and checked gone; the run
directory is sealed and verified. Exit codes: 0 passed, 1 a check failed, 2 cannot run here (not
root, no ``ip netns``, Slurm or munge not installed: ``apt-get install slurm-wlm munge``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..core.hosts import host_of_rank, parse_hosts
from ..core.reference import REFERENCE
from ..errors import CheckFailed, ConfigError, SymccUlfmError
from ..evidence import provenance
from ..evidence.oracle.judge import judge
from ..evidence.rundir import NOTEBOOK_NAME
from ..launch.batch import LOST_DAEMON, lost_daemon
from ..store.allocations import read_allocations
from ..store.paths import StateDir
from ..store.policy_file import read_policy
from ..store.runlog import Event, read_events
from ..store.snapshots import SnapshotStore
from .gate_file import conclude_gate
from .netns.checks import rank_hosts
from .netns.session import Session
from .netns.topology import SUBNET, Host, unavailable_reason
from .slurmd.cluster import PACKAGES, SlurmCluster, kill_leftovers, leftover_processes, missing_tools
from .slurmd.kills import kill_rank, mtime, wait_for

GATE_FORMAT = "symcc-ulfm-slurm-gate/1"
RUNTIME = Path("/run/symcc-ulfm-slurm")  # config, munge key and socket, spool, state, logs, the jobs' TMPDIR
LOCK = Path("/run/symcc-ulfm-slurm.lock")
NODE_A = Host("symcc-slurm-a", "symcc-slurm-a", "sslurm-a", "198.51.100.11")
NODE_B = Host("symcc-slurm-b", "symcc-slurm-b", "sslurm-b", "198.51.100.12")
NODES = (NODE_A, NODE_B)
TASKS_PER_NODE = 5
SCRIPT = provenance.source_root() / "docs" / "slurm" / "campaign.sbatch"
SCHEDULE = "0:2"
# Generation 1 (after the scheduled death) never ends by the budget, so the gate's kill from outside
# always meets it running; generation 2 ends once each of its workers committed a result (the
# deadline only bounds a run that goes wrong, within JOB_TIMEOUT_S).
LAUNCH_ARGS = f"--failure-schedule {SCHEDULE} --stop-after 1 --stop-from 2 --deadline 120"
OUTSIDE_VICTIM = 7  # a worker of master 5 on node b in generation 1 (active 0,1,3,4,5,6,7,8 after 0:2)
PLACEMENT = f"{NODE_A.name}:{TASKS_PER_NODE},{NODE_B.name}:{TASKS_PER_NODE}"
EXPECTED = {"final_generation": 2, "receipts": [{"generation": 1, "missing": [2]}, {"generation": 2,
            "missing": [OUTSIDE_VICTIM]}], "promoted": [8, 9], "surviving_hosts": 2}
JOB_TIMEOUT_S = 300.0
COMPARE_SCRIPT = provenance.source_root() / "docs" / "slurm" / "compare.sbatch"
# campaigns that stop by count: the window only bounds a cell that goes wrong
COMPARE_PROTOCOL = {"description": "the Slurm gate's study: cells as job steps, two at once",
                    "targets": {"tok": {"python": "tokenizer"}}, "reference": "seeds",
                    "systems": {"seeds": {"kind": "seeds"}, "fuzz": {"kind": "campaign", "launch": ["--stop-after", "1"]}},
                    "trials": 2, "min_trials": 2, "window_s": 120, "cores": 1, "seed": 5, "snapshots": 2}
RESUME_HINT = "the campaign is resumable in a new job"  # launch's note after a lost daemon (cli.launch_cmd)


def unavailable() -> str | None:
    """Why the gate cannot run here (None when it can)."""
    reason = unavailable_reason()
    if reason is not None:
        return reason
    missing = missing_tools()
    if missing:
        return f"needs {', '.join(missing)} (Debian: apt-get install {PACKAGES})"
    if not SCRIPT.is_file():
        return f"needs the batch script {SCRIPT} (a checkout of the repository)"
    return None


def _run_dir(out: Path) -> Path:
    out = Path(out).absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError("--out", f"{out} exists and is not an empty directory; use a new one")
    out.mkdir(parents=True, exist_ok=True)
    return out


class Campaign:
    """One ``sbatch`` of the documented script for the state directory ``work/state``."""

    def __init__(self, cluster: SlurmCluster, work: Path, resume: bool = False):
        self.cluster, self.work, self.resume = cluster, work, resume
        self.state = StateDir(work / "state")
        work.mkdir(parents=True, exist_ok=True)
        self.output = work / ("job-resumed.out" if resume else "job.out")
        variables = {"STATE_DIR": str(self.state.root), "PYTHON": sys.executable,
                     "LAUNCH_ARGS": LAUNCH_ARGS, "RESUME": "1" if resume else "0"}
        self.submitted = time.time()
        self.job_id = cluster.submit(SCRIPT, [f"--nodes={len(NODES)}", f"--ntasks-per-node={TASKS_PER_NODE}",
                                              f"--output={self.output}", f"--chdir={work}"], variables)
        self.fields: dict[str, str] = {}

    def running(self) -> bool:
        return self.cluster.job(self.job_id).get("JobState") in ("PENDING", "CONFIGURING", "RUNNING")

    def wait_generation(self, generation: int) -> float:
        """Wait until every rank of ``generation`` has started its work while the job runs.

        That is each rank's ``generation-start``, logged after the re-split and its agreement: a
        rank that dies while the others are still inside ``MPI_Comm_split`` meets the Open MPI 5.0.11
        defect of ``docs/limits.md`` (survivors segfault in ``ompi_comm_revoke_local``), which the
        runtime's own injections avoid the same way."""
        snapshots = SnapshotStore(self.state.membership, self.state.modes.snapshot)
        receipt = snapshots.receipt_path(generation)

        def started() -> bool:
            if not receipt.exists():
                return False
            membership = snapshots.load(generation)
            ranks = {e["rank"] for e in read_events(self.state.logs, Event.GENERATION_START)
                     if e.get("generation") == generation}
            return ranks >= set(membership.active) | set(membership.spares)

        when = wait_for(lambda: started() or not self.running(), JOB_TIMEOUT_S, f"generation {generation}")
        if not started():
            raise CheckFailed(f"job {self.job_id} ended before generation {generation} started:\n{self.tail()}")
        return when

    def finish(self) -> dict:
        self.fields = self.cluster.wait_job(self.job_id, JOB_TIMEOUT_S)
        return {"job_id": self.job_id, "state": self.fields.get("JobState"), "exit_code": self.fields.get("ExitCode"),
                "nodes": self.fields.get("NodeList"), "seconds": round(time.time() - self.submitted, 3),
                "output": self.output.name}

    def tail(self, lines: int = 30) -> str:
        text = self.output.read_text(errors="replace") if self.output.exists() else "(no job output)"
        return "\n".join(text.splitlines()[-lines:])


def _oracle_facts(state: Path) -> dict:
    """The oracle's verdict on ``state`` and how the ranks ended the campaign (``outcome.json``)."""
    verdict = judge(state)
    keys = ("passed", "result_sha256", "final_generation", "receipts", "promoted", "final_active", "masters",
            "workers", "surviving_hosts", "surviving_host_names", "problems", "notes")
    outcome = StateDir(state).outcome
    return {**{k: verdict.get(k) for k in keys},
            "outcome": json.loads(outcome.read_text())["status"] if outcome.exists() else None}


def _check_campaign(name: str, job: dict, oracle: dict, allocations: list[dict], resumes: list[bool]) -> list[str]:
    problems = []
    if job["exit_code"] != "0:0":
        problems.append(f"{name}: job {job['job_id']} ended {job['state']} with exit code {job['exit_code']}")
    if not oracle["passed"]:
        problems += [f"{name}: oracle: {p}" for p in oracle["problems"] or ["failed"]]
    if oracle["surviving_hosts"] != 2:
        problems.append(f"{name}: {oracle['surviving_hosts']} surviving nodes, not 2")
    if oracle["outcome"] != "budget-reached":
        problems.append(f"{name}: the campaign ended {oracle['outcome']!r}, not by its budget (budget-reached)")
    if [a.get("resume") for a in allocations] != resumes or any(a.get("placement") != PLACEMENT for a in allocations):
        problems.append(f"{name}: slurm.json records {allocations}; expected {len(resumes)} job(s) placed {PLACEMENT}")
    return problems


def _rank_scenario(cluster: SlurmCluster, out: Path, echo) -> tuple[dict, list[str]]:
    """The reference run under Slurm: a scheduled death, then a SIGKILL from outside."""
    campaign = Campaign(cluster, out)
    echo(f"campaign: sbatch job {campaign.job_id} ({SCRIPT.name}, schedule {SCHEDULE}); kill -9 of rank "
         f"{OUTSIDE_VICTIM} on {NODE_B.name} once every rank has started generation 1")
    campaign.wait_generation(1)
    pid = kill_rank(NODE_B.namespace, OUTSIDE_VICTIM)
    killed_at = time.time()
    echo(f"campaign: killed rank {OUTSIDE_VICTIM} (pid {pid}) on {NODE_B.name} with SIGKILL")
    receipt = SnapshotStore(campaign.state.membership, campaign.state.modes.snapshot).receipt_path(2)
    job = campaign.finish()
    oracle = _oracle_facts(campaign.state.root)
    committed = mtime(receipt)
    facts = {"job": job, "oracle": oracle, "killed": {"rank": OUTSIDE_VICTIM, "node": NODE_B.name, "pid": pid},
             "kill_to_receipt_s": round(committed - killed_at, 3) if committed else None,
             "allocations": read_allocations(campaign.state)}
    problems = _check_campaign("campaign", job, oracle, facts["allocations"], [False])
    for key, want in EXPECTED.items():
        if oracle.get(key) != want:
            problems.append(f"campaign: {key} is {oracle.get(key)!r}, expected {want!r}")
    hosts = rank_hosts(campaign.state.root)
    spec = parse_hosts(PLACEMENT)
    if hosts != [host_of_rank(spec, rank) for rank in range(len(hosts))] or len(hosts) != len(NODES) * TASKS_PER_NODE:
        problems.append(f"campaign: the ranks ran on {hosts}, not as {PLACEMENT} places them")
    facts["rank_hosts"] = hosts
    if problems:
        problems.append(f"campaign: job output:\n{campaign.tail()}")
    echo(f"campaign: job {job['job_id']} {job['state']} {job['exit_code']} after {job['seconds']:.1f} s; oracle "
         f"{'PASS' if oracle['passed'] else 'FAIL'}, receipts {oracle['receipts']}, surviving nodes "
         f"{oracle['surviving_host_names']}; kill to receipt {facts['kill_to_receipt_s']} s")
    return facts, problems


def _daemon_scenario(cluster: SlurmCluster, out: Path, echo) -> tuple[dict, list[str]]:
    """A node's PRRTE daemon lost: a clean stop, then a resume in a new job."""
    work = out / "daemon-loss"
    campaign = Campaign(cluster, work)
    echo(f"daemon loss: sbatch job {campaign.job_id}; scancel --signal=KILL {campaign.job_id}.0 (node b's prted) "
         "once generation 1 has started")
    campaign.wait_generation(1)
    killed_at = time.time()
    cluster.client(["scancel", "--signal=KILL", f"{campaign.job_id}.0"], check=False)
    job = campaign.finish()
    output = campaign.output.read_text(errors="replace") if campaign.output.exists() else ""
    oracle = _oracle_facts(campaign.state.root)
    stopped = {"job": job, "oracle": oracle, "stop_s": round(time.time() - killed_at, 3),
               "lost_daemon_reported": lost_daemon(output.encode()),
               "resume_hint": RESUME_HINT in output,
               "outcome_written": campaign.state.outcome.exists()}
    problems = []
    if job["exit_code"] == "0:0" or oracle["passed"]:
        problems.append(f"daemon loss: the job passed ({job['exit_code']}, oracle {oracle['passed']}) although its "
                        "daemon was killed")
    if not stopped["lost_daemon_reported"]:
        problems.append(f"daemon loss: the job output says none of {LOST_DAEMON!r}")
    if not stopped["resume_hint"]:
        problems.append(f"daemon loss: launch did not say {RESUME_HINT!r}")
    if stopped["outcome_written"]:
        problems.append("daemon loss: an outcome was written for a job that lost a daemon")
    echo(f"daemon loss: job {job['job_id']} {job['state']} {job['exit_code']} {stopped['stop_s']:.1f} s after the "
         f"kill; oracle {'PASS' if oracle['passed'] else 'FAIL'} (expected FAIL); now RESUME=1 in a new job")
    resumed = Campaign(cluster, work, resume=True)
    again = resumed.finish()
    oracle_again = _oracle_facts(resumed.state.root)
    allocations = read_allocations(resumed.state)
    problems += _check_campaign("daemon loss, resumed", again, oracle_again, allocations, [False, True])
    if not any("resumed the campaign" in note for note in oracle_again["notes"] or []):
        problems.append(f"daemon loss, resumed: the oracle saw no resume ({oracle_again['notes']})")
    if problems:
        problems.append(f"daemon loss: job outputs:\n{campaign.tail()}\n--- resumed:\n{resumed.tail()}")
    echo(f"daemon loss, resumed: job {again['job_id']} {again['state']} {again['exit_code']} after "
         f"{again['seconds']:.1f} s; oracle {'PASS' if oracle_again['passed'] else 'FAIL'}, receipts "
         f"{oracle_again['receipts']}, surviving nodes {oracle_again['surviving_host_names']}")
    return {"stopped": stopped, "resumed": {"job": again, "oracle": oracle_again, "allocations": allocations}}, problems


def _notebook_scenario(cluster: SlurmCluster, out: Path, echo) -> tuple[dict, list[str]]:
    """``notebooks/f447_run.ipynb`` with ``engine_launcher="slurm"``: its kernel and controller on node
    a, as on a login node, and its engines an sbatch job over both nodes running ``mpiexec --with-ft ulfm``."""
    run = out / "notebook"
    run.mkdir()
    notebook = provenance.source_root() / "notebooks" / "f447_run.ipynb"
    params = {"run_dir": str(run), "failure_schedule": SCHEDULE, "minimum_hosts": "2", "engine_launcher": "slurm",
              "sbatch_options": f"--nodes={len(NODES)} --ntasks-per-node={TASKS_PER_NODE}",
              "controller_ip": NODE_A.address}
    command = [str(Path(sys.executable).parent / "papermill"), "--log-level", "WARNING", str(notebook),
               str(run / NOTEBOOK_NAME), *(word for name, value in params.items() for word in ("-p", name, value))]
    echo(f"notebook: papermill on {NODE_A.name}, engines submitted with sbatch ({params['sbatch_options']})")
    started = time.monotonic()
    done = cluster.client(command, check=False, timeout=JOB_TIMEOUT_S + 120)
    seconds = time.monotonic() - started
    oracle = _oracle_facts(run / "state") if StateDir(run / "state").policy.exists() else {"passed": False}
    engines = json.loads((run / "engines.json").read_text()) if (run / "engines.json").exists() else {}
    facts = {"returncode": done.returncode, "seconds": round(seconds, 3), "oracle": oracle,
             "engines_as_scheduled": engines.get("as_scheduled"), "died": engines.get("died")}
    problems = []
    if done.returncode != 0:
        problems.append(f"notebook: papermill exited {done.returncode}:\n{(done.stderr or done.stdout)[-3000:]}")
    if not oracle.get("passed") or oracle.get("surviving_hosts") != 2:
        problems.append(f"notebook: oracle {oracle.get('passed')}, surviving nodes {oracle.get('surviving_host_names')}")
    echo(f"notebook: papermill exit {done.returncode} after {seconds:.1f} s; oracle "
         f"{'PASS' if oracle.get('passed') else 'FAIL'}, surviving nodes {oracle.get('surviving_host_names')}, "
         f"engines died {facts['died']}")
    return facts, problems


def _compare_scenario(cluster: SlurmCluster, out: Path, echo) -> tuple[dict, list[str]]:
    """``docs/slurm/compare.sbatch``: a comparison study whose cells run as job steps, two at once (one
    CPU each, on one task slot of each node); each cell must record its own step of the job."""
    from ..compare.audit import verify_compare
    from ..evidence.seal import seal

    work = out / "compare"
    work.mkdir()
    protocol, study = work / "protocol.json", work / "study"
    protocol.write_text(json.dumps(COMPARE_PROTOCOL))
    variables = {"PROTOCOL": str(protocol), "STUDY": str(study), "PYTHON": sys.executable, "PARALLEL": "2"}
    job_id = cluster.submit(COMPARE_SCRIPT, [f"--nodes={len(NODES)}", "--ntasks-per-node=1",
                                             f"--output={work / 'job.out'}", f"--chdir={work}"], variables)
    echo(f"compare: sbatch job {job_id}, 4 cells, 2 at once as job steps")
    fields = cluster.wait_job(job_id, JOB_TIMEOUT_S)
    problems = []
    report = json.loads((study / "report.json").read_text()) if (study / "report.json").is_file() else {}
    results = [json.loads(path.read_text()) for path in sorted(study.glob("cells/*/result.json"))]
    steps = [r.get("placement", {}) for r in results]
    facts = {"job_id": job_id, "state": fields.get("JobState"), "exit_code": fields.get("ExitCode"),
             "cells_complete": len(report.get("cells_complete", [])), "cells_failed": report.get("cells_failed"),
             "placements": steps}
    if fields.get("JobState") != "COMPLETED" or not report.get("complete") or report.get("cells_failed"):
        tail = (work / "job.out").read_text(errors="replace")[-3000:] if (work / "job.out").exists() else ""
        problems.append(f"compare: job {job_id} {fields.get('JobState')}, report {report.get('summary')}:\n{tail}")
    if len(steps) != 4 or any(p.get("slurm_job") != job_id for p in steps) or \
            len({p.get("slurm_step") for p in steps}) != len(steps) or None in {p.get("slurm_step") for p in steps}:
        problems.append(f"compare: the cells did not each run as a step of job {job_id}: {steps}")
    if study.is_dir() and not problems:
        seal(study)
        verified = verify_compare(study)
        facts["verify"] = verified["passed"]
        problems += [f"compare: verify: {p}" for p in verified["problems"]]
    echo(f"compare: job {fields.get('JobState')}, {facts['cells_complete']} cells complete, steps "
         f"{[p.get('slurm_step') for p in steps]} on {sorted({str(p.get('host')) for p in steps})}")
    return facts, problems


def run_gate(out: Path, echo=print, notebook: bool = True) -> dict:
    """Run the gate into the new run directory ``out``; returns gate.json's content (raises on failure)."""
    reason = unavailable()
    if reason is not None:
        raise ConfigError("slurm gate", reason)
    started = time.monotonic()
    out = _run_dir(out)
    record = provenance.capture(REFERENCE["executor"], REFERENCE["target"])
    gate: dict = {"format": GATE_FORMAT, "script": str(SCRIPT), "subnet": SUBNET, "placement": PLACEMENT,
                  "schedule": SCHEDULE, "expected": EXPECTED,
                  "nodes": [{"name": h.name, "namespace": h.namespace, "address": h.address} for h in NODES]}
    problems: list[str] = []
    def clear_earlier() -> None:
        for line in kill_leftovers(RUNTIME):
            echo(f"earlier run: killed {line}")

    with Session(NODES, echo, runtime=RUNTIME, lock=LOCK, with_agent=False, clear_earlier=clear_earlier) as session:
        cluster = SlurmCluster(RUNTIME, NODES, TASKS_PER_NODE, echo)
        try:
            gate["cluster_start_s"] = round(cluster.start(), 3)
            provenance.verify_live(record, "slurm campaigns")
            gate["campaign"], found = _rank_scenario(cluster, out, echo)
            problems += found
            gate["daemon_loss"], found = _daemon_scenario(cluster, out, echo)
            problems += found
            gate["compare"], found = _compare_scenario(cluster, out, echo)
            problems += found
            if notebook:
                gate["notebook"], found = _notebook_scenario(cluster, out, echo)
                problems += found
        finally:
            gate["daemons_stopped"] = cluster.stop()
            gate["killed_leftovers"] = kill_leftovers(RUNTIME)
    gate["teardown"] = session.report
    left = session.report["left"] + [f"process {pid}: {command}" for pid, command in leftover_processes(RUNTIME)]
    problems += [f"teardown left {line}" for line in left]
    if StateDir(out / "state").policy.exists():  # the policy launch wrote inside the job (its lease fitted there)
        record["policy_sha256"] = read_policy(StateDir(out / "state"))[1]
    provenance.write(out / "provenance.json", record)
    if StateDir(out / "state").verdict.exists():
        (out / "oracle.json").write_bytes(StateDir(out / "state").verdict.read_bytes())
    gate["seconds"] = round(time.monotonic() - started, 3)
    return conclude_gate(out, gate, problems, "slurm", lambda _gate: f"campaign and resumed campaign on {len(NODES)} "
                         "Slurm nodes, oracle passing", echo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcc_ulfm.gates.slurm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="new (or empty) run directory")
    parser.add_argument("--no-notebook", action="store_true", help="leave out the notebook on sbatch-started engines")
    args = parser.parse_args(argv)
    try:
        run_gate(Path(args.out), notebook=not args.no_notebook)
    except SymccUlfmError as exc:
        print(f"symcc-ulfm slurm: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("symcc-ulfm slurm: interrupted (daemons and namespaces torn down)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
