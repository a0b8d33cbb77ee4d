"""Shared helpers for the store tests: a fresh state directory, leases, staged manifests, and
deterministic scenarios that the crash tests run in a child process (``python -m`` style via
:func:`child_main`) and then finish in the test process.

Kept free of pytest so that a child process can import it with only ``tests/`` on sys.path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from symcc_ulfm.core.membership import commit, initial_membership
from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.gates.netns.access import SearchGrants, blocking
from symcc_ulfm.store.corpus import Corpus, claim_owner
from symcc_ulfm.store.crashpoints import CRASH_VAR
from symcc_ulfm.store.paths import StateDir
from symcc_ulfm.store.record import work_hash
from symcc_ulfm.store.snapshots import SnapshotStore
from symcc_ulfm.store.staging import WorkerStaging
from symcc_ulfm.store.wal import WorkWAL

TESTS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = TESTS_DIR.parent
EXECUTOR = hashlib.sha256(b"executor-under-test").hexdigest()
POLICY_SHA = hashlib.sha256(b"policy-under-test").hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def input_hash(i: int) -> str:
    return sha(f"input-{i}".encode())


@dataclass
class Env:
    state: StateDir
    corpus: Corpus
    wal: WorkWAL
    snapshots: SnapshotStore

    @property
    def root(self) -> Path:
        return self.state.root

    def staging(self, worker: int) -> WorkerStaging:
        m = self.state.modes
        return WorkerStaging(self.root, worker, m.snapshot, m.snapshot_dir)


def open_env(root: Path, modes: FileModes | None = None, lock_timeout_s: float = 30.0) -> Env:
    state = StateDir(Path(root), modes or FileModes()).create()
    corpus = Corpus(state.corpus, state.modes.corpus, state.modes.snapshot)
    wal = WorkWAL(state.wal, state.root, corpus, state.modes.snapshot, lock_timeout_s=lock_timeout_s)
    return Env(state, corpus, wal, SnapshotStore(state.membership, state.modes.snapshot))


def make_lease(generation: int, master: int, worker: int, token: str | None = None) -> dict:
    return {
        "generation": generation,
        "master": master,
        "worker": worker,
        "shard": f"g{generation}-m{master}",
        "token": token or f"{generation}.{master}.{worker}",
    }


def stage_manifest(env: Env, lease: dict, payloads: list[bytes], generated: int | None = None) -> dict:
    """Stage ``payloads`` for ``lease``'s worker and return the manifest that names them."""
    staging = env.staging(lease["worker"])
    objects = []
    for data in payloads:
        digest, rel = staging.stage(lease["token"], data)
        objects.append({"sha256": digest, "length": len(data), "staging": rel})
    return {"objects": objects, "dropped": [], "kind": "test", "slice": None, "generated": len(payloads) if generated is None else generated, "findings": []}


def tree_files(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` (relative path -> bytes)."""
    out = {}
    if not root.exists():
        return out
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def commit_state(env: Env) -> dict:
    """The durable facts a replay must reproduce (committer identity excluded)."""
    records = {}
    for record in env.wal.records():
        done = record["done"]
        records[record["work_hash"]] = {
            "state": record["state"],
            # staging paths name the lease, which a re-lease after a crash changes
            "objects": None if record["manifest"] is None else [
                (o["sha256"], o["length"]) for o in record["manifest"]["objects"]
            ],
            "generated": None if record["manifest"] is None else record["manifest"]["generated"],
            "claimed": None if done is None else sorted(done["claimed"]),
        }
    return {
        "objects": tree_files(env.state.corpus / "objects"),
        "claims": {name: claim_owner(data, name) for name, data in tree_files(env.state.corpus / "claims").items()},
        "records": records,
        "staging": sorted(tree_files(env.state.staging)),
        "temp_files": sorted(p.name for p in env.root.rglob(".tmp-*")),
    }


# -- the commit scenario --------------------------------------------------------------------

# Three works; object payloads are shared across works so that claims decide who publishes.
COMMIT_PLAN = [
    (0, [b"alpha", b"beta"]),
    (1, [b"beta", b"gamma", b"delta"]),
    (2, [b"delta"]),
]
FIRST_COMMITTER = {"generation": 0, "master": 0}
RECOVERY_COMMITTER = {"generation": 1, "master": 4}


def run_commit_scenario(root: Path) -> Env:
    """Uncrashed run (or the child of a crash test): lease -> stage -> commit -> replay per work."""
    env = open_env(root)
    for i, payloads in COMMIT_PLAN:
        lease = make_lease(0, 0, 1 + i, token=f"0.0.{i + 1}")
        env.wal.lease(input_hash(i), EXECUTOR, lease)
        manifest = stage_manifest(env, lease, payloads)
        work = work_hash(input_hash(i), EXECUTOR)
        env.wal.begin_commit(work, lease, manifest)
        env.wal.replay_commit_once(work, FIRST_COMMITTER)
    return env


def recover_commit_scenario(root: Path) -> Env:
    """What a master of the next generation does: replay committing, re-lease lapsed, redo missing."""
    env = open_env(root)
    for i, payloads in COMMIT_PLAN:
        work = work_hash(input_hash(i), EXECUTOR)
        record = env.wal.read(work)
        if record is not None and record["state"] in ("committing", "done"):
            env.wal.replay_commit_once(work, RECOVERY_COMMITTER)
            continue
        lease = make_lease(1, 4, 5 + i, token=f"1.4.{i + 1}")
        env.wal.lease(input_hash(i), EXECUTOR, lease)  # a lapsed generation-0 lease is re-leased
        manifest = stage_manifest(env, lease, payloads)
        env.wal.begin_commit(work, lease, manifest)
        env.wal.replay_commit_once(work, RECOVERY_COMMITTER)
    return env


# -- the membership scenario ----------------------------------------------------------------

MEMBERSHIP_PLAN = [(2,), (3,)]  # the reference schedule 0:2,1:3


def run_membership_scenario(root: Path) -> Env:
    env = open_env(root)
    current = initial_membership(10, 2, 3, (), POLICY_SHA, 0.0)
    env.snapshots.write_generation0(current)
    for missing in MEMBERSHIP_PLAN:
        prepared = env.snapshots.prepare(current, missing)
        nxt, receipt = commit(current, prepared)
        env.snapshots.commit(nxt, receipt)
        current = nxt
    return env


def recover_membership_scenario(root: Path) -> Env:
    """A survivor restarting the recovery: resume from the current committed generation."""
    env = open_env(root)
    current = env.snapshots.current()
    for missing in MEMBERSHIP_PLAN[current.generation :]:
        prepared = env.snapshots.prepare(current, missing)
        nxt, receipt = commit(current, prepared)
        env.snapshots.commit(nxt, receipt)
        current = nxt
    return env


def membership_state(env: Env) -> dict[str, bytes]:
    return tree_files(env.state.membership)


SCENARIOS = {
    "commit": run_commit_scenario,
    "recover-commit": recover_commit_scenario,
    "membership": run_membership_scenario,
    "recover-membership": recover_membership_scenario,
}


def run_child(scenario: str, root: Path, crash_at: str | None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run a scenario in a fresh interpreter, optionally with SYMCC_ULFM_CRASH_AT set."""
    env = {k: v for k, v in os.environ.items() if k != CRASH_VAR}
    if crash_at is not None:
        env[CRASH_VAR] = crash_at
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR), env.get("PYTHONPATH", "")])
    code = f"import helpers.store, sys; helpers.store.SCENARIOS[{scenario!r}](sys.argv[1])"
    return subprocess.run(
        [sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True, timeout=timeout
    )


# -- running as an unprivileged user ----------------------------------------------------------

UNPRIVILEGED_UID = 65534  # nobody


def run_unprivileged(code: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run ``code`` in a child that cannot bypass file permissions (root drops to nobody).

    Raises ``PermissionError`` when this process is root but may not change its uid.
    """
    env = {k: v for k, v in os.environ.items() if k != CRASH_VAR}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if os.geteuid() != 0:
        return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                              timeout=timeout, cwd="/")
    reach = [Path(sys.executable), Path(sys.executable).resolve(), REPO_ROOT, TESTS_DIR]
    with reachable_by(UNPRIVILEGED_UID, UNPRIVILEGED_UID, reach):
        return subprocess.run(
            [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=timeout,
            cwd="/", user=UNPRIVILEGED_UID, group=UNPRIVILEGED_UID, extra_groups=[],
        )


@contextlib.contextmanager
def reachable_by(uid: int, gid: int, paths: list[Path]):
    """Grant ``o+x`` on ancestors of ``paths`` that stop ``uid``/``gid`` (a checkout under a 0700
    ``mktemp -d``), journaled and restored afterwards, as the multinode gate does."""
    with tempfile.TemporaryDirectory() as journal_dir:
        grants = SearchGrants(Path(journal_dir) / "grants.json", echo=lambda _: None)
        try:
            grants.grant(blocking(paths, uid, gid), uid)
            yield
        finally:
            grants.restore()


def unprivileged_unavailable() -> str | None:
    """Why an unprivileged child cannot be run here (None when it can)."""
    try:
        out = run_unprivileged("import symcc_ulfm")
    except (PermissionError, OSError) as exc:
        return f"cannot start a child as uid {UNPRIVILEGED_UID}: {exc}"
    if out.returncode != 0:
        return f"uid {UNPRIVILEGED_UID} cannot import symcc_ulfm from {REPO_ROOT}: {out.stderr.strip()[-200:]}"
    return None


def world_traversable_tmpdir() -> Path:
    """A fresh directory outside pytest's 0700 tmp tree, so an unprivileged child can reach it."""
    path = Path(tempfile.mkdtemp(prefix="symcc-ulfm-test-"))
    path.chmod(0o755)
    return path


# -- the multi-process replay race --------------------------------------------------------------


def race_worker(root: str, me: int, works: list[str], barrier, results) -> None:
    """One racing 'master': replay every record (in its own order), logging every staging read and put."""
    import random
    import traceback

    reads: list[str] = []
    puts: list[tuple[str, bool]] = []
    errors: list[str] = []
    transitioned: list[str] = []
    writes: list[tuple[str, str]] = []
    try:
        env = open_env(Path(root))
        real_take = env.wal.staged.take

        def logged_take(relpath, sha256, length):
            reads.append(relpath)
            return real_take(relpath, sha256, length)

        env.wal.staged.take = logged_take
        real_adopt = env.corpus.adopt

        def logged_adopt(staged, barrier=None):
            created = real_adopt(staged, barrier)
            puts.append((staged.sha256, created))
            return created

        env.corpus.adopt = logged_adopt
        real_write = env.wal._write

        def logged_write(record, barrier=None):
            writes.append((record["work_hash"], record["state"]))
            return real_write(record, barrier)

        env.wal._write = logged_write
        order = list(works)
        random.Random(me).shuffle(order)
        barrier.wait(timeout=60)
        for work in order:
            try:
                record = env.wal.replay_commit_once(work, {"generation": 0, "master": me})
                if record["done"]["master"] == me:
                    transitioned.append(work)
            except Exception:
                errors.append(traceback.format_exc())
    except Exception:
        errors.append(traceback.format_exc())
    results.put({"me": me, "errors": errors, "reads": reads, "puts": puts, "transitioned": transitioned,
                 "writes": writes})


@contextlib.contextmanager
def mounted_tmpfs(directory: Path, size: str):
    """A real tmpfs of ``size`` (``mount`` syntax: ``64k``, ``48m``) at ``directory/tmpfs``,
    unmounted (lazily: a rank may still hold a file there) afterwards. Needs root."""
    mount = directory / "tmpfs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)
