"""The message protocol, one suite over both transports (``scenarios``).

Every scenario runs over the loopback transport in this process (test ids ``loopback-*``, in
milliseconds of real time), and over MPI in one ``mpiexec --with-ft ulfm`` job (``mpi_job.py``)
that plays them all in turn (ids ``mpi-*``); the same checks judge both. A peer's failure is a
loopback test only: under MPI it is the recovery tier's question (``tests/mpi``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scenarios import (
    MASTER,
    SCENARIOS,
    SEED,
    W1,
    LoopbackBench,
    Scenario,
    Stage,
    judge,
    ready,
    result,
    run_loopback,
    sha,
    wal_state,
)

from symcc_ulfm.errors import ProtocolError
from symcc_ulfm.runtime.transport import DATA, SENTINEL, PeerFailure

BY_NAME = {s.name: s for s in SCENARIOS}
HERE = Path(__file__).resolve().parent


def test_the_suite_has_the_scenarios_it_promises():
    assert len(SCENARIOS) >= 20 and len(BY_NAME) == len(SCENARIOS)
    real = {name for name, s in BY_NAME.items() if any("worker" in stage.roles.values() for stage in s.stages)}
    assert len(real) >= 8  # the real worker, not only scripted ones


@pytest.fixture(scope="module")
def mpi_run(tmp_path_factory):
    """Every scenario, played once under mpiexec; the root of their state directories."""
    from symcc_ulfm.launch.mpiexec import find_mpiexec, mpi_flags

    root = tmp_path_factory.mktemp("protocol-mpi")
    command = [find_mpiexec(), *mpi_flags(True), "-n", "6", sys.executable, str(HERE / "mpi_job.py"), str(root)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=job_environment_of())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return root


def job_environment_of() -> dict:
    from symcc_ulfm.core.modes import FileModes
    from symcc_ulfm.launch.mpiexec import job_environment

    return job_environment(FileModes())


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_loopback(name, tmp_path):
    observed = run_loopback(tmp_path / name, BY_NAME[name])
    judge(BY_NAME[name], tmp_path / name, observed)


@pytest.mark.mpi
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_mpi(name, mpi_run):
    root = mpi_run / name
    observed = {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in root.glob("observed-*.json")}
    judge(BY_NAME[name], root, observed)


def test_loopback_a_failed_worker_ends_the_generation_after_counting_what_is_durable(tmp_path):
    scenario = Scenario("failure", (Stage({MASTER: "master"}),), lambda root, observed: None)
    bench = LoopbackBench(tmp_path / "state", scenario)
    bench.open(scenario.stages[0])
    driver = bench.masters[MASTER]
    ready(bench)
    work = bench.expect(W1, MASTER, DATA)
    bench.transport(W1).send(MASTER, DATA, result(bench, work, [b"left-behind"]), "RESULT")
    for _ in range(50):  # committed, published and marked done: counted after one more barrier
        bench.pump()
    bench.hub.fail(W1)
    with pytest.raises(PeerFailure):
        driver.run()
    driver.close()
    assert wal_state(bench.root, SEED)["state"] == "done"
    assert driver.state.frontier.totals["analyzed"] == 1
    assert sha(b"left-behind") in wal_state(bench.root, SEED)["done"]["claimed"]


def test_loopback_refuses_what_the_mpi_transport_refuses():
    from symcc_ulfm.runtime.loopback import Loopback

    hub = Loopback(range(6), 4096)
    worker, master = hub.endpoint(W1), hub.endpoint(MASTER)
    worker.send(MASTER, DATA, b"x" * 5000, "oversized")
    with pytest.raises(ProtocolError, match="larger than 4096"):
        master.receive(W1, DATA, "data")
    worker.send(MASTER, SENTINEL, b"x", "on the sentinel")
    with pytest.raises(ProtocolError, match="failure-sentinel"):
        master.receive(W1, SENTINEL, "sentinel")
    hub.fail(W1, announce=False)
    with pytest.raises(PeerFailure):
        master.receive(W1, DATA, "data")
    with pytest.raises(PeerFailure):
        master.send(W1, DATA, b"{}", "WORK")
    master.check()  # not announced: only who talks to the dead rank learns it
    hub.fail(W1)
    with pytest.raises(PeerFailure):
        master.check()
