"""Isolation where the kernel refuses it: the campaign says so and runs without it only when asked.

A user namespace whose ``user.max_user_namespaces`` is 0 is a kernel that refuses namespaces
(as ``kernel.unprivileged_userns_clone=0`` or a seccomp policy would): `launch` and `explore`
inside it exit 5 with the reason before anything is written; `--isolation none` runs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

from symcc_ulfm.executors.sandbox import isolation

pytestmark = pytest.mark.skipif(isolation.unavailable() is not None or shutil.which("unshare") is None,
                                reason="no user namespaces here to take away")


def _refused(*args: str, cwd) -> subprocess.CompletedProcess:
    """``symcc-ulfm ARGS`` in a user namespace that may not create another one."""
    command = shlex.join([sys.executable, "-m", "symcc_ulfm", *args])
    return subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c",
                           f"echo 0 > /proc/sys/user/max_user_namespaces && exec {command}"],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_explore_and_launch_refuse_without_namespaces_and_say_why(tmp_path):
    out = tmp_path / "out"
    done = _refused("explore", "--target", "tlv", "--seconds", "1", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    assert "cannot be isolated" in done.stderr and "--isolation none" in done.stderr
    assert "refused" in done.stderr  # the kernel's reason follows
    state = tmp_path / "state"
    done = _refused("launch", "--state-dir", str(state), "--target", "tlv", cwd=tmp_path)
    assert done.returncode == 5, done.stderr
    assert not state.exists() and not out.exists()


def test_without_namespaces_the_user_can_ask_for_the_weaker_mode(tmp_path):
    out = tmp_path / "out"
    done = _refused("explore", "--target", "tlv", "--seconds", "2", "--out", str(out), "--isolation", "none",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (out / "findings.json").exists()


def test_the_reason_names_a_missing_unshare(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    isolation.unavailable.cache_clear()  # asked once per process: this one's PATH changed
    try:
        assert isolation.unavailable() == "util-linux's unshare is not on PATH"
    finally:
        isolation.unavailable.cache_clear()
