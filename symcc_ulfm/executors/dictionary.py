"""User dictionaries in AFL's ``-x`` format (``launch --dictionary``, ``explore --dictionary``): the
one parser and the one form they travel in.

A dictionary is a file of lines, as AFL++ and libFuzzer read one: ``name="value"`` (a name of
letters, digits and ``_``, optionally ``@LEVEL`` as AFL++ allows, which is accepted and ignored),
or a bare ``"value"``; blank lines and ``#`` comments are skipped. Inside the quotes ``\\\\``,
``\\"`` and ``\\xNN`` are escapes and every other character must be printable ASCII, as AFL++
demands. A bad line is a usage error (exit 2) naming ``FILE:LINE``. A *directory* is read as AFL++
reads ``-x DIR``: each regular file (dot-files skipped) is one token, its whole content. Either way
nothing is followed through a symbolic link, and a token has 1 to :data:`MAX_TOKEN` bytes (AFL++'s
``MAX_DICT_FILE``).

It travels as the shared executor option ``dictionary``, ``{"sha256", "tokens"}`` (tokens as hex,
:meth:`Dictionary.option`), so the policy, its SHA-256 and each worker kind's identity name it;
``sha256`` is that of the file (what ``sha256sum`` prints), or for a directory that of its listing
(``name sha256`` lines, by name). The kinds that take it (``Target.uses_dictionary``): the
concolic engine's hybrid phase and the havoc fuzzer insert and overwrite its tokens as havoc
words, beside the words the run saw compared; the afl kind hands it to afl-fuzz as ``-x``
(:func:`afl_text` writes it back in AFL's format).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.canonical import is_sha256_hex
from ..errors import ConfigError, PolicyError

MAX_TOKEN = 128
MAX_TOKENS = 4096
MAX_FILE_BYTES = 4 << 20
OPTION = "dictionary"
_LINE = re.compile(r'(?:([A-Za-z0-9_]+)(?:@([0-9]+))?\s*=\s*)?"(.*)"')
_HEX = re.compile(r"[0-9a-fA-F]{2}")


@dataclass(frozen=True)
class Dictionary:
    tokens: tuple[bytes, ...]
    sha256: str

    def option(self) -> dict[str, Any]:
        """The executor option that carries it (module docstring)."""
        return {"sha256": self.sha256, "tokens": [token.hex() for token in self.tokens]}


def parse(text: bytes, source: str) -> list[bytes]:
    """The tokens of a dictionary file's bytes, in file order without repeats; ConfigError naming
    ``source:LINE`` for a line that is not a token or a comment."""
    tokens: dict[bytes, None] = {}
    for number, raw in enumerate(text.split(b"\n"), 1):
        try:
            line = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise ConfigError(f"{source}:{number}", "a byte that is not ASCII; write it as \\xNN inside the "
                                                    "quotes") from None
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if not match:
            raise ConfigError(f"{source}:{number}", f"{line[:80]!r} is neither name=\"value\", \"value\" nor a "
                                                    "# comment")
        token = _unescape(match[3], f"{source}:{number}")
        if not 0 < len(token) <= MAX_TOKEN:
            raise ConfigError(f"{source}:{number}", f"a token of {len(token)} bytes; 1 to {MAX_TOKEN} allowed")
        tokens[token] = None
    if len(tokens) > MAX_TOKENS:
        raise ConfigError(source, f"{len(tokens)} tokens, more than {MAX_TOKENS}")
    return list(tokens)


def _unescape(body: str, where: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            following = body[i + 1:i + 2]
            if following in ("\\", '"'):
                out += following.encode()
                i += 2
                continue
            if following == "x" and _HEX.fullmatch(body[i + 2:i + 4]):
                out.append(int(body[i + 2:i + 4], 16))
                i += 4
                continue
            raise ConfigError(where, f"bad escape {body[i:i + 4]!r}: only \\\\, \\\" and \\xNN are escapes")
        if char == '"':
            raise ConfigError(where, 'an unescaped " inside the value; write \\"')
        if not 32 <= ord(char) < 127:
            raise ConfigError(where, f"character {ord(char):#04x} in the value; write it as \\xNN")
        out.append(ord(char))
        i += 1
    return bytes(out)


def read_dictionary(path: str | Path, field: str = "--dictionary") -> Dictionary:
    """A dictionary file or directory (module docstring)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        why = "a symbolic link, not followed" if os.path.islink(path) else exc.strerror
        raise ConfigError(field, f"{path}: cannot read it as a dictionary ({why})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return _read_directory(fd, path, field)
        data = _read_regular(fd, path, field)
    finally:
        os.close(fd)
    tokens = parse(data, str(path))
    if not tokens:
        raise ConfigError(field, f"{path} holds no token (name=\"value\" or \"value\" lines)")
    return Dictionary(tuple(tokens), hashlib.sha256(data).hexdigest())


def _read_directory(dir_fd: int, path: Path, field: str) -> Dictionary:
    tokens: dict[bytes, None] = {}
    listing = []
    for name in sorted(n for n in os.listdir(dir_fd) if not n.startswith(".")):
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            raise ConfigError(field, f"{path / name}: cannot read it as a token ({exc.strerror}; links are not "
                                     "followed)") from None
        try:
            data = _read_regular(fd, path / name, field)
        finally:
            os.close(fd)
        if not 0 < len(data) <= MAX_TOKEN:
            raise ConfigError(field, f"{path / name}: a token of {len(data)} bytes; 1 to {MAX_TOKEN} allowed")
        tokens[data] = None
        listing.append(f"{name} {hashlib.sha256(data).hexdigest()}\n")
    if not tokens:
        raise ConfigError(field, f"{path}: a directory with no token file")
    if len(tokens) > MAX_TOKENS:
        raise ConfigError(field, f"{path}: {len(tokens)} tokens, more than {MAX_TOKENS}")
    return Dictionary(tuple(tokens), hashlib.sha256("".join(listing).encode("utf-8", "surrogateescape")).hexdigest())


def _read_regular(fd: int, path: Path, field: str) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(field, f"{path}: not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise ConfigError(field, f"{path}: {info.st_size} bytes, more than a dictionary may have ({MAX_FILE_BYTES})")
    data = os.read(fd, MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(field, f"{path}: grew past {MAX_FILE_BYTES} bytes while read")
    return data


def tokens_of(value: Any, field: str = f"executor_options.{OPTION}") -> tuple[bytes, ...]:
    """The tokens of the ``dictionary`` option (None: none); PolicyError for anything else."""
    if value is None:
        return ()
    if (not isinstance(value, dict) or set(value) != {"sha256", "tokens"} or not is_sha256_hex(value["sha256"])
            or not isinstance(value["tokens"], list) or len(value["tokens"]) > MAX_TOKENS):
        raise PolicyError(field, "expected {\"sha256\": ..., \"tokens\": [hex, ...]} (launch --dictionary FILE "
                                 "writes it)")
    try:
        tokens = tuple(bytes.fromhex(token) for token in value["tokens"])
    except (TypeError, ValueError):
        raise PolicyError(field, "tokens must be hex strings") from None
    if not all(0 < len(token) <= MAX_TOKEN for token in tokens):
        raise PolicyError(field, f"every token has 1 to {MAX_TOKEN} bytes")
    return tokens


def afl_text(tokens: tuple[bytes, ...]) -> bytes:
    """``tokens`` as an AFL ``-x`` file: one ``tN="..."`` line each, escaped as AFL++ reads them."""
    lines = []
    for number, token in enumerate(tokens):
        body = "".join(chr(b) if 32 <= b < 127 and b not in (0x22, 0x5C) else f"\\x{b:02x}" for b in token)
        lines.append(f't{number}="{body}"\n')
    return "".join(lines).encode("ascii")
