"""Models of ``io``: ``io.BytesIO`` and ``io.StringIO`` over symbolic buffers.

:class:`SymBytesIO` is a real ``io.BytesIO`` (its C object always holds the true position and
content, so every unmodelled method stays right) that also keeps the symbolic buffer: ``read``,
``read1``, ``readline``, ``readlines`` and iteration return slices of it, so a short read at the
end has a length that depends on the input's length (a branch that lengthens the input).
``seek`` relative to the end pins the length; writing pins the buffer and ends the modelling.
:class:`SymStringIO` does the same for ``io.StringIO`` over a symbolic str (default newline).

In an instrumented module, ``io.BytesIO`` and ``io.StringIO`` (imported by name or reached
through a guarded ``io``) are the shims :class:`BytesIOShim` and :class:`StringIOShim`, which
make the symbolic streams for symbolic buffers (a registered ``memoryview`` too, see
:func:`.builtinslib.symbolic_buffer`) and real ones otherwise.
"""

from __future__ import annotations

import io

from ..expressions import expr as E
from ..expressions import path as P
from ..values.conditions import concrete_value, disjunction
from ..values.seq import SymSequence, concrete_deep
from ..values.symbolic import concrete
from ..values.symstr import SymStr
from .builtinslib import symbolic_buffer
from .registry import ShimMeta, register
from .unmodelled import GuardedModule


class _SymStream:
    """What SymBytesIO and SymStringIO share: reads are slices of the symbolic buffer at the C position."""

    _sym: SymSequence | None
    _breaks: tuple[int, ...] = (0x0A,)

    def _give_up(self) -> None:
        if self._sym is not None:
            self._sym.concretize()
            self._sym = None

    def read(self, size=-1):
        size = -1 if size is None else concrete(size)
        start = self.tell()
        plain = super().read(size)
        if self._sym is None:
            return plain
        return self._sym[start:] if size < 0 else self._sym[start: start + size]

    def readline(self, size=-1):
        size = -1 if size is None else concrete(size)
        start = self.tell()
        line = super().readline(size)
        if self._sym is None:
            return line
        elems, stop = self._sym._e, start + len(line)
        for pos in range(start, stop):
            e = elems[pos]
            if disjunction(e == mark for mark in self._breaks):
                if e == 0x0D and pos + 1 < stop and elems[pos + 1] == 0x0A:
                    pos += 1
                return self._sym[start: pos + 1]
        return self._sym[start:] if size < 0 else self._sym[start: start + size]

    def readlines(self, hint=-1):
        hint = -1 if hint is None else concrete(hint)
        lines, total = [], 0
        while True:
            line = self.readline()
            if not line:
                return lines
            lines.append(line)
            total += len(line)
            if 0 < hint <= total:
                return lines

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def seek(self, pos, whence=0):
        whence = concrete(whence)
        if whence == 2 and self._sym is not None and isinstance(self._sym._len, E.Node):
            P.pin(self._sym._len)
        return super().seek(concrete(pos), whence)

    def getvalue(self):
        return self._sym if self._sym is not None else super().getvalue()

    def write(self, data):
        self._give_up()
        return super().write(data.concretize() if isinstance(data, SymSequence) else data)

    def writelines(self, lines):
        self._give_up()
        return super().writelines(x.concretize() if isinstance(x, SymSequence) else x for x in lines)

    def truncate(self, size=None):
        self._give_up()
        return super().truncate(None if size is None else concrete(size))


class SymBytesIO(_SymStream, io.BytesIO):
    """An ``io.BytesIO`` over a symbolic buffer; see the module docstring."""

    def __init__(self, initial_bytes=b""):
        super().__init__(initial_bytes._plain())
        self._sym = initial_bytes

    def read1(self, size=-1):
        return self.read(size)

    def getbuffer(self):
        self._give_up()
        return super().getbuffer()

    def readinto(self, buffer):
        self._give_up()
        return super().readinto(buffer)


class SymStringIO(_SymStream, io.StringIO):
    """An ``io.StringIO`` that keeps symbolic text, also text written to its end (a line buffer).

    ``newline`` is ``"\\n"`` (the default) or ``""`` (lines end at ``\\n``, ``\\r`` or ``\\r\\n``,
    untranslated); writing anywhere but at the end pins the buffer and ends the modelling.
    """

    def __init__(self, initial_value="", newline="\n"):
        super().__init__(str(initial_value), newline)
        self._breaks = (0x0A,) if newline == "\n" else (0x0A, 0x0D)
        elems = SymStr._elems(initial_value)
        self._sym = SymStr(str.__str__(initial_value) if isinstance(initial_value, SymStr) else initial_value,
                           list(elems))

    def write(self, data):
        if self._sym is None or not isinstance(data, str) or self.tell() != len(self._sym._e):
            return _SymStream.write(self, data)
        theirs = SymStr._elems(data)
        self._sym = SymStr(self._sym._plain() + "".join(map(chr, map(concrete_value, theirs))),
                           self._sym._e + theirs)
        return io.StringIO.write(self, data._plain() if isinstance(data, SymStr) else data)

    def truncate(self, size=None):
        size = self.tell() if size is None else concrete(size)
        if self._sym is not None:
            self._sym = SymStr(self._sym._plain()[:size], self._sym._e[:size])
        return io.StringIO.truncate(self, size)


class BytesIOShim(metaclass=ShimMeta):
    _real = io.BytesIO
    _extra = ()

    def __new__(cls, initial_bytes=b""):
        source = symbolic_buffer(initial_bytes)
        if source is not None:
            return SymBytesIO(source)
        return io.BytesIO(concrete_deep(initial_bytes))


class StringIOShim(metaclass=ShimMeta):
    _real = io.StringIO
    _extra = ()

    def __new__(cls, initial_value="", newline="\n"):
        if isinstance(initial_value, str) and newline in ("\n", ""):
            return SymStringIO(initial_value, newline)
        return io.StringIO(concrete_deep(initial_value), newline)


def register_models() -> None:
    """``io.BytesIO`` and ``io.StringIO`` become the shims, also as attributes of ``io``."""
    register(io.BytesIO, lambda: BytesIOShim)
    register(io.StringIO, lambda: StringIOShim)
    register(io, lambda: GuardedModule(io, {"BytesIO": BytesIOShim, "StringIO": StringIOShim}))


__all__ = ["BytesIOShim", "StringIOShim", "SymBytesIO", "SymStringIO", "register_models"]
