"""Input-to-state correspondence for what the engine does not model.

A C function (a checksum, a decompressor, ``binascii``) run on symbolic data returns a value
that the solver cannot reason about. The shadow marks such results *opaque*
(:func:`opaque`): ints, bytes and strs that behave exactly like the plain values, except that
their comparisons (``==``, ``<`` ..., ``startswith``/``endswith``) record both concrete operands
(:func:`.path.compare`); arithmetic on an opaque int stays opaque, so ``crc32(x) & 0xFFFFFFFF`` is
still recognised.

After the run, :func:`propose` looks for each recorded operand in the input, as raw bytes (in
the lower-cased input when a lower-case operand is not in the input as it is: parsers lower-case
names before comparing them), as a 1/2/4/8-byte little- or big-endian integer, in hex or in
decimal ASCII, and proposes the child that holds the *other* operand, in the same encoding, at
that place (RedQueen's idea, here over the comparisons our engine could not follow). Regular
expressions get the same treatment (:func:`regex_pairs`): the text a pattern matched, or failed
to match, is paired with strings the pattern accepts; so do the text comparisons of a run
(:func:`.path.text_compare`): input-derived text with the constant it was compared with. The
executor measures those children in its hybrid phase.
"""

from __future__ import annotations

import operator

from . import path as P
from .constants import regex_samples

_MAX_OCCURRENCES = 64  # occurrences of one needle replaced in the all-replaced child


class _Opaque:
    """Comparisons record their operands; see the module docstring."""

    __slots__ = ()

    def _plain(self):
        raise NotImplementedError

    def _cmp(self, op, other):
        for source in getattr(self, "_sources", ()):
            source.concretize()
        mine = self._plain()
        theirs = other._plain() if isinstance(other, _Opaque) else other
        P.compare(mine, theirs)
        return op(mine, theirs)

    def __eq__(self, other):
        return self._cmp(operator.eq, other)

    def __ne__(self, other):
        return self._cmp(operator.ne, other)

    def __lt__(self, other):
        return self._cmp(operator.lt, other)

    def __le__(self, other):
        return self._cmp(operator.le, other)

    def __gt__(self, other):
        return self._cmp(operator.gt, other)

    def __ge__(self, other):
        return self._cmp(operator.ge, other)

    def __hash__(self) -> int:
        for source in getattr(self, "_sources", ()):
            source.concretize()
        return hash(self._plain())


class OpaqueInt(_Opaque, int):
    def _plain(self) -> int:
        return int(self)


class _Sequence(_Opaque):
    def _affix(self, name: str, affix, *bounds):
        plain = self._plain()
        for one in affix if isinstance(affix, tuple) else (affix,):
            if isinstance(one, type(plain)) and len(one) <= len(plain):
                P.compare(plain[-len(one):] if name == "endswith" and one else plain[:len(one)], one)
        return getattr(type(plain), name)(plain, affix, *bounds)

    def startswith(self, prefix, *bounds):
        return self._affix("startswith", prefix, *bounds)

    def endswith(self, suffix, *bounds):
        return self._affix("endswith", suffix, *bounds)


class OpaqueBytes(_Sequence, bytes):
    def _plain(self) -> bytes:
        return bytes.__getitem__(self, slice(None))


class OpaqueStr(_Sequence, str):
    def _plain(self) -> str:
        return str.__getitem__(self, slice(None))


def rendered(text: str, *sources) -> OpaqueStr:
    """Text rendered from symbolic values (``repr``, ``%``, ``format``) whose pins wait for its use.

    Parsers format the input into error messages that are raised and never read; pinning the input
    there would freeze it for the rest of the run (``ipaddress`` tries IPv4 and formats the text into
    the error before it tries IPv6). The sources are pinned when the text is compared or hashed;
    other reads of a message (its ``str`` methods) are not followed.
    """
    out = OpaqueStr(text)
    out._sources = sources
    return out


def _keep(name: str):
    method = getattr(int, name)

    def arithmetic(self, *args):
        result = method(int(self), *(int(a) if isinstance(a, OpaqueInt) else a for a in args))
        return OpaqueInt(result) if type(result) is int else result

    arithmetic.__name__ = name
    return arithmetic


for _name in ("and", "or", "xor", "lshift", "rshift", "add", "sub", "mul", "mod", "floordiv"):
    for _form in (f"__{_name}__", f"__r{_name}__"):
        setattr(OpaqueInt, _form, _keep(_form))
for _form in ("__neg__", "__invert__", "__abs__"):
    setattr(OpaqueInt, _form, _keep(_form))


def opaque(value):
    """``value`` marked as computed by unmodelled code from input (one level into tuples/lists)."""
    if type(value) is int:
        return OpaqueInt(value)
    if type(value) is bytes:
        return OpaqueBytes(value)
    if type(value) is str:
        return OpaqueStr(value)
    if type(value) in (tuple, list):
        return type(value)(opaque(v) for v in value)
    return value


def _int_encodings(value: int) -> dict[str, bytes]:
    """The encodings of an int that could stand in the input, keyed by encoding name."""
    out = {}
    for width in (1, 2, 4, 8):
        for signed in (False, True):
            try:
                for order in ("little", "big"):
                    out[f"{order}{width}{'s' if signed else ''}"] = value.to_bytes(width, order, signed=signed)
            except OverflowError:
                continue
    out["dec"] = str(value).encode()
    if value >= 0:
        out["hex"] = format(value, "x").encode()
        out["HEX"] = format(value, "X").encode()
    return out


def _encodings(value) -> dict[str, bytes]:
    if isinstance(value, bool):
        return {}
    if isinstance(value, int):
        return _int_encodings(int(value))
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        return {"raw": raw, "hex": raw.hex().encode()} if raw else {}
    return {}


def propose(data: bytes, compares: list, limit: int, per_needle: int = 4, directed: bool = False) -> list[bytes]:
    """Children that put one operand of a recorded comparison where the other occurs in ``data``
    (``directed``: only the right operand where the left one occurs)."""
    children: list[bytes] = []
    seen = {data}
    for _site, left, right in compares:
        if left == right:
            continue
        for found, wanted in ((left, right),) if directed else ((left, right), (right, left)):
            theirs = _encodings(wanted)
            for name, needle in _encodings(found).items():
                swap = theirs.get(name)
                if swap is None:
                    continue
                lower = name == "raw" and needle not in data and needle == needle.lower()
                for child in _replacements(data, data.lower() if lower else data, needle, swap, per_needle):
                    if child not in seen:
                        seen.add(child)
                        children.append(child)
                        if len(children) >= limit:
                            return children
    return children


def _replacements(data: bytes, haystack: bytes, needle: bytes, swap: bytes, per_needle: int) -> list[bytes]:
    """``data`` with ``swap`` in place of each of the first ``per_needle`` occurrences of ``needle``
    in ``haystack`` (``data`` or its lower-cased form), then, for a needle longer than a byte, in
    place of all of them when there are several (a name that opens and closes an element)."""
    out, pieces, last, count, pos = [], [], 0, 0, haystack.find(needle)
    while pos >= 0 and count < _MAX_OCCURRENCES:
        if len(out) < per_needle:
            out.append(data[:pos] + swap + data[pos + len(needle):])
        if pos >= last:  # occurrences may overlap; the all-replaced child takes them left to right
            pieces += [data[last:pos], swap]
            last, count = pos + len(needle), count + 1
        pos = haystack.find(needle, pos + 1)
    if count > 1 and len(needle) > 1:
        out.append(b"".join(pieces) + data[last:])
    return out


def regex_pairs(matches) -> list[tuple[int, object, object]]:
    """Comparisons for :func:`propose` from the regex matches of a run (:func:`.path.regex`): a
    match's text against each sample of its pattern (:func:`.constants.regex_samples`), so that the
    child holds another form the pattern accepts (a matched number as hex or with an exponent);
    a failed match's text, as long as the sample, against the sample, so that the child matches."""
    pairs = []
    for (pattern, flags), text, length in matches:
        for sample in regex_samples(pattern, flags):
            if type(sample) is not type(text):
                continue
            region = text[:length] if length is not None else text[:len(sample)]
            if region and region != sample:
                pairs.append((0, region, sample))
    return pairs


__all__ = ["OpaqueBytes", "OpaqueInt", "OpaqueStr", "opaque", "propose", "regex_pairs", "rendered"]
