"""One small real campaign, turned into a sealed run directory once per test session.

The tests copy it (:func:`fresh_copy`) before tampering with it. The campaign runs under
``symcc-ulfm launch`` (mpiexec --with-ft ulfm), which is faster than starting ipyparallel
engines; the notebook tests cover the engine path.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from helpers.mpi import BY_COUNT, FAST_SIMULATE, launch
from symcc_ulfm.evidence import provenance
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.evidence.timeline import timeline
from symcc_ulfm.plots import membership_chart, save_chart

SMALL = ["--ranks", "6", "--warm-spares", "1", "--workers-per-master", "2", "--failure-schedule", "0:2", *BY_COUNT,
         *FAST_SIMULATE]


@functools.cache
def sealed_run() -> Path:
    """A sealed run dir: state/ from a real campaign, provenance, oracle.json, one figure, SHA256SUMS.txt."""
    run = Path(tempfile.mkdtemp(prefix="symcc-ulfm-evidence-")) / "run"
    run.mkdir()
    result = launch(run / "state", *SMALL)
    assert result.returncode == 0 and result.verdict.get("passed"), result.stderr[-3000:]
    shutil.copyfile(run / "state" / "oracle.json", run / "oracle.json")
    record = provenance.capture("simulate", None, {"cost_s": 0.02}, result.verdict["policy_sha256"])
    provenance.write(run / "provenance.json", record)
    save_chart(membership_chart(timeline(run / "state")), run / "figures", "membership")
    seal(run)
    return run


def fresh_copy(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(sealed_run(), target, symlinks=True)
    return target


def flip_byte(path: Path, offset: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
