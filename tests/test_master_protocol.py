"""The master's protocol, one suite over both transports (``protocol_scenarios``).

Every scenario runs over the loopback transport in this process, and over MPI in one
``mpiexec --with-ft ulfm`` job (``protocol_mpi.py``) that plays them all in turn; the same
checks judge both. A peer failure is a loopback scenario only: under MPI it is the recovery
tier's question (``test_runtime_mpi``, ``test_reliability_mpi``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from protocol_scenarios import (
    MASTER,
    SCENARIOS,
    SEED,
    WORKER,
    LoopbackBench,
    Scenario,
    ready,
    result,
    run_loopback,
    sha,
    wal_state,
)

from symcc_ulfm.errors import ProtocolError
from symcc_ulfm.runtime.transport import DATA, SENTINEL, PeerFailure

BY_NAME = {s.name: s for s in SCENARIOS}
TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def mpi_run(tmp_path_factory):
    """Every scenario, played once under mpiexec; the root of their state directories."""
    from symcc_ulfm.core.modes import FileModes
    from symcc_ulfm.launch.mpiexec import find_mpiexec, job_environment, mpi_flags

    root = tmp_path_factory.mktemp("protocol-mpi")
    command = [find_mpiexec(), *mpi_flags(True), "-n", "4", sys.executable, str(TESTS_DIR / "protocol_mpi.py"),
               str(root)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=job_environment(FileModes()))
    assert done.returncode == 0, done.stdout + done.stderr
    return root


@pytest.mark.parametrize("transport", ["loopback", pytest.param("mpi", marks=pytest.mark.mpi)])
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_protocol(name, transport, tmp_path, request):
    scenario = BY_NAME[name]
    if transport == "loopback":
        root = tmp_path / name
        observed, _ = run_loopback(root, scenario)
    else:
        root = request.getfixturevalue("mpi_run") / name
        observed = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in root.glob("observed-*.json")}
    scenario.check(root, observed)


def test_loopback_a_failed_worker_ends_the_generation_after_counting_what_is_durable(tmp_path):
    bench = LoopbackBench(tmp_path / "state", Scenario("failure", (), lambda root, observed: None))
    ready(bench)
    work = bench.expect(WORKER, MASTER, DATA)
    bench.transport(WORKER).send(MASTER, DATA, result(bench, work, [b"left-behind"]), "RESULT")
    for _ in range(50):  # committed, published and marked done: counted after one more barrier
        bench.pump()
    bench.hub.fail(WORKER)
    with pytest.raises(PeerFailure):
        bench.driver.run()
    bench.driver.close()
    assert wal_state(bench.root, SEED)["state"] == "done"
    assert bench.driver.state.frontier.totals["analyzed"] == 1
    assert sha(b"left-behind") in wal_state(bench.root, SEED)["done"]["claimed"]


def test_loopback_refuses_what_the_mpi_transport_refuses(tmp_path):
    bench = LoopbackBench(tmp_path / "state", BY_NAME["commit"])
    worker = bench.transport(WORKER)
    worker.send(MASTER, DATA, b"x" * 5000, "oversized")
    with pytest.raises(ProtocolError, match="larger than 4096"):
        bench.transport(MASTER).receive(WORKER, DATA, "data")
    worker.send(MASTER, SENTINEL, b"x", "on the sentinel")
    with pytest.raises(ProtocolError, match="failure-sentinel"):
        bench.transport(MASTER).receive(WORKER, SENTINEL, "sentinel")
    bench.hub.fail(WORKER, announce=False)
    master = bench.transport(MASTER)
    with pytest.raises(PeerFailure):
        master.receive(WORKER, DATA, "data")
    with pytest.raises(PeerFailure):
        master.send(WORKER, DATA, b"{}", "WORK")
    master.check()  # not announced: only who talks to the dead rank learns it
    bench.hub.fail(WORKER)
    with pytest.raises(PeerFailure):
        master.check()
