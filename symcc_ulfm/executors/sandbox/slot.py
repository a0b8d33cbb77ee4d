"""The execution slot: which input a sandbox child is executing, kept in memory it shares with
its parent.

A hybrid run executes hundreds of mutants a second; announcing each one over the reply pipe
would cost a frame, a write and a wake-up of the parent per execution. Instead the child writes
the slot (a ``memfd`` the parent created and passed down with the child's pipes) before and after
each target execution, and the parent reads it only when it needs to: after the child died (the
slot is then final) and when it wakes to bound the current execution by its start time.

Layout: a header (sequence number, state, start time, length) and room for :data:`CAPACITY`
bytes of input. After an execution the child marks the slot idle *after* that input
(:data:`AFTER`: the state of the execution plus ``AFTER``, the input left in place), so that a child
that dies between executions (a target that closed the child's pipes, or broke its interpreter
state) is still known to have died of the input it executed last. The sequence number is odd
while the child writes (a seqlock): a reader that sees it odd, or changed across its read, reads
again. ``started`` is ``time.monotonic()``,
``CLOCK_MONOTONIC``, which every process of the machine shares. An input longer than
:data:`CAPACITY` is not copied: the child announces it with an ``exec`` frame on its reply pipe
and marks the slot :data:`FRAMED`.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import weakref
from dataclasses import dataclass

HEADER = struct.Struct("<QQdQ")  # sequence, state, started, length
CAPACITY = 1 << 20
IDLE, OWN, COPIED, FRAMED = 0, 1, 2, 3  # between executions; the request's own input; in the slot; in a frame
AFTER = 4  # added to OWN, COPIED or FRAMED: idle, after an execution of that input
_READ_TRIES = 1000
SIZE = HEADER.size + CAPACITY
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value


def _map(fd: int) -> tuple[int, memoryview]:
    """``fd`` mapped shared, by libc's ``mmap``: Python's ``mmap`` keeps a duplicate of the
    descriptor open, which a child's target could then write through."""
    address = _libc.mmap(None, SIZE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    if address in (None, _MAP_FAILED):
        err = ctypes.get_errno()
        raise OSError(err, f"mmap of the execution slot: {os.strerror(err)}")
    return address, memoryview((ctypes.c_char * SIZE).from_address(address)).cast("B")


def _unmap(address: int, view: memoryview) -> None:
    view.release()
    _libc.munmap(address, SIZE)


@dataclass(frozen=True)
class Snapshot:
    sequence: int
    state: int
    started: float
    data: bytes | None  # the input, when the state is COPIED

    @property
    def idle(self) -> bool:
        return self.state == IDLE or self.state > AFTER

    @property
    def last(self) -> int:
        """OWN, COPIED or FRAMED: the input executing, or executed last (IDLE: none)."""
        return self.state - AFTER if self.state > AFTER else self.state


class Slot:
    """A mapping of the slot ``fd``: :meth:`create` makes one (the parent, which keeps the
    descriptor to pass down); a child maps the descriptor it was given and closes it."""

    def __init__(self, fd: int, owned: bool = False):
        self._address, self._map = _map(fd)
        self._sequence = HEADER.unpack_from(self._map)[0]
        self.fd = fd if owned else -1
        self._closer = weakref.finalize(self, os.close, fd) if owned else None

    @classmethod
    def create(cls) -> Slot:
        """A new, zeroed (idle) slot in a close-on-exec ``memfd``."""
        fd = os.memfd_create("symcc-ulfm-slot", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, SIZE)
            return cls(fd, owned=True)
        except OSError:
            os.close(fd)
            raise

    # the child's side
    def write(self, state: int, started: float, data: bytes = b"") -> None:
        sequence = self._sequence + 1
        HEADER.pack_into(self._map, 0, sequence, state, started, len(data))  # odd: being written
        if data:
            self._map[HEADER.size:HEADER.size + len(data)] = data
        self._sequence = sequence + 1
        HEADER.pack_into(self._map, 0, self._sequence, state, started, len(data))

    def ended(self) -> None:
        """The execution announced last is over: idle after it, its input left in place."""
        sequence, state, started, length = HEADER.unpack_from(self._map)
        if state in (OWN, COPIED, FRAMED):
            self._sequence = sequence + 1
            HEADER.pack_into(self._map, 0, self._sequence, state, started, length)  # odd: being written
            self._sequence += 1
            HEADER.pack_into(self._map, 0, self._sequence, state + AFTER, started, length)

    # the parent's side
    def reset(self) -> None:
        """Idle again, before a new child gets the slot (its sequence continues from here)."""
        HEADER.pack_into(self._map, 0, 0, IDLE, 0.0, 0)

    def read(self) -> Snapshot | None:
        """A consistent snapshot; None when the writer was caught mid-write every time (it died
        there, or is descheduled there: either way no target code of its runs)."""
        for _ in range(_READ_TRIES):
            sequence, state, started, length = HEADER.unpack_from(self._map)
            if sequence % 2:
                continue
            copied = state in (COPIED, COPIED + AFTER) and length <= CAPACITY
            data = bytes(self._map[HEADER.size:HEADER.size + length]) if copied else None
            if HEADER.unpack_from(self._map)[0] == sequence:
                return Snapshot(sequence, state, started, data)
        return None

    def close(self) -> None:
        if self._address is not None:
            _unmap(self._address, self._map)
            self._address = None
        if self._closer is not None:
            self._closer()


__all__ = ["AFTER", "CAPACITY", "COPIED", "FRAMED", "IDLE", "OWN", "Slot", "Snapshot"]
