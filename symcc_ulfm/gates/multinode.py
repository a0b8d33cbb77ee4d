"""``make multinode``: the cross-node gate on two network-namespace hosts (``docs/multinode.md``).

``python -m symcc_ulfm.gates.multinode --out DIR [--wrong-mode-check]``

Host A (root, 9 slots) runs ``mpiexec``; host B (uid 4242, 1 slot) runs its ``prted`` and
stable rank 9, started through the ssh-like agent. The reference campaign (``0:2,1:3``,
``--minimum-hosts 2``) must pass the oracle with 2 surviving hosts and the single-host
membership outcome, a host-B rank must have read a corpus object back (its digest is
recomputed here), and host B's files must belong to uid 4242. ``--wrong-mode-check`` first
shows that the default 0600 state mode fails closed, quickly and with a message naming
``SYMCC_ULFM_SNAPSHOT_FILE_MODE``. The run directory is sealed and verified.

Exit codes (``errors.py``): 0 passed, 1 a check failed, 2 cannot run here (not root, no
``ip netns``, the host-B user cannot reach the checkout) or a bad ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..core.modes import FileModes, format_mode
from ..core.policy import Policy, build_policy
from ..core.reference import REFERENCE
from ..errors import ConfigError, SymccUlfmError
from ..evidence import provenance
from ..launch.launcher import Campaign, Launch, Mpiexec, plan
from .gate_file import conclude_gate
from .netns.access import ensure_access
from .netns.agent import prrte_arguments
from .netns.checks import EXPECTED, check_oracle, check_placement, check_remote_reads, check_wrong_mode
from .netns.session import RUNTIME, Session
from .netns.topology import SUBNET, Host, unavailable_reason

GATE_FORMAT = "symcc-ulfm-multinode-gate/1"
SHARED_GID = 4242  # the group shared by root (host A) and host B's user; no /etc/group entry needed
HOST_A = Host("symcc-node-a", "symcc-ulfm-a", "sulfm-a", "198.51.100.1")
HOST_B = Host("symcc-node-b", "symcc-ulfm-b", "sulfm-b", "198.51.100.2", 4242, SHARED_GID, RUNTIME / "home-b")
HOSTS = (HOST_A, HOST_B)
# The reference campaign on two hosts, ended by a budget by count instead of its 15-s deadline: the
# generation the schedule leads to ends only once each of its workers, host B's promoted spare 9
# among them, has committed a result, however loaded the machine (the deadline only bounds a run
# that goes wrong).
GATE = {**REFERENCE, "hosts": f"{HOST_A.name}:9,{HOST_B.name}:1", "minimum_hosts": 2, "stop_after": 1,
        "deadline_s": 120.0}
# State 0660: host-B ranks create their log and staging files in the group-shared (2770)
# directories, and a host-B rank promoted to master writes WAL records, claims and QueryStores.
# Corpus 0664: corpus directories follow the file mode (0775), so a host-B master can publish;
# objects stay world-readable (the corpus is public) and their names are their SHA-256.
SHARED_MODES = FileModes(snapshot=0o660, corpus=0o664)
WRONG_MODE_DIR = "wrong-mode-state"


def _run_dir(out: Path) -> Path:
    out = Path(out).absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError("--out", f"{out} exists and is not an empty directory; use a new one")
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o755)
    return out


def _shared_state_dir(path: Path) -> Path:
    """The state directory both users work in: root:4242, 2770 (set-group-ID keeps the group below)."""
    path.mkdir()
    os.chown(path, 0, SHARED_GID)
    os.chmod(path, 0o2770)
    return path


def _planned(policy: Policy, modes: FileModes, echo) -> Launch:
    """The gate's campaign planned as ``launch`` plans one (probe, lease), its job run from host A."""
    return plan(Mpiexec(echo=echo, command_prefix=HOST_A.exec_prefix()), modes, policy)


def _launch(launch: Launch, path: Path, session: Session, echo) -> Campaign:
    """Run the planned campaign in the shared state directory ``path`` with host B's ranks started
    through the session's agent."""
    state_dir = _shared_state_dir(path)
    session.granted += ensure_access(HOST_B.user_prefix(), state_dir, HOST_B.uid, HOST_B.gid, session.grants)
    launch.runner.extra_args = prrte_arguments(session.agent, SUBNET)
    launch.prepare(state_dir)
    campaign = launch.run()
    job = campaign.job
    echo(f"job: exit {job.returncode} after {job.seconds:.1f} s" + (" (timed out, killed)" if job.timed_out else ""))
    return campaign


def _wrong_mode(out: Path, session: Session, echo) -> tuple[dict, list[str]]:
    """The default snapshot mode 0600 with a host-B user: must fail closed, quickly, with a clear message."""
    launch = _planned(build_policy(**{**GATE, "executor": "simulate", "deadline_s": 5.0}), FileModes(), echo)
    echo(f"wrong-mode check: default {format_mode(FileModes().snapshot)} state files, simulate executor")
    campaign = _launch(launch, out / WRONG_MODE_DIR, session, echo)
    facts, problems = check_wrong_mode(campaign.job, campaign.state.root, campaign.verdict,
                                       launch.policy.timeouts.startup_s)
    echo(f"wrong-mode check: {'as expected' if not problems else 'NOT as expected'}: {facts['message']}")
    return facts, problems


def run_gate(out: Path, wrong_mode_check: bool = False, echo=print) -> dict:
    """Run the gate into the new run directory ``out``; returns gate.json's content (raises on failure)."""
    reason = unavailable_reason()
    if reason is not None:
        raise ConfigError("namespace hosts", reason)
    started = time.monotonic()
    out = _run_dir(out)
    launch = _planned(build_policy(**GATE), SHARED_MODES, echo)
    policy = launch.policy
    record = provenance.capture_policy(policy)
    problems: list[str] = []
    gate: dict = {"format": GATE_FORMAT, "policy_sha256": policy.sha256, "hosts_spec": GATE["hosts"],
                  "minimum_hosts": policy.minimum_hosts, "subnet": SUBNET, "expected": EXPECTED,
                  "hosts": [{"name": h.name, "namespace": h.namespace, "address": h.address, "uid": h.uid,
                             "gid": h.gid} for h in HOSTS],
                  "modes": SHARED_MODES.as_env(), "state_dir": {"owner": f"0:{SHARED_GID}", "mode": "2770"},
                  "wrong_mode": None}
    with Session(HOSTS, echo) as session:
        if wrong_mode_check:
            gate["wrong_mode"], found = _wrong_mode(out, session, echo)
            problems += found
        echo(f"reference campaign: {GATE['hosts']}, minimum hosts 2, modes {SHARED_MODES.as_env()}")
        provenance.verify_live(record, "multinode campaign")
        campaign = _launch(launch, out / "state", session, echo)
    state, job, verdict = campaign.state, campaign.job, campaign.verdict
    gate.update(command=job.command, job={"returncode": job.returncode, "seconds": round(job.seconds, 3),
                                          "timed_out": job.timed_out},
                access_grants=session.granted, teardown=session.report)
    for key, check in (("oracle", lambda: check_oracle(verdict, state.root)),
                       ("ranks", lambda: check_placement(state.root, GATE["hosts"], HOSTS)),
                       ("remote_reads", lambda: check_remote_reads(state.root, HOST_B))):
        gate[key], found = check()
        problems += found
    problems += [f"teardown left {line}" for line in session.report["left"]]
    provenance.write(out / "provenance.json", record)
    (out / "oracle.json").write_bytes(state.verdict.read_bytes())
    gate["seconds"] = round(time.monotonic() - started, 3)
    for read in gate.get("remote_reads", []):
        echo(f"host B: rank {read['rank']} read {read['object']} in generation {read['generation']}, "
             f"recomputed SHA-256 {read['recomputed_sha256']}")
    return conclude_gate(out, gate, problems, "multinode", _passed, echo)


def _passed(gate: dict) -> str:
    oracle = gate["oracle"]
    return (f"surviving hosts {oracle['surviving_host_names']}, generation {oracle['final_generation']}, promoted "
            f"{oracle['promoted']}, active {oracle['final_active']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcc_ulfm.gates.multinode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="new (or empty) run directory")
    parser.add_argument("--wrong-mode-check", action="store_true",
                        help="first show that the default 0600 state mode fails closed with a host-B user")
    args = parser.parse_args(argv)
    try:
        run_gate(Path(args.out), args.wrong_mode_check)
    except SymccUlfmError as exc:
        print(f"symcc-ulfm multinode: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("symcc-ulfm multinode: interrupted (namespaces torn down)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
