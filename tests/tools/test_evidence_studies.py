"""Every sealed comparison study committed under evidence/ still verifies (CI re-verification).

A study keeps every input each system held (thousands of small files per cell), so it is committed
as one archive, ``evidence/compare-<name>-<UTC time>.tar.xz`` holding the study directory: it is
unpacked (only plain files, directories and hard links to its own files beneath its one top directory: a
campaign's claims are hard links to their records), checked
against its ``SHA256SUMS.txt`` and verified by ``symcc-ulfm verify`` from the repository root,
where the protocol's target specs resolve.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STUDIES = sorted((REPO / "evidence").glob("compare-*.tar.xz"))


@pytest.mark.skipif(not STUDIES, reason="no sealed comparison study under evidence/")
@pytest.mark.parametrize("archive", STUDIES, ids=[p.name for p in STUDIES])
def test_committed_study_verifies(archive, tmp_path):
    with tarfile.open(archive, "r:xz") as tar:
        members = tar.getmembers()
        names = {member.name for member in members}
        for member in members:
            assert not Path(member.name).is_absolute() and ".." not in Path(member.name).parts, member.name
            assert member.isfile() or member.isdir() or (member.islnk() and member.linkname in names), member.name
        tops = {Path(member.name).parts[0] for member in members}
        assert tops == {archive.name.removesuffix(".tar.xz")}, tops
        tar.extractall(tmp_path, members)
    study = tmp_path / tops.pop()
    assert subprocess.run(["sha256sum", "-c", "--quiet", "--strict", "SHA256SUMS.txt"], cwd=study).returncode == 0
    done = subprocess.run([sys.executable, "-m", "symcc_ulfm", "verify", str(study)], cwd=REPO,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    analysis = json.loads((study / "analysis" / "compare.json").read_text())
    protocol = json.loads((study / "protocol.json").read_text())
    for target in protocol["targets"]:
        against = analysis["targets"][target]["against_reference"]
        assert against and all("a12" in pair and "p_value" in pair for pair in against.values()), target
