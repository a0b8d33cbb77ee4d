"""The test suite's own scheduling (tests/conftest.py): under ``make test``'s two xdist workers a
test file runs on one worker and the ``host_wide`` tests never beside each other. When that breaks
(pytest 9.2 with pytest-xdist 3.8 silently split every group), gates that share network namespaces
run at once and module fixtures (a whole MPI job) are built twice; nothing else would say so."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

FILE_A = '''
import os, pytest

@pytest.fixture(scope="module")
def built():
    with open(os.environ["GROUPS_LOG"], "a") as log:
        log.write(f"fixture a {os.environ['PYTEST_XDIST_WORKER']}\\n")

@pytest.mark.parametrize("i", range(20))
def test_a(i, built):
    with open(os.environ["GROUPS_LOG"], "a") as log:
        log.write(f"test a {os.environ['PYTEST_XDIST_WORKER']}\\n")
'''

FILE_WIDE = '''
import os, pytest

@pytest.mark.host_wide
@pytest.mark.parametrize("i", range(10))
def test_wide(i):
    with open(os.environ["GROUPS_LOG"], "a") as log:
        log.write(f"test wide {os.environ['PYTEST_XDIST_WORKER']}\\n")
'''


def test_a_file_and_the_host_wide_tests_each_run_on_one_worker(tmp_path):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    shutil.copytree(CONFTEST.parent / "helpers", tmp_path / "helpers")  # what the conftest imports
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    host_wide: never beside another\n")
    (tmp_path / "test_a.py").write_text(FILE_A)
    for name in ("test_wide_1.py", "test_wide_2.py"):
        (tmp_path / name).write_text(FILE_WIDE)
    for i in range(4):  # other work, so that the scheduler has something to spread
        (tmp_path / f"test_other_{i}.py").write_text(FILE_A.replace("test a", f"test other{i}").replace(
            "fixture a", f"fixture other{i}"))
    log = tmp_path / "groups.log"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
                           "-p", "no:cacheprovider", str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**__import__("os").environ, "GROUPS_LOG": str(log)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [line.split() for line in log.read_text().splitlines()]
    workers: dict[tuple[str, str], set[str]] = {}
    for what, name, worker in lines:
        workers.setdefault((what, name), set()).add(worker)
    assert len([1 for what, name, _ in lines if what == "test"]) == 20 * 5 + 20
    assert {key: len(found) for key, found in workers.items()} == {key: 1 for key in workers}, workers
    assert len(workers[("test", "wide")]) == 1  # both host_wide files on one worker
    assert [line for line in lines if line[0] == "fixture"].count(["fixture", "a", *workers[("fixture", "a")]]) == 1
