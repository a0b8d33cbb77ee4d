"""A campaign cell whose worker failed every lease is a failed cell, not a measurement.

The C study's part 2 (``evidence/compare-hybrid-2-20261207T2354Z.tar.xz``) is the real case: in
each hybrid cell on hdr_opcode the ``afl`` worker (rank 1) had afl-fuzz abort at every start (the
CmpLog build's map was larger than ``AFL_MAP_SIZE``, a defect fixed since), while the campaign
exited 0 and its oracle passed; on tlv_records every worker ran. The cells' states are taken from
the sealed archive as they are.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from symcc_ulfm.compare.systems.campaign_system import summary
from symcc_ulfm.evidence.timeline import failed_workers
from symcc_ulfm.launch.json_child import Launched

ARCHIVE = Path(__file__).resolve().parents[2] / "evidence" / "compare-hybrid-2-20261207T2354Z.tar.xz"


def _states(tmp_path: Path, targets: tuple[str, ...]) -> list[Path]:
    cells = ARCHIVE.name.removesuffix(".tar.xz") + "/cells/"
    wanted = [f"{cells}0.{target}.hybrid/system/state" for target in targets]
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        tar.extractall(tmp_path, [m for m in tar.getmembers() if any(m.name.startswith(w + "/") for w in wanted)])
    return [tmp_path / w for w in wanted]


def test_a_worker_whose_every_lease_failed_makes_the_cell_fail(tmp_path):
    broken, whole = _states(tmp_path, ("hdr_opcode", "tlv_records"))
    failed = failed_workers(broken)
    assert list(failed) == [1] and failed[1]["kinds"] == ["afl"] and failed[1]["leases"] == 147
    assert "afl-fuzz exited" in failed[1]["error"]
    assert failed_workers(whole) == {}
    passed = Launched(0, {"passed": True}, "", "")
    problems = summary(passed, broken, True)["problems"]
    assert len(problems) == 1 and problems[0].startswith("worker 1 (afl): all 147 of its leases ended in an error")
    notes = summary(passed, whole, True)
    assert notes["problems"] == [] and notes["handoffs"]["to_analysis"]["n"] > 0
