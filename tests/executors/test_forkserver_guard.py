"""A target cannot reach its sandbox's fork server, and a fork server that stops answering is
replaced, the input that ran last a finding (``tests/helpers/hostile_sandbox.py``'s attacks).

Real sandboxes: isolated as a campaign runs them (user, mount and PID namespaces, the fork server
PID 1 of its namespace) and without isolation (``--isolation none``), where the fork server is a
plain child of this process that a target can stop.
"""

from __future__ import annotations

import os
import uuid

import pytest
from helpers.hostile_sandbox import SEED, write_target

from symcc_ulfm.executors.sandbox import isolation
from symcc_ulfm.executors.sandbox.contained import SandboxedExecutor

pytestmark = pytest.mark.skipif(isolation.unavailable() is not None, reason="no user namespaces here")


def _sandbox(tmp_path, attacks: str, isolated: bool) -> SandboxedExecutor:
    target = write_target(tmp_path, f"hostile-{uuid.uuid4().hex}", attacks)
    return SandboxedExecutor("concolic", target, {"exec_timeout_s": 2.0}, isolated=isolated)


# without isolation as root, /proc/PID/mem is the only one left open (CAP_SYS_PTRACE of the whole machine)
@pytest.mark.parametrize("isolated, attacks", [(True, "PLME"), (False, "PL" if os.geteuid() == 0 else "PLME")])
def test_the_fork_server_cannot_be_traced_limited_or_written_by_a_target_or_a_binary_it_runs(
        tmp_path, isolated, attacks):
    sandbox = _sandbox(tmp_path, attacks, isolated)
    try:
        assert sandbox.measure(SEED).outcome.kind == "ok"
        server = sandbox._proc.pid
        for attack in attacks:
            outcome = sandbox.measure(attack.encode() + SEED).outcome
            assert outcome.kind == "exception", (attack, outcome)
            if attack == "E":  # the executed process: each of the three refused
                assert all(f"{a} " in outcome.detail for a in "PLM"), outcome.detail
            else:
                assert "Operation not permitted" in outcome.detail or "Permission denied" in outcome.detail, outcome
        assert sandbox.deaths == 0 and sandbox._proc.pid == server and sandbox.server_lost() is None
        assert sandbox.measure(SEED).outcome.kind == "ok"
    finally:
        sandbox.close()


def test_a_fork_server_that_stops_answering_is_replaced_and_the_input_is_a_hang(tmp_path):
    # without isolation the fork server is not PID 1 of a namespace: SIGSTOP from its child stops it
    sandbox = _sandbox(tmp_path, "T", isolated=False)
    try:
        assert sandbox.measure(SEED).outcome.kind == "ok"
        server = sandbox._proc.pid
        result = sandbox.run(b"T" + SEED, mutate=False)
        [lost] = [f for f in result.findings if f.outcome.signature == "sandbox: the fork server stopped answering"]
        assert (lost.outcome.kind, lost.data) == ("hang", b"T" + SEED)
        with pytest.raises(ProcessLookupError):
            os.kill(server, 0)  # killed and reaped
        assert sandbox.measure(SEED).outcome.kind == "ok" and sandbox._proc.pid != server
    finally:
        sandbox.close()


@pytest.mark.parametrize("isolated", [True, False])
def test_a_fork_bomb_closed_standard_descriptors_and_fd_exhaustion_end_at_once_as_findings(tmp_path, isolated):
    sandbox = _sandbox(tmp_path, "NZDO", isolated)
    try:
        assert sandbox.measure(SEED).outcome.kind == "ok"
        # a pids cgroup of the sandbox where one can be made, else RLIMIT_NPROC (the kernel exempts root)
        if sandbox._pids is not None or (isolated and os.geteuid() != 0):
            for _ in range(2):  # and again with a new fork server (a new pids group)
                bomb = sandbox.measure(b"N" + SEED).outcome
                assert bomb.kind == "exception" and bomb.signature.startswith("BlockingIOError"), bomb
                sandbox.renew()
        for attack in "ZD":  # the child is replaced, the input a finding of its own
            outcome = sandbox.measure(attack.encode() + SEED).outcome
            assert (outcome.kind, outcome.signature) == ("crash", "sandbox: descriptors damaged"), (attack, outcome)
            assert sandbox.measure(SEED).outcome.kind == "ok"
        # 300 MiB written to stdout (/dev/null) and stderr (a pipe of which the parent keeps the last 16 KiB)
        assert sandbox.measure(b"O" + SEED).outcome.kind == "ok" and len(sandbox._stderr) <= 2 * 16384
    finally:
        sandbox.close()
