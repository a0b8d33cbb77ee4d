"""The Slurm gate (``make slurm``): munge, slurmctld and two slurmd on namespace nodes, the
documented sbatch script, a rank killed by the schedule and one from outside, a lost PRRTE
daemon as a clean stop resumed in a new job, and the notebook on sbatch-started engines.

It needs root, ``ip netns`` and Debian's ``slurm-wlm`` and ``munge``; it is skipped with the
reason otherwise.
"""

from __future__ import annotations

import pytest
from helpers.gates import run_gate

from symcc_ulfm.evidence.verify import verify
from symcc_ulfm.gates.netns.topology import leftovers
from symcc_ulfm.gates.slurm import EXPECTED, NODES, RUNTIME, unavailable
from symcc_ulfm.gates.slurmd.cluster import leftover_processes

pytestmark = pytest.mark.host_wide  # network namespaces: one at a time under xdist

REASON = unavailable()


@pytest.mark.slurm
@pytest.mark.mpi
@pytest.mark.skipif(REASON is not None, reason=f"slurm gate: {REASON}")
def test_sbatch_campaigns_survive_a_killed_rank_and_resume_after_a_lost_daemon_and_a_study_runs_as_steps(tmp_path):
    out = tmp_path / "run"
    gate = run_gate("slurm", out, timeout=900)
    campaign = gate["campaign"]
    assert campaign["oracle"]["passed"] and campaign["oracle"]["receipts"] == EXPECTED["receipts"]
    assert campaign["oracle"]["surviving_hosts"] == 2
    assert gate["daemon_loss"]["resumed"]["oracle"]["passed"]
    assert gate["notebook"]["oracle"]["passed"]
    compare = gate["compare"]  # a comparison study's cells, each its own job step
    assert compare["state"] == "COMPLETED" and compare["cells_complete"] == 4 and compare["verify"]
    assert len({p["slurm_step"] for p in compare["placements"]}) == 4
    assert verify(out)["passed"]
    assert leftover_processes(RUNTIME) == [] and leftovers(NODES, settle_s=0) == []
    assert not RUNTIME.exists()
