"""Real C libraries for the benchmarks, obtained as Debian source packages and built from source.

``apt-get source PACKAGE`` (as any user; the deb-src entry is added first when apt has none and
we are root: ``/etc/apt/sources.list.d/bench-hybrid-src.sources``, the same URIs, suites and
components as the enabled Debian ``deb`` entries, then ``apt-get update``) into a cache
directory, once; the version is the one of the unpacked ``debian/changelog``. Each library is
compiled with every build of ``c_bench.BUILDS`` into a static archive (cached by package
version, build kind and the compiler's identity), which a harness of ``c_targets/harnesses/``
links against; ``bench_harness.py`` gives a library's prepared C files (:func:`prepared_source`)
to ``symcc-ulfm build`` with the OSS-Fuzz harness its package ships. Only the library's own C
files are compiled: no configure step, no shared objects, no assembler.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.c_bench import BUILDS, compile_objects, compiler_of

SRC_LIST = Path("/etc/apt/sources.list.d/bench-hybrid-src.sources")


class LibraryUnavailable(RuntimeError):
    """The library's source cannot be obtained here (no deb-src and not root, no network, ...)."""


@dataclass(frozen=True)
class Library:
    package: str  # the Debian source package
    sources: tuple[str, ...]  # C files, relative to the unpacked source
    include: tuple[str, ...] = (".",)  # include directories, relative to it
    flags: tuple[str, ...] = ()
    deps: tuple[str, ...] = ()  # other libraries of LIBRARIES it is compiled and linked with
    libs: tuple[str, ...] = ()  # system libraries a binary linking it needs (-lm)
    prepare: tuple[tuple[str, str], ...] = ()  # files copied inside the source before compiling: (from, to)
    notes: dict = field(default_factory=dict, hash=False, compare=False)


ZLIB_SOURCES = ("adler32.c", "compress.c", "crc32.c", "deflate.c", "infback.c", "inffast.c", "inflate.c",
                "inftrees.c", "trees.c", "uncompr.c", "zutil.c")
PNG_SOURCES = ("png.c", "pngerror.c", "pngget.c", "pngmem.c", "pngpread.c", "pngread.c", "pngrio.c", "pngrtran.c",
               "pngrutil.c", "pngset.c", "pngtrans.c", "pngwio.c", "pngwrite.c", "pngwtran.c", "pngwutil.c")
LIBRARIES = {
    "zlib": Library("zlib", ZLIB_SOURCES, flags=("-DHAVE_UNISTD_H",)),
    # libpng's pnglibconf.h is the prebuilt default configuration; no SIMD filter code.
    "libpng1.6": Library("libpng1.6", PNG_SOURCES, deps=("zlib",), libs=("-lm",),
                         flags=("-DPNG_ARM_NEON_OPT=0", "-DPNG_INTEL_SSE_OPT=0", "-DPNG_POWERPC_VSX_OPT=0",
                                "-DPNG_MIPS_MSA_OPT=0"),
                         prepare=(("scripts/pnglibconf.h.prebuilt", "pnglibconf.h"),)),
    "cjson": Library("cjson", ("cJSON.c",), libs=("-lm",)),
    # expat's expat_config.h is what its configure would find on glibc, as -D flags.
    "expat": Library("expat", ("expat/lib/xmlparse.c", "expat/lib/xmlrole.c", "expat/lib/xmltok.c"),
                     include=("expat/lib",),
                     flags=("-DXML_DTD", "-DXML_NS", "-DXML_CONTEXT_BYTES=1024", "-DHAVE_GETRANDOM",
                            "-DHAVE_SYSCALL_GETRANDOM")),
}


def run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def has_deb_src(package: str) -> bool:
    return bool(run(["apt-cache", "showsrc", package]).stdout.strip())


def debian_deb_entries() -> list[str]:
    """The enabled deb entries of apt's configuration whose URIs are Debian's, as deb822 stanzas of deb-src."""
    stanzas = []
    base = Path("/etc/apt")
    one_line = [base / "sources.list", *sorted((base / "sources.list.d").glob("*.list"))]
    for path in one_line:
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            words = line.split("#", 1)[0].split()
            if len(words) >= 3 and words[0] == "deb" and "debian" in line:
                rest = [w for w in words[1:] if not w.startswith("[")]
                stanzas.append(f"Types: deb-src\nURIs: {rest[0]}\nSuites: {rest[1]}\nComponents: {' '.join(rest[2:])}\n")
    for path in sorted((base / "sources.list.d").glob("*.sources")):
        if path == SRC_LIST:
            continue
        for block in re.split(r"\n\s*\n", path.read_text()):
            fields = {}
            for line in block.splitlines():
                if line.strip().startswith("#") or ":" not in line:
                    continue
                key, value = line.split(":", 1)
                fields[key.strip()] = value.strip()
            if "deb" in fields.get("Types", "").split() and "debian" in fields.get("URIs", "") \
                    and fields.get("Enabled", "yes") != "no":
                lines = ["Types: deb-src"] + [f"{k}: {fields[k]}" for k in ("URIs", "Suites", "Components", "Signed-By")
                                              if k in fields]
                stanzas.append("\n".join(lines) + "\n")
    return stanzas


def ensure_deb_src(package: str, log) -> None:
    """Make ``apt-get source PACKAGE`` possible: add the deb-src entries when there are none and we are root."""
    if has_deb_src(package):
        return
    if os.geteuid() != 0:
        raise LibraryUnavailable(f"apt knows no source package {package} (no deb-src entry) and this is not root")
    stanzas = debian_deb_entries()
    if not stanzas:
        raise LibraryUnavailable("no enabled Debian deb entry in /etc/apt to mirror as deb-src")
    SRC_LIST.write_text("# added by benchmarks/bench_hybrid.py (apt-get source of its libraries)\n"
                        + "\n".join(stanzas))
    log(f"added {SRC_LIST} (deb-src of the Debian deb entries); apt-get update")
    update = run(["apt-get", "update"])
    if update.returncode != 0 or not has_deb_src(package):
        raise LibraryUnavailable(f"apt-get update gave no source package {package}: {update.stderr.strip()[-400:]}")


def fetch_source(package: str, cache: Path, log) -> tuple[Path, str]:
    """The unpacked Debian source of ``package`` in ``cache/src/PACKAGE/`` and its version."""
    home = cache / "src" / package
    stamp = home / "source.json"
    if stamp.is_file():
        known = json.loads(stamp.read_text())
        if (home / known["dir"]).is_dir():
            return home / known["dir"], known["version"]
    ensure_deb_src(package, log)
    failures = []
    # The candidate first, then every version apt knows, newest first: a mirror may lack the pool
    # files of one of them (this VM's lacks debian-security's zlib 1:1.2.13.dfsg-1+deb12u1).
    for spec in [package, *(f"{package}={v}" for v in source_versions(package))]:
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        got = run(["apt-get", "source", "-q", spec], cwd=home)
        dirs = [p for p in home.iterdir() if p.is_dir() and (p / "debian" / "changelog").is_file()]
        if got.returncode == 0 and len(dirs) == 1:
            break
        failures.append(f"apt-get source {spec}: exit {got.returncode}: "
                        f"{(got.stderr or got.stdout).strip().splitlines()[-1:]}")
        log(failures[-1])
    else:
        raise LibraryUnavailable("; ".join(failures)[-600:])
    version = run(["dpkg-parsechangelog", "-l", str(dirs[0] / "debian" / "changelog"), "-S", "Version"]).stdout.strip()
    stamp.write_text(json.dumps({"dir": dirs[0].name, "version": version}))
    log(f"apt-get source {package}: {dirs[0].name}, version {version}")
    return dirs[0], version


def source_versions(package: str) -> list[str]:
    """The versions of a source package apt knows, newest first."""
    found = re.findall(r"^Version: (\S+)$", run(["apt-cache", "showsrc", package]).stdout, re.M)
    versions: list[str] = []
    for version in dict.fromkeys(found):
        at = next((i for i, v in enumerate(versions)
                   if run(["dpkg", "--compare-versions", version, "gt", v]).returncode == 0), len(versions))
        versions.insert(at, version)
    return versions


def prepared_source(lib: Library, cache: Path, log) -> tuple[Path, str]:
    """The unpacked source of ``lib`` (:func:`fetch_source`) with its ``prepare`` copies made, and its version."""
    source, version = fetch_source(lib.package, cache, log)
    for src, dst in lib.prepare:
        if not (source / dst).exists():
            shutil.copyfile(source / src, source / dst)
    return source, version


def compiler_identity(kind: str, symcc_cc: str | None) -> str:
    """What a cached archive depends on: the compiler's path, size and mtime, and the build's flags."""
    path = shutil.which(compiler_of(kind, symcc_cc)) or compiler_of(kind, symcc_cc)
    stat = os.stat(path)
    text = json.dumps([kind, path, stat.st_size, stat.st_mtime_ns, BUILDS[kind][1]])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass
class Built:
    """What a harness needs to link one library (and its deps) in one build kind."""

    archives: list[Path]
    include: list[Path]
    libs: list[str]
    versions: dict[str, str]


def build_library(name: str, kind: str, symcc_cc: str | None, cache: Path, log, jobs: int = 1) -> Built:
    """``name`` and its deps compiled with build ``kind`` into static archives (cached)."""
    lib = LIBRARIES[name]
    parts = [build_library(dep, kind, symcc_cc, cache, log, jobs) for dep in lib.deps]
    source, version = prepared_source(lib, cache, log)
    include = [source / inc for inc in lib.include]
    dep_include = [inc for part in parts for inc in part.include]
    out = cache / "lib" / f"{lib.package}-{version}" / f"{kind}-{compiler_identity(kind, symcc_cc)}"
    archive = out / f"lib{name}.a"
    if not archive.is_file():
        log(f"building {lib.package} {version} ({kind})")
        flags = [*lib.flags, *(f"-I{inc}" for inc in [*include, *dep_include])]
        try:
            objects = compile_objects(kind, symcc_cc, [source / s for s in lib.sources], out / "obj", flags, jobs)
        except subprocess.CalledProcessError as exc:
            raise LibraryUnavailable(f"{lib.package} ({kind}) does not compile: "
                                     f"{exc.stderr.decode(errors='replace')[-600:]}") from None
        subprocess.run(["ar", "rcs", str(archive), *map(str, objects)], check=True)
    versions = {lib.package: version}
    for part in parts:
        versions.update(part.versions)
    libs = list(dict.fromkeys([*lib.libs, *(x for part in parts for x in part.libs)]))
    # A library's archive comes before those of its deps on the link line.
    return Built([archive, *(a for part in parts for a in part.archives)], [*include, *dep_include], libs, versions)
