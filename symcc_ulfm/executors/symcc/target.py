"""What a SymCC target is made of, read before anything runs (for ``executors.symcc.adapter``).

A binary compiled by SymCC calls into SymCC's runtime library (``libsymcc-rt.so``): the compiler
pass inserts calls to ``_sym_*`` functions, starting with ``_sym_initialize`` from a constructor,
and the wrapper links the runtime dynamically with a RUNPATH to its build directory. So a binary
is taken as SymCC-instrumented when its dynamic symbol table imports ``_sym_initialize``, and its
runtime is the library among its direct dependencies (``DT_NEEDED``) that defines it, at the path
the dynamic loader resolves (``ldd``: RUNPATH/RPATH, ``LD_LIBRARY_PATH``, the loader cache) with
the environment the target will run with. The runtime decides what a run produces as much as the
binary does, so its SHA-256 is part of the executor identity.

The ELF reader below reads only what that needs: section headers, ``SHT_DYNSYM`` with its string
table, and ``DT_NEEDED`` entries of ``SHT_DYNAMIC``; 32/64-bit, either byte order.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from dataclasses import dataclass

from ...errors import TargetError

RUNTIME_ENTRY = "_sym_initialize"
SHT_DYNAMIC, SHT_DYNSYM = 6, 11
DT_NEEDED = 1
LDD_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Dynamic:
    """The dynamic linking view of one ELF file."""

    imports: frozenset[str]  # undefined dynamic symbols
    exports: frozenset[str]  # defined dynamic symbols
    needed: tuple[str, ...]  # DT_NEEDED, in order


class NotElf(ValueError):
    pass


def read_dynamic(data: bytes) -> Dynamic:
    """The dynamic symbols and DT_NEEDED entries of an ELF file's bytes (NotElf otherwise)."""
    if data[:4] != b"\x7fELF" or len(data) < 52 or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise NotElf("not an ELF file")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    try:
        if wide:
            shoff, shentsize, shnum = struct.unpack_from(order + "40xQ10xHH", data)
            section = order + "4xIQQQQIIQQ"  # type, flags, addr, offset, size, link, ... entsize
        else:
            shoff, shentsize, shnum = struct.unpack_from(order + "32xI10xHH", data)
            section = order + "4xIIIIIIIII"
        sections = []
        for index in range(shnum):
            kind, _flags, _addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
                section, data, shoff + index * shentsize
            )
            sections.append((kind, offset, size, link, entsize))
        imports, exports, needed = set(), set(), []
        for kind, offset, size, link, entsize in sections:
            if kind not in (SHT_DYNSYM, SHT_DYNAMIC) or not entsize:
                continue
            strings = sections[link]
            if kind == SHT_DYNSYM:
                symbol = order + ("IxxH16x" if wide else "I8xxxH")  # name, (info, other), shndx
                for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
                    name, shndx = struct.unpack_from(symbol, data, at)
                    (exports if shndx else imports).add(_string(data, strings, name))
            else:
                entry = order + ("qQ" if wide else "iI")
                for at in range(offset, offset + size, entsize):
                    tag, value = struct.unpack_from(entry, data, at)
                    if tag == DT_NEEDED:
                        needed.append(_string(data, strings, value))
    except (struct.error, IndexError) as exc:
        raise NotElf(f"truncated or malformed ELF file ({exc})") from None
    return Dynamic(frozenset(imports), frozenset(exports), tuple(needed))


def _string(data: bytes, table: tuple[int, ...], offset: int) -> str:
    start = table[1] + offset
    end = data.index(b"\0", start)
    return data[start:end].decode("utf-8", "replace")


def loader_paths(binary: str, env: dict[str, str]) -> dict[str, str | None]:
    """Library name -> the path the dynamic loader picks for ``binary`` (None: not found), from ``ldd``."""
    ldd = shutil.which("ldd", path=env.get("PATH"))
    if ldd is None:
        raise TargetError("target", "ldd not found: it is needed to find the SymCC runtime the target loads")
    proc = subprocess.run([ldd, binary], env=env, capture_output=True, text=True, timeout=LDD_TIMEOUT_S)
    if proc.returncode != 0:
        raise TargetError("target", f"{binary}: ldd failed ({proc.stderr.strip() or proc.stdout.strip()})")
    paths: dict[str, str | None] = {}
    for line in proc.stdout.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow:
            target = rest.rsplit(" (", 1)[0].strip()
            paths[name] = None if target == "not found" else target
    return paths


def symcc_runtime(binary: str, data: bytes, env: dict[str, str]) -> str:
    """The path of the SymCC runtime ``binary`` loads, or a TargetError saying why it has none."""
    try:
        dynamic = read_dynamic(data)
    except NotElf as exc:
        raise TargetError("target", f"{binary}: {exc}") from None
    if RUNTIME_ENTRY not in dynamic.imports:
        raise TargetError(
            "target",
            f"{binary}: not SymCC-instrumented: it does not import {RUNTIME_ENTRY} from SymCC's runtime "
            "(compile it with SymCC's symcc or sym++ wrapper)",
        )
    paths = loader_paths(binary, env)
    missing = [name for name in dynamic.needed if paths.get(name, "") is None]
    if missing:
        raise TargetError(
            "target",
            f"{binary}: the dynamic loader cannot find {', '.join(missing)} "
            "(searched its RUNPATH/RPATH, LD_LIBRARY_PATH and the loader cache)",
        )
    for name in dynamic.needed:
        path = paths.get(name)
        if path is None:
            continue
        try:
            with open(path, "rb") as handle:
                if RUNTIME_ENTRY in read_dynamic(handle.read()).exports:
                    return path
        except (OSError, NotElf):
            continue
    raise TargetError(
        "target", f"{binary}: imports {RUNTIME_ENTRY}, but none of the libraries it needs defines it"
    )
