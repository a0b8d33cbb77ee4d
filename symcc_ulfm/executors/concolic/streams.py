"""Reading symbolic buffers through ``io.BytesIO`` and ``memoryview``.

:class:`SymBytesIO` is a real ``io.BytesIO`` (its C object always holds the true position and
content, so every unmodelled method stays right) that also keeps the symbolic buffer: ``read``,
``read1``, ``readline``, ``readlines`` and iteration return slices of it, so a short read at the
end has a length that depends on the input's length (a branch that lengthens the input).
``seek`` relative to the end pins the length; writing pins the buffer and ends the modelling.

A ``memoryview`` cannot be subclassed, so views of a symbolic buffer are real memoryviews
registered for the run (:func:`view_of`); the shadow's subscript and ``bytes()`` hooks look them
up (:func:`symbolic_buffer`), and other readers see the concrete bytes.
"""

from __future__ import annotations

import io

from . import expr as E
from . import path as P
from .symbolic import concrete
from .symbytes import SymBytes

_views: dict[int, tuple[memoryview, SymBytes, int]] = {}


def clear_views() -> None:
    """Forget the views of a finished run."""
    _views.clear()


def view_of(source) -> memoryview:
    """``memoryview(source)``; a view of a symbolic buffer is registered for the run."""
    view = memoryview(source)
    if isinstance(source, SymBytes):
        _views[id(view)] = (view, source, 0)
    return view


def symbolic_buffer(obj) -> SymBytes | None:
    """The symbolic bytes behind ``obj`` (a SymBytes or a registered view), else None."""
    if isinstance(obj, SymBytes):
        return obj
    hit = _views.get(id(obj)) if isinstance(obj, memoryview) else None
    if hit is None or hit[0] is not obj:
        return None
    view, source, offset = hit
    return source[offset: offset + view.nbytes]


def view_item(view: memoryview, key):
    """``view[key]`` for a registered view: an element, or a registered sub-view."""
    hit = _views.get(id(view))
    if hit is None or hit[0] is not view or view.format != "B":
        return None
    _, source, offset = hit
    if isinstance(key, slice):
        start, stop, step = key.indices(len(view))
        sub = view[key]
        if step == 1:
            _views[id(sub)] = (sub, source, offset + start)
        return sub
    index = concrete(key)
    view[index]  # raises IndexError exactly as the view would
    return source._e[offset + (index if index >= 0 else index + len(view))]


class SymBytesIO(io.BytesIO):
    """An ``io.BytesIO`` over a symbolic buffer; see the module docstring."""

    def __init__(self, initial_bytes=b""):
        super().__init__(initial_bytes._plain())
        self._sym: SymBytes | None = initial_bytes

    def _give_up(self) -> None:
        if self._sym is not None:
            self._sym.concretize()
            self._sym = None

    def _take(self, start: int, plain: bytes, size):
        if self._sym is None:
            return plain
        if size is None or size < 0:
            return self._sym[start:]
        return self._sym[start: start + size]

    def read(self, size=-1):
        size = -1 if size is None else concrete(size)
        start = self.tell()
        return self._take(start, super().read(size), size)

    def read1(self, size=-1):
        return self.read(size)

    def readline(self, size=-1):
        size = -1 if size is None else concrete(size)
        start = self.tell()
        line = super().readline(size)
        if self._sym is None:
            return line
        end = len(self._sym._e) if size < 0 else min(len(self._sym._e), start + size)
        found = self._sym.find(b"\n", start, end)
        if found >= 0:
            return self._sym[start: found + 1]
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

    def getbuffer(self):
        self._give_up()
        return super().getbuffer()

    def readinto(self, buffer):
        self._give_up()
        return super().readinto(buffer)

    def write(self, data):
        self._give_up()
        return super().write(data.concretize() if isinstance(data, SymBytes) else data)

    def writelines(self, lines):
        self._give_up()
        return super().writelines(line.concretize() if isinstance(line, SymBytes) else line for line in lines)

    def truncate(self, size=None):
        self._give_up()
        return super().truncate(None if size is None else concrete(size))


__all__ = ["SymBytesIO", "clear_views", "symbolic_buffer", "view_item", "view_of"]
