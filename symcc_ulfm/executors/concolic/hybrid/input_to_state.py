"""Input-to-state correspondence: children that put a compared operand where the other one occurs.

A symbolic run records the concrete operands of comparisons the engine could not follow: those
of opaque values (:mod:`..values.opaque`, results of unmodelled code run on input). After the
run, :func:`propose` looks for each recorded operand in the input, as raw bytes (in
the lower-cased input when a lower-case operand is not in the input as it is: parsers lower-case
names before comparing them), as a 1/2/4/8-byte little- or big-endian integer, in hex or in
decimal ASCII, and proposes the child that holds the *other* operand, in the same encoding, at
that place (RedQueen's idea, here over the comparisons our engine could not follow). Regular
expressions get the same treatment (:func:`regex_pairs`): the text a pattern matched, or failed
to match, is paired with strings the pattern accepts; so do the text comparisons of a run
(:func:`..expressions.path.text_compare`): input-derived text with the constant it was compared
with. The executor measures those children in its hybrid phase.
"""

from __future__ import annotations

from .module_words import regex_samples

_MAX_OCCURRENCES = 64  # occurrences of one needle replaced in the all-replaced child


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
    """Comparisons for :func:`propose` from the regex matches of a run (:func:`..expressions.path.regex`): a
    match's text against each sample of its pattern (:func:`.module_words.regex_samples`), so that the
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


__all__ = ["propose", "regex_pairs"]
