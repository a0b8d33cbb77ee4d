"""Every command that opens a campaign's state refuses a damaged policy, deadline, membership
snapshot or layout with exit 2 and the file's name, before it reads anything else (issue 39,
defect 5; docs/bad-input.md, "a damaged state file").

One real campaign (`launch` under `mpiexec --with-ft ulfm`, ended by its budget by count) gives
the state; each case damages one of its files in place, runs the command through the CLI's
``main`` with its output captured, checks the verdict and that the state is as it was, then puts
the file back. A few cases run as real processes too, where a traceback would show.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.mpi import BY_COUNT, FAST_SIMULATE, launch

from symcc_ulfm.cli.main import main

pytestmark = pytest.mark.mpi

SMALL = ["--ranks", "4", "--warm-spares", "0", "--workers-per-master", "3", "--failure-schedule", ""]

FILES = ["policy.json", "deadline.json", "membership/generation-0-snapshot.json",
         "membership/generation-0-layout.json", "membership/receipt-1.json"]

# what each damage puts where the file was (its bytes as the campaign wrote them are given)
DAMAGES = {
    "garbage": lambda path, good: path.write_bytes(b"\x00\xff\x89 garbage"),
    "truncated": lambda path, good: path.write_bytes(good[: len(good) // 2]),
    "not-json": lambda path, good: path.write_bytes(b"{'policy': 1}"),
    "a-list": lambda path, good: path.write_bytes(b"[]"),
    "another-object": lambda path, good: path.write_bytes(b'{"format": 7}'),
    "nested-deep": lambda path, good: path.write_bytes(b"[" * 100_000),
    "empty": lambda path, good: path.write_bytes(b""),
    "symlink": lambda path, good: path.symlink_to(_elsewhere(path, good)),
    "directory": lambda path, good: path.mkdir(),
}

# every command that opens a state; {state} the damaged state, {out} a new directory beside it
COMMANDS = {
    "findings": ["findings", "{state}"],
    "export-afl": ["export", "{state}", "{out}"],
    "export-libfuzzer": ["export", "--layout", "libfuzzer", "{state}", "{out}"],
    "replay": ["replay", "{state}", "0123abcd"],
    "minimize": ["minimize", "{state}", "0123abcd"],
    "sarif": ["sarif", "{state}", "{out}"],
    "status": ["status", "{state}", "--json"],
    "launch-resume": ["launch", "--state-dir", "{state}", "--resume"],
}


def _elsewhere(path: Path, good: bytes) -> Path:
    """The file's own bytes outside the state, for a link planted in its place."""
    target = next(p for p in path.parents if p.name == "state").parent.parent / f"elsewhere-{path.name}"
    target.write_bytes(good)
    return target


@pytest.fixture(scope="module")
def state(tmp_path_factory) -> Path:
    """A finished campaign, resumed once: a deadline.json (the resume extended the deadline) and a
    receipt of generation 1."""
    root = tmp_path_factory.mktemp("damaged")
    run = launch(root / "run" / "state", *SMALL, *FAST_SIMULATE, *BY_COUNT)
    assert run.returncode == 0 and run.outcome == "budget-reached", run.stderr
    extended = launch(run.state, "--resume", "--deadline", "300")
    assert extended.returncode == 0 and extended.outcome == "budget-reached", extended.stderr
    assert (run.state / "deadline.json").is_file() and (run.state / "membership" / "receipt-1.json").is_file()
    (run.state / "launch.lock").unlink(missing_ok=True)
    return run.state


def _listing(root: Path, damaged: str) -> dict[str, tuple[int, ...]]:
    """Each path of the state with its type, and a file's size and modification time (what a write
    changes; the file the case damaged and put back keeps its size)."""
    listing = {}
    for path in root.rglob("*"):
        info, name = path.lstat(), str(path.relative_to(root))
        listing[name] = (info.st_mode,) if path.is_dir() else (info.st_mode, info.st_size) if name == damaged \
            else (info.st_mode, info.st_size, info.st_mtime_ns)
    return listing


@contextlib.contextmanager
def _damaged(state: Path, name: str, damage: str):
    path = state / name
    good, mode = path.read_bytes(), path.stat().st_mode
    path.unlink()
    DAMAGES[damage](path, good)
    try:
        yield path
    finally:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
        path.write_bytes(good)
        path.chmod(mode)
        for planted in state.parent.parent.glob("elsewhere-*"):
            planted.unlink()


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


def _argv(command: str, state: Path) -> list[str]:
    return [a.format(state=state, out=state.parent.parent / "out") for a in COMMANDS[command]]


def test_the_intact_state_is_read_by_every_command(state):
    """The control: without damage the commands read the state (replay and minimize then refuse the
    unknown finding, by its own message)."""
    for command in COMMANDS:
        if command == "launch-resume":
            continue  # resumes the campaign: tests/tools/test_resume.py
        code, text = _run(_argv(command, state))
        if command in ("replay", "minimize"):
            assert code == 2 and "symcc-ulfm findings" in text and "DamagedState" not in text, text
        else:
            assert code == 0, text
        out = state.parent.parent / "out"
        shutil.rmtree(out) if out.is_dir() else out.unlink(missing_ok=True)


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_refuses_each_damaged_state_file_with_exit_2_naming_it(state, command, name):
    before = _listing(state, name)
    for damage in DAMAGES:
        with _damaged(state, name, damage) as path:
            code, text = _run(_argv(command, state))
            assert code == 2, f"{damage}: {text}"
            assert path.name in text and str(path.parent) in text, f"{damage}: {text}"
            assert "Traceback" not in text
            assert not (state.parent.parent / "out").exists()
    assert _listing(state, name) == before  # nothing written, not even a lock


@pytest.mark.parametrize("command", ["findings", "export-afl", "replay", "minimize"])  # issue 39's tracebacks
def test_a_real_process_prints_the_refusal_and_no_traceback(state, command):
    with _damaged(state, "policy.json", "truncated") as path:
        done = subprocess.run([sys.executable, "-m", "symcc_ulfm", *_argv(command, state)], capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(path) in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("name", FILES)
def test_the_oracle_fails_a_damaged_state_naming_the_file(state, name):
    """The oracle judges instead of refusing: a damaged file fails the run (exit 1) naming it; a link
    or a directory in its place is refused unread (exit 4, as every special file)."""
    for damage in DAMAGES:
        with _damaged(state, name, damage) as path:
            code, text = _run(["oracle", str(state)])
        assert code == (4 if damage in ("symlink", "directory") else 1), f"{damage}: {text}"
        assert "FAIL" in text or code == 4, f"{damage}: {text}"
        generation = "".join(c for c in path.name if c.isdigit())  # a membership record of another shape:
        named = path.name in text or (generation and (f"generation {generation}" in text  # named by generation
                                                      or f"generation-{generation} " in text))
        assert named and "Traceback" not in text, f"{damage}: {text}"
    assert os.path.isfile(state / "policy.json")
