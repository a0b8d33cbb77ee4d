"""The execution slot: what a sandbox child writes before and after each target execution, read
by its parent from shared memory (a real memfd, mapped twice; a real fork for the cross-process case)."""

from __future__ import annotations

import os
import threading

from symcc_ulfm.executors.sandbox import slot as S
from symcc_ulfm.executors.sandbox.child import Child
from symcc_ulfm.executors.sandbox.frames import FrameBuffer


def test_what_one_mapping_writes_the_other_reads():
    parent = S.Slot.create()
    child = S.Slot(os.dup(parent.fd))
    try:
        assert parent.read().idle
        child.write(S.COPIED, 12.5, b"mutant")
        seen = parent.read()
        assert (seen.state, seen.started, seen.data) == (S.COPIED, 12.5, b"mutant")
        child.write(S.OWN, 13.0)
        again = parent.read()
        assert again.state == S.OWN and again.data is None and again.sequence > seen.sequence
        parent.reset()
        assert parent.read().idle
    finally:
        child.close()
        parent.close()


def test_a_slot_caught_mid_write_reads_as_unknown():
    slot = S.Slot.create()
    try:
        S.HEADER.pack_into(slot._map, 0, 7, S.OWN, 1.0, 0)  # an odd sequence: the writer never finished
        assert slot.read() is None
    finally:
        slot.close()


def test_a_forked_child_writes_what_the_parent_reads_after_it_died():
    slot = S.Slot.create()
    try:
        pid = os.fork()
        if pid == 0:
            mine = S.Slot(slot.fd)
            mine.write(S.COPIED, 1.0, b"the input that killed me")
            os._exit(0)
        os.waitpid(pid, 0)
        assert slot.read().data == b"the input that killed me"
    finally:
        slot.close()


def test_an_input_longer_than_the_slot_is_announced_in_a_frame():
    slot = S.Slot.create()
    r, w = os.pipe()
    try:
        announce = Child(-1, w, None, slot).announcer(b"own")
        big = bytes(S.CAPACITY + 1)
        frames = []

        def read_one():  # the frame is larger than a pipe holds: read it while it is written
            buffer = FrameBuffer()
            while (frame := buffer.next()) is None:
                buffer.feed(os.read(r, 1 << 20))
            frames.append(frame)

        reader = threading.Thread(target=read_one)
        reader.start()
        announce(big)
        reader.join(30)
        assert slot.read().state == S.FRAMED
        [(message, blobs)] = frames
        assert message["type"] == "exec" and blobs == [big]
        announce(b"own")
        assert slot.read().state == S.OWN
        announce(None)
        assert slot.read().idle
    finally:
        os.close(r)
        os.close(w)
        slot.close()
