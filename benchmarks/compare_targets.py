"""The harness directories of the comparison study's C targets (``protocols/compare/hybrid-*.json``),
one per target, each as ``symcc-ulfm compare --harnesses DIR`` finds it (``DIR/<name>/harness.json``).

    python -m benchmarks.compare_targets --out DIR [--only a,b] [--cache DIR]

Targets (:data:`TARGETS`): the five of ``bench_hybrid.py``'s full mode (``hdr_opcode``,
``tlv_records``, ``crash_dispatch`` of ``c_targets/``; ``libpng`` and ``cjson``, Debian source
packages with our harnesses of ``c_targets/harnesses/``), programs with a ``main`` that reads the
input on standard input (``args`` ``[]``), with ``bench_hybrid.targets()``'s seeds; and the three
OSS-Fuzz harnesses of ``bench_harness.py`` as ``oss-cjson``, ``oss-libpng`` and ``oss-expat``,
with the seeds their packages ship. ``symcc-ulfm build`` makes every one from its source and its
library's C files (``bench_harness``: ``symcc_build``, ``make_harness``), so each directory holds
the builds of ``harness.directory.BUILDS`` as it makes them: ``afl``, ``cmplog``, ``sanitizer``,
and ``symcc`` when SymCC's compiler wrapper is there (``SYMCC_CC``, else :data:`SYMCC_DEFAULT`
when it exists); the dictionary (the harness's own tokens: ``c_targets/NAME.dict``, a format's
magic, or an OSS-Fuzz harness's ``.dict``; then the constants afl-cc's ``AFL_LLVM_DICT2FILE``
extracted, the library's included); ``seeds/``; the manifest, which also names the Debian source
packages and their versions. Every system of the study uses the dictionary: AFL++ as ``-x
@dictionary``, a campaign through ``launch --harness``.

A directory is built under a dot name and renamed when complete; one that reads back
(``harness.directory.read``: its manifest, every build's SHA-256) is kept as it is, so a second
run builds nothing (remove a directory to build it anew, e.g. after its sources changed); a link
or a file in its place, or one that does not read back, is replaced. For every target it prints
the packages and versions and each build's SHA-256. The packages' sources are cached where
``bench_hybrid.py`` keeps them (``--cache``).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_harness, bench_hybrid, c_bench  # noqa: E402
from benchmarks.c_libraries import LibraryUnavailable  # noqa: E402
from symcc_ulfm.errors import SymccUlfmError  # noqa: E402
from symcc_ulfm.harness import directory  # noqa: E402

SYMCC_DEFAULT = Path("/work/scratch/symcc-build/symcc")  # benchmarks/README.md, "How SymCC was built"
OSS_PREFIX = "oss-"
PROGRAMS = tuple(bench_hybrid.FULL["targets"].split(","))
OSS = tuple(OSS_PREFIX + name for name in bench_harness.TARGETS.split(","))
TARGETS = (*PROGRAMS, *OSS)
STAGING = "."  # a directory being built is DIR/.<name>


def symcc_compiler() -> str | None:
    """SymCC's compiler wrapper: ``SYMCC_CC``, else :data:`SYMCC_DEFAULT` when it is there, else None."""
    given = os.environ.get("SYMCC_CC")
    if given:
        return given
    return str(SYMCC_DEFAULT) if SYMCC_DEFAULT.is_file() else None


def build_program(target: bench_hybrid.Target, root: Path, symcc_cc: str | None, cache: Path, log) -> None:
    """The harness directory ``root`` (new) of a ``main`` program of ``bench_hybrid``, made by
    ``symcc-ulfm build`` from its source and its library's C files (``bench_harness.library_files``)
    with its own dictionary (``c_targets/NAME.dict``) when it has one: the program's ``main`` leaves
    every build's fuzzing-engine driver unlinked (nothing refers to it), so the input is on standard
    input, ``args`` ``[]`` (``build`` writes ``["-"]``, a driver's notation); its seeds are
    ``bench_hybrid``'s."""
    files, flags, versions = bench_harness.library_files(target.library, cache, log) if target.library \
        else ([], [], {})
    own = c_bench.SOURCES / f"{target.name}.dict"
    bench_harness.symcc_build(root, [f"--cflags={shlex.join(flags)}", "--name", target.name,
                                     *(["--dictionary", str(own)] if own.is_file() else []),
                                     *(["--symcc", symcc_cc] if symcc_cc else []),
                                     str(target.harness), *map(str, files)], log)
    complete(root, list(target.seeds), versions, args=[], main=f"{target.harness.name}'s own (input on stdin)")


def build_oss(name: str, root: Path, symcc_cc: str | None, cache: Path, log) -> None:
    """The harness directory ``root`` (new) of an OSS-Fuzz harness of ``bench_harness``, made by
    ``symcc-ulfm build``, with the seeds its package ships."""
    files, versions = bench_harness.make_harness(name.removeprefix(OSS_PREFIX), {}, root, cache, log, symcc_cc)
    complete(root, [path.read_bytes() for path in files], versions, seeds_from=sorted(map(str, files)))


def complete(root: Path, seeds: list[bytes], versions: dict[str, str], args: list[str] | None = None,
             **noted: object) -> None:
    """The harness directory ``build`` made in ``root`` with ``seeds/`` and the manifest rewritten
    to name them, the Debian packages' ``versions`` and ``noted``, and ``args`` when given."""
    harness = directory.read(root)
    (root / "seeds").mkdir()
    for number, data in enumerate(seeds):
        (root / "seeds" / f"seed{number:04d}").write_bytes(data)
    directory.write(dataclasses.replace(harness, args=harness.args if args is None else args, seeds="seeds",
                                        source={**harness.source, "packages": versions, **noted}))


def ensure(name: str, out: Path, symcc_cc: str | None, cache: Path, log) -> tuple[directory.Harness, bool]:
    """The harness directory ``out/<name>``: kept when it reads back, else built (under a dot name,
    renamed when complete); the harness and whether it was built now."""
    root = out / name
    if root.is_symlink() or (root.exists() and not root.is_dir()):  # never read through a link
        log(f"{name}: {root} is no directory (a link or a file); building it again")
        root.unlink()
    elif root.exists():
        try:
            return directory.read(root), False
        except (SymccUlfmError, OSError) as error:
            log(f"{name}: {root} is no valid harness directory ({error}); building it again")
            shutil.rmtree(root)
    staging = out / f"{STAGING}{name}"
    if staging.is_symlink() or staging.is_file():
        staging.unlink()
    elif staging.exists():
        shutil.rmtree(staging)
    if name in PROGRAMS:
        build_program(bench_hybrid.targets()[name], staging, symcc_cc, cache, log)
    else:
        build_oss(name, staging, symcc_cc, cache, log)
    staging.rename(root)
    return directory.read(root), True


def describe(harness: directory.Harness, fresh: bool) -> list[str]:
    """What is printed of a harness directory: its packages, seeds, dictionary and builds."""
    packages = harness.source.get("packages") or {}
    seeds = harness.file(harness.seeds)
    count = sum(1 for p in seeds.iterdir() if p.is_file()) if seeds is not None and seeds.is_dir() else 0
    tokens = 0
    if harness.dictionary is not None:
        tokens = sum(1 for line in harness.file(harness.dictionary).read_bytes().splitlines() if line.strip())
    not_built = harness.source.get("not_built") or {}
    lines = [f"{harness.root.name}: {'built' if fresh else 'kept'} {harness.root}; packages: "
             + (", ".join(f"{p} {v} (Debian source)" for p, v in sorted(packages.items())) or "none (c_targets/)")
             + f"; {count} seeds; dictionary {harness.dictionary or '-'} ({tokens} tokens)"]
    lines += [f"  {kind:<9} {b.sha256}  {b.path}" for kind, b in sorted(harness.builds.items())]
    lines += [f"  {kind:<9} not built: {why}" for kind, why in sorted(not_built.items())]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the directory of harness directories")
    parser.add_argument("--only", default=",".join(TARGETS), help=f"comma separated, from {','.join(TARGETS)}")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "hybrid-cache",
                        help="the Debian packages' sources, kept between runs (bench_hybrid.py's cache)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets {unknown}; known: {', '.join(TARGETS)}")
    symcc_cc = symcc_compiler()
    out = args.out.absolute()
    out.mkdir(parents=True, exist_ok=True)

    def log(text: str) -> None:
        print(f"compare_targets: {text}", flush=True)

    log(f"out {out}; SYMCC_CC={symcc_cc or '-'}; cache {args.cache.resolve()}")
    failed = []
    for name in names:
        try:
            harness, fresh = ensure(name, out, symcc_cc, args.cache.resolve(), log)
        except (LibraryUnavailable, RuntimeError, SymccUlfmError, subprocess.TimeoutExpired) as error:
            failed.append(name)
            log(f"{name}: NOT BUILT: {error}")
            continue
        print("\n".join(describe(harness, fresh)), flush=True)
    if failed:
        log(f"not built: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
