"""Containment: every way a target can end its process ends one execution, contained, classified.

Real child processes, real signals, real memory limits; the test process itself never runs the
targets below (several of them would kill it).
"""

from __future__ import annotations

import os
import signal
import textwrap
import time

import pytest
from helpers.processes import wait_dead

from symcc_ulfm.errors import TargetError
from symcc_ulfm.executors import create
from symcc_ulfm.executors.outcome import dump_frames, sanitizer_summary
from symcc_ulfm.executors.sandbox.frames import FrameBuffer, FrameError, encode_frame
from symcc_ulfm.executors.sandbox.parent import Sandbox

BAD = textwrap.dedent('''
    import ctypes, os, signal, stat, sys, time

    def parse(data: bytes):
        if len(data) < 2:
            return "short"
        op = data[0]
        if op == 0x41:
            os._exit(3)
        if op == 0x42:
            ctypes.string_at(0xdeadbeef, 4)
        if op == 0x43:
            os.abort()
        if op == 0x44:
            time.sleep(1e9)
        if op == 0x45:
            hold = []
            while True:
                hold.append(bytes(8 << 20))
        if op == 0x46:
            raise KeyError("planted")
        if op == 0x47:
            while True:
                pass
        if op == 0x48:
            os.kill(os.getpid(), signal.SIGKILL)
        if op == 0x49:
            for name in os.listdir("/proc/self/fd"):  # every pipe it may write: the sandbox's reply pipe too
                fd = int(name)
                if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                    try:
                        os.write(fd, b"garbage that is not a frame")
                    except OSError:
                        pass
            return "wrote"
        if op == 0x4A:
            sys.stdout.write("x" * 100000)
            sys.stderr.write("y" * 200000)
            return sys.stdin.read()
        return "ok:" + data[1:].hex()
''')

EXPECTED = {
    b"A0": ("crash", "exit 3 at bad.py:parse:9"),
    b"B0": ("crash", "SIGSEGV at bad.py:parse:11"),
    b"C0": ("crash", "SIGABRT at bad.py:parse:13"),
    b"D0": ("hang", "hang in bad.py:parse"),
    b"E0": ("oom", "MemoryError at bad.py:parse:19"),
    b"F0": ("exception", "KeyError at bad.py:parse:21"),
    b"G0": ("hang", "hang in bad.py:parse"),
    b"H0": ("crash", "SIGKILL"),  # nothing can print a stack on SIGKILL
}


@pytest.fixture()
def bad(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(BAD)
    # no hybrid mutants: each run executes exactly its own input (tests/executors/test_concolic_mutate.py has a
    # mutant that kills the child)
    sandbox = create("concolic", f"{path}:parse", {"exec_timeout_s": 0.5, "memory_mb": 512, "mutations": 0})
    yield sandbox
    sandbox.close()


@pytest.mark.parametrize("data", sorted(EXPECTED))
def test_every_way_of_dying_is_one_classified_execution(bad, data):
    assert isinstance(bad, Sandbox)
    started = time.monotonic()
    outcome = bad.measure(data).outcome
    assert (outcome.kind, outcome.signature) == EXPECTED[data]
    assert time.monotonic() - started < 10
    after = bad.measure(b"Z\x01")  # the sandbox goes on (a new child where the old one died)
    assert after.outcome.kind == "ok" and after.returned == "ok:01"


def test_a_batch_goes_on_past_deaths_and_keeps_its_order(bad):
    batch = [b"Z0", b"A0", b"Z1", b"B0", b"F0", b"Z2"]
    measured = bad.measure_many(batch)
    assert [m.outcome.kind for m in measured] == ["ok", "crash", "ok", "crash", "exception", "ok"]
    assert [m.returned for m in measured if m.outcome.kind == "ok"] == ["ok:30", "ok:31", "ok:32"]
    assert bad.deaths == 2


def test_a_budget_leaves_later_inputs_unmeasured(bad):
    measured = bad.measure_many([b"D0", b"Z0", b"Z1"], budget_s=0.2)
    assert measured[0].outcome.kind == "hang" and measured[1:] == [None, None]


def test_a_death_during_a_run_is_confirmed_by_a_concrete_rerun(bad):
    result = bad.run(b"B0")
    [finding] = result.findings
    assert (finding.outcome.kind, finding.outcome.signature, finding.data) == ("crash", EXPECTED[b"B0"][1], b"B0")
    assert result.notes["executing"] is True and result.notes["confirmed"] == "crash"
    result = bad.run(b"Z0")
    assert result.candidates and not result.findings


def test_a_run_that_hangs_is_bounded_by_the_execution_slot_and_confirmed(bad):
    """A run's executions are bounded from the start time the child wrote into the slot."""
    started = time.monotonic()
    result = bad.run(b"D0")  # a sleep in C: only this side can end it
    elapsed = time.monotonic() - started
    [finding] = result.findings
    assert (finding.outcome.kind, finding.data) == ("hang", b"D0") and result.notes["executing"] is True
    assert elapsed < 10  # the run itself, then its confirming rerun: each 0.5 s + grace, not run_timeout_s
    assert bad.run(b"Z0").candidates  # and the sandbox goes on


def test_a_target_that_writes_into_the_sandbox_pipe_or_floods_its_streams_is_contained(bad):
    garbled = bad.measure(b"I0").outcome
    assert (garbled.kind, garbled.signature) == ("protocol", "sandbox reply: frame over the size limit")
    flood = bad.measure(b"J0")
    assert flood.outcome.kind == "ok" and flood.returned == "", "stdin is /dev/null; stdout/stderr drained"


def test_the_child_dies_with_its_parent(tmp_path):
    """The rank that owns a sandbox can be SIGKILLed (failure injection): its fork server and the
    child it forked must not live on."""
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent(f'''
        import os, sys, threading, time
        from symcc_ulfm.executors import create
        sandbox = create("concolic", "{tmp_path / "bad.py"}:parse", {{"exec_timeout_s": 60}})
        sandbox.measure(b"Z0")  # the fork server has forked a child
        print(sandbox._proc.pid, sandbox._server_pid(), sandbox._signal_pid, flush=True)

        def announce():  # once the child executes D0 (its execution slot says so)
            while (seen := sandbox._slot.read()) is None or seen.idle:
                time.sleep(0.01)
            print("executing", flush=True)

        threading.Thread(target=announce, daemon=True).start()
        sandbox.reproduce(b"D0")  # hangs in C; the parent is killed meanwhile
    '''))
    (tmp_path / "bad.py").write_text(BAD)
    import subprocess
    import sys

    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    unshare, server, child = (int(pid) for pid in owner.stdout.readline().split())
    assert owner.stdout.readline() == "executing\n", "the owner ended before its child executed D0"
    owner.kill()
    owner.wait()
    for pid, what in ((unshare, "isolation"), (server, "fork server"), (child, "child")):
        if not wait_dead(pid):
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the sandbox {what} outlived its parent")


def test_a_target_that_cannot_be_imported_is_a_target_error(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("raise RuntimeError('import-time failure')\n")
    with pytest.raises(TargetError, match="import-time failure"):
        create("concolic", f"{path}:parse").identity()


def test_a_target_whose_import_kills_the_process_is_reported(tmp_path):
    path = tmp_path / "killer.py"
    path.write_text("import os\nos._exit(0)\n")
    sandbox = create("concolic", f"{path}:parse")
    with pytest.raises(Exception, match="could not start"):
        sandbox.identity()


def test_frames_reject_garbage_before_allocating():
    buffer = FrameBuffer()
    buffer.feed(b"\xff\xff\xff\xff\x00\x00\x00\x00")
    with pytest.raises(FrameError, match="over the size limit"):
        buffer.next()
    buffer = FrameBuffer()
    buffer.feed(encode_frame({"type": "ready", "identity": {}, "batch_measure": False, "execution_limit_s": 1,
                              "run_limit_s": 2, "files": []}, [b"ab", b"c"])[:-1])
    assert buffer.next() is None
    buffer.feed(b"c")
    assert buffer.next() == ({"type": "ready", "identity": {}, "batch_measure": False, "execution_limit_s": 1,
                              "run_limit_s": 2, "files": [], "blobs": [2, 1]}, [b"ab", b"c"])


def test_fault_dumps_and_sanitizer_reports_are_parsed():
    dump = ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n"
            '  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at\n'
            '  File "/t/bad.py", line 11 in parse\n  File "/x/tracer.py", line 108 in execute\n\nExtension modules: z\n')
    assert [f.where() for f in dump_frames(dump, ["/t/bad.py"])] == ["bad.py:parse:11"]
    assert [f.function for f in dump_frames(dump)] == ["string_at", "parse", "execute"]
    assert dump_frames("no dump here") == []
    assert sanitizer_summary("==1==ERROR\nSUMMARY: AddressSanitizer: SEGV t.c:3 in f\n") == "AddressSanitizer: SEGV t.c:3 in f"
    assert sanitizer_summary("SUMMARY: nothing sanitary\n") is None


def test_a_child_the_target_killed_is_forked_again_from_the_server_without_a_new_import(tmp_path):
    """The fork server imported the target once: every replacement child is its fork."""
    imports = tmp_path / "imports"
    path = tmp_path / "crashy.py"
    path.write_text(textwrap.dedent(f'''
        import os
        with open({str(imports)!r}, "a") as log:
            log.write(f"{{os.getpid()}}\\n")

        def parse(data: bytes) -> str:
            if data[:1] == b"K":
                os.kill(os.getpid(), 9)
            return "ok"
    '''))
    sandbox = create("concolic", f"{path}:parse", scratch=tmp_path)  # isolated: tmp_path is its writable directory
    try:
        server = sandbox._proc.pid
        children = set()
        for _ in range(3):
            assert sandbox.measure(b"ok").outcome.kind == "ok"
            children.add(sandbox._pid)
            killed = sandbox.measure(b"K")
            assert (killed.outcome.kind, killed.outcome.signature) == ("crash", "SIGKILL")
        assert len(children) == 3 and sandbox._proc.pid == server
        with open(f"/proc/{server}/stat") as stat:
            assert int(stat.read().rsplit(")", 1)[1].split()[1]) == os.getpid()
        assert imports.read_text().split() == ["1"], "the target was imported again"  # PID 1 of its namespace: the server
    finally:
        sandbox.close()
    assert sandbox._proc is None


def test_the_branch_record_reaches_the_child_and_a_replacement_child_gets_all_of_it(tmp_path):
    """Edge order (core.master.branches): what the executor was handed goes to the child with its next
    run; a child forked after a death is handed the whole record again, so it prunes as before."""
    path = tmp_path / "gate.py"
    path.write_text(textwrap.dedent('''
        import os

        def parse(data: bytes) -> str:
            if data[:1] == b"K":
                os.kill(os.getpid(), 9)
            if data[1:2] == b"x":
                return "x"
            return "ok"
    '''))
    options = {"mutations": 0, "run_timeout_s": 600}
    sandbox = create("concolic", f"{path}:parse", options, scratch=tmp_path)
    try:
        sandbox.learn([])
        first = sandbox.run(b"ab")
        assert first.candidates and first.tried
        other = create("concolic", f"{path}:parse", options, scratch=tmp_path)
        try:
            other.learn(first.tried)
            assert other.run(b"ab").candidates == []  # every branch of the path was tried elsewhere
            child = other._pid
            assert other.measure(b"K").outcome.signature == "SIGKILL"  # the child dies; another is forked
            again = other.run(b"ab")
            assert other._pid != child and again.candidates == [] and again.notes["skipped_tried"]
        finally:
            other.close()
    finally:
        sandbox.close()
