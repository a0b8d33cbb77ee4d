"""Atomic writer, directories, locks, rank logs and the state-dir layout."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.store import run_unprivileged, unprivileged_unavailable, world_traversable_tmpdir

from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.errors import StoreError
from symcc_ulfm.store import atomic
from symcc_ulfm.store.atomic import write_new, write_replace
from symcc_ulfm.store.dirs import ensure_dir
from symcc_ulfm.store.locks import exclusive
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.store.reads import read_bytes
from symcc_ulfm.store.runlog import RankLog


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".tmp-"))


@pytest.fixture(params=[0o077, 0o000, 0o022], ids=["umask077", "umask000", "umask022"])
def hostile_umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


# -- modes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o660])
def test_write_replace_mode_is_exact_under_any_umask(tmp_path, hostile_umask, mode):
    path = tmp_path / "f.json"
    write_replace(path, b"one", mode)
    assert mode_of(path) == mode and path.read_bytes() == b"one"
    write_replace(path, b"two", mode)
    assert mode_of(path) == mode and path.read_bytes() == b"two"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o660])
def test_write_new_mode_is_exact_under_any_umask(tmp_path, hostile_umask, mode):
    path = tmp_path / "obj"
    assert write_new(path, b"x" * 10, mode) is True
    assert mode_of(path) == mode
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", [0o700, 0o750, 0o755, 0o770])
def test_ensure_dir_mode_is_exact_under_any_umask(tmp_path, hostile_umask, mode):
    leaf = tmp_path / "a" / "b" / "c"
    assert ensure_dir(leaf, mode) == leaf
    for p in (tmp_path / "a", tmp_path / "a" / "b", leaf):
        assert mode_of(p) == mode


def test_ensure_dir_keeps_an_existing_directory(tmp_path):
    d = tmp_path / "d"
    d.mkdir(mode=0o711)
    d.chmod(0o711)
    ensure_dir(d, 0o700)
    assert mode_of(d) == 0o711


def test_ensure_dir_over_a_file_raises(tmp_path):
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(StoreError, match="cannot create directory"):
        ensure_dir(tmp_path / "f", 0o700)
    with pytest.raises(StoreError):
        ensure_dir(tmp_path / "f" / "sub", 0o700)


def test_large_write(tmp_path):
    data = os.urandom(3 << 20)
    write_replace(tmp_path / "big", data, 0o600)
    assert read_bytes(tmp_path / "big") == data


# -- create-only ---------------------------------------------------------------------------------


def test_write_new_is_create_only(tmp_path):
    path = tmp_path / "obj"
    assert write_new(path, b"first", 0o600) is True
    assert write_new(path, b"second", 0o644) is False
    assert path.read_bytes() == b"first" and mode_of(path) == 0o600
    assert leftovers(tmp_path) == []


def test_a_bare_file_name_is_written_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as `minimize --input crash.bin` names crash.bin.min
    assert write_new("obj", b"data", 0o644) is True
    write_replace("other", b"more", 0o644)
    assert (tmp_path / "obj").read_bytes() == b"data" and (tmp_path / "other").read_bytes() == b"more"
    assert leftovers(tmp_path) == []


def test_write_new_race_has_one_winner(tmp_path):
    path = tmp_path / "obj"
    results = []
    barrier = threading.Barrier(8)

    def go(i):
        barrier.wait()
        results.append((write_new(path, f"writer-{i}".encode(), 0o600), i))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for created, i in results if created]
    assert len(winners) == 1
    assert path.read_bytes() == f"writer-{winners[0]}".encode()
    assert leftovers(tmp_path) == []


# -- failures raise StoreError and leave no temp file -------------------------------------------


def test_missing_directory_raises(tmp_path):
    with pytest.raises(StoreError, match="cannot write"):
        write_replace(tmp_path / "nope" / "f", b"x", 0o600)
    with pytest.raises(StoreError, match="cannot create"):
        write_new(tmp_path / "nope" / "f", b"x", 0o600)


def test_rename_failure_removes_temp(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "inside").write_bytes(b"")
    with pytest.raises(StoreError):
        write_replace(tmp_path / "target", b"x", 0o600)  # rename over a non-empty directory fails
    assert leftovers(tmp_path) == []
    assert (tmp_path / "target").is_dir()


def _fail(err):
    def boom(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    return boom


@pytest.mark.parametrize("writer", [write_replace, write_new])
def test_fsync_failure_removes_temp(tmp_path, monkeypatch, writer):
    monkeypatch.setattr(atomic.os, "fsync", _fail(errno.EIO))
    with pytest.raises(StoreError, match="Input/output error"):
        writer(tmp_path / "f", b"data", 0o600)
    monkeypatch.undo()
    assert leftovers(tmp_path) == [] and not (tmp_path / "f").exists()


def test_write_failure_removes_temp(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "write", _fail(errno.ENOSPC))
    with pytest.raises(StoreError, match="No space left"):
        write_replace(tmp_path / "f", b"data", 0o600)
    monkeypatch.undo()
    assert leftovers(tmp_path) == [] and not (tmp_path / "f").exists()


def test_link_failure_removes_temp(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "link", _fail(errno.EXDEV))
    with pytest.raises(StoreError):
        write_new(tmp_path / "f", b"data", 0o600)
    monkeypatch.undo()
    assert leftovers(tmp_path) == [] and not (tmp_path / "f").exists()


def test_rename_error_removes_temp(tmp_path, monkeypatch):
    write_replace(tmp_path / "f", b"old", 0o600)
    monkeypatch.setattr(atomic.os, "rename", _fail(errno.EIO))
    with pytest.raises(StoreError):
        write_replace(tmp_path / "f", b"new", 0o600)
    monkeypatch.undo()
    assert leftovers(tmp_path) == [] and (tmp_path / "f").read_bytes() == b"old"


def test_read_only_directory_as_unprivileged_user():
    reason = unprivileged_unavailable()
    if reason:
        pytest.skip(reason)
    root = world_traversable_tmpdir()
    try:
        ro = root / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        code = (
            "import sys; from pathlib import Path\n"
            "from symcc_ulfm.store.atomic import write_new, write_replace\n"
            "from symcc_ulfm.errors import StoreError\n"
            "for w in (write_replace, write_new):\n"
            "    try:\n"
            "        w(Path(sys.argv[1]) / 'f', b'x', 0o600)\n"
            "    except StoreError as exc:\n"
            "        print('StoreError', exc)\n"
            "    else:\n"
            "        print('WROTE')\n"
        )
        out = run_unprivileged(code, str(ro))
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert len(lines) == 2 and all(line.startswith("StoreError") for line in lines), out.stdout
        assert "Permission denied" in lines[0]
        assert list(ro.iterdir()) == []
    finally:
        shutil.rmtree(root)


# -- reading ---------------------------------------------------------------------------------------


def test_read_bytes_refuses_symlinks(tmp_path):
    (tmp_path / "real").write_bytes(b"secret")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StoreError, match="symbolic link"):
        read_bytes(tmp_path / "link")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    with pytest.raises(StoreError, match="symbolic link"):
        read_bytes(tmp_path / "dangling")


def test_read_bytes_missing_directory_and_limit(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_bytes(tmp_path / "missing")
    with pytest.raises(StoreError, match="not a regular file"):
        read_bytes(tmp_path)
    (tmp_path / "f").write_bytes(b"12345")
    assert read_bytes(tmp_path / "f", limit=5) == b"12345"
    with pytest.raises(StoreError, match="more than the limit"):
        read_bytes(tmp_path / "f", limit=4)
    os.mkfifo(tmp_path / "fifo")
    fd = os.open(tmp_path / "fifo", os.O_RDWR)  # keep a writer so the O_RDONLY open does not block
    try:
        with pytest.raises(StoreError, match="not a regular file"):
            read_bytes(tmp_path / "fifo")
    finally:
        os.close(fd)


# -- locks -----------------------------------------------------------------------------------------


def test_exclusive_lock_times_out_and_releases(tmp_path, hostile_umask):
    path = tmp_path / "r.lock"
    with exclusive(path, 0o640, 1.0):
        assert mode_of(path) == 0o640  # never the umask
        t0 = time.monotonic()
        with pytest.raises(StoreError, match="still held"):
            with exclusive(path, 0o640, 0.1):
                pass
        assert time.monotonic() - t0 < 2
    with exclusive(path, 0o640, 0.1):
        pass


def test_exclusive_lock_serialises_threads(tmp_path):
    path = tmp_path / "r.lock"
    inside = []
    overlap = []

    def go():
        with exclusive(path, 0o600, 10):
            inside.append(1)
            if len(inside) > 1:
                overlap.append(1)
            time.sleep(0.01)
            inside.pop()

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlap == []


def test_byte_locks_of_one_file_are_independent_and_exclusive(tmp_path):
    path = tmp_path / "records.lock"
    with exclusive(path, 0o600, 1.0, byte=7):
        with exclusive(path, 0o600, 0.1, byte=8):  # another record: no wait
            pass
        with pytest.raises(StoreError, match=r"byte 7\) still held"):  # the same, even in this process
            with exclusive(path, 0o600, 0.1, byte=7):
                pass
        with pytest.raises(StoreError, match="still held"):  # locked in another process too
            run_child_lock(path, 7)
    run_child_lock(path, 7)  # released
    with pytest.raises(StoreError, match="outside"):
        with exclusive(path, 0o600, 0.1, byte=-1):
            pass


def run_child_lock(path: Path, byte: int) -> None:
    code = (
        "import sys; from symcc_ulfm.store.locks import exclusive\n"
        f"with exclusive({str(path)!r}, 0o600, 0.1, byte={byte}): pass"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise StoreError(done.stderr.strip().splitlines()[-1])


def test_byte_lock_dies_with_its_process(tmp_path):
    path = tmp_path / "records.lock"
    code = (
        "import os, sys; from symcc_ulfm.store.locks import exclusive\n"
        f"with exclusive({str(path)!r}, 0o600, 1.0, byte=3):\n"
        "    print('held', flush=True); sys.stdin.read(); os._exit(9)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    with pytest.raises(StoreError, match="still held"):
        with exclusive(path, 0o600, 0.1, byte=3):
            pass
    child.kill()
    child.wait()
    with exclusive(path, 0o600, 1.0, byte=3):
        pass


def test_exclusive_lock_refuses_symlink(tmp_path):
    (tmp_path / "real").write_bytes(b"")
    (tmp_path / "l.lock").symlink_to(tmp_path / "real")
    with pytest.raises(StoreError, match="cannot open lock"):
        with exclusive(tmp_path / "l.lock", 0o600, 0.1):
            pass


# -- rank log --------------------------------------------------------------------------------------


def test_rank_log_lines_and_mode(tmp_path, hostile_umask):
    log = RankLog(tmp_path / "rank-3.jsonl", 3, 0o640)
    log.generation = 2
    log.event("ready", worker=5)
    log.event("result", n=[1, 2])
    log.sync()
    log.close()
    log.close()  # idempotent
    assert mode_of(tmp_path / "rank-3.jsonl") == 0o640
    lines = [json.loads(x) for x in (tmp_path / "rank-3.jsonl").read_text().splitlines()]
    assert [x["event"] for x in lines] == ["ready", "result"]
    assert lines[0]["rank"] == 3 and lines[0]["generation"] == 2 and lines[0]["worker"] == 5
    again = RankLog(tmp_path / "rank-3.jsonl", 3, 0o640)
    again.event("again")
    again.close()
    assert len((tmp_path / "rank-3.jsonl").read_text().splitlines()) == 3


def test_rank_log_errors(tmp_path):
    with pytest.raises(StoreError):
        RankLog(tmp_path / "missing" / "rank-0.jsonl", 0, 0o600)


# -- state directory ---------------------------------------------------------------------------------


def test_state_dir_create_modes(tmp_path, hostile_umask):
    state = StateDir(tmp_path / "state", FileModes(0o640, 0o644)).create()
    assert mode_of(state.root) == 0o750
    for p in (state.membership, state.wal / "records", state.wal / "locks", state.query_store, state.staging,
              state.logs):
        assert mode_of(p) == 0o750, p
    for p in (state.corpus / "objects", state.corpus / "claims"):
        assert mode_of(p) == 0o755, p
    assert state.rank_log(7) == state.root / "logs" / "rank-7.jsonl"
    assert state.policy.name == "policy.json" and state.endpoint.name == "endpoint.json"
    assert StateDir(str(tmp_path / "state"), FileModes()).create().root == state.root  # idempotent
