"""AFL++-only campaigns against AFL++ -M/-S at equal cores, on OSS-Fuzz harnesses that Debian source packages ship (prints, asserts nothing).

    make bench-harness [BENCH_QUICK=1] [HARNESS_SECONDS=600] [HARNESS_ROUNDS=2] [HARNESS_ARGS=...]
    python -m benchmarks.bench_harness [--quick] [--seconds 600] [--rounds 2] [--targets cjson,libpng,expat]
        [--systems afl2,afl2-cmplog,campaign-afl] [--script NAME=build.sh ...] [--out DIR [--resume]]

Targets (:data:`RECIPES`): the OSS-Fuzz harness a Debian source package ships, obtained with
``apt-get source`` (``c_libraries.fetch_source``; each package's version is printed and in the
table's header) and built by ``symcc-ulfm build`` from its sources (the harness and the
library's C files of ``c_libraries.LIBRARIES``, the packages' configuration as ``-D`` flags, no
configure step): cjson's ``fuzzing/cjson_read_fuzzer.c`` with ``json.dict`` and the seeds
``fuzzing/inputs/``; libpng's ``contrib/oss-fuzz/libpng_read_fuzzer.cc`` with zlib, ``png.dict``
and the package's PNG files (not its crashers); expat's ``expat/fuzz/xml_parse_fuzzer.c`` (UTF-8)
with the package's ``testdata/largefiles/*.xml``. Seeds are files of at most :data:`MAX_SEED`
bytes, never quilt's copies under ``.pc/``. ``--script NAME=BUILD_SH`` adds a harness built from an
OSS-Fuzz build script (``symcc-ulfm build --script BUILD_SH``, its directory as ``$SRC``) with the
seeds of its seed corpus. Every system gets the same seeds and the harness directory's
dictionary (its own tokens and those AFL++ extracted while building).

Systems, on the same ``--cores`` (default 2) for the same window, in alternating order from one
round to the next: ``afl2`` (afl-fuzz -M main and -S secondary on the AFL++ build, AFL++'s
parallel-fuzzing guide), ``afl2-cmplog`` (the same with the main given the CmpLog build, ``-c``,
AFL++'s own recommendation), ``campaign-afl`` (ours: ``symcc-ulfm launch --harness DIR
--worker-kinds afl:2`` with ``--ranks 3 --warm-spares 0 --workers-per-master 2``: one master, two
afl workers each running one afl-fuzz, no spare and no injected failure; the master rank and the
workers' Python processes run on the same cores as the two afl-fuzz, so the cores are equal and
what they cost is the runtime's cost).

Figures per window (``bench_hybrid``'s :class:`~benchmarks.bench_hybrid.Measurer` over the final
corpus, seeds included): inputs, AFL edges (``afl-showmap`` on the AFL++ build), crashes (distinct
crash states of the sanitizer build's reports, the campaign's own signatures:
``executors.outcome.sanitizer_state``, the sanitizer, the bug's type and the top frames), execs/s
(``execs_done`` of every afl-fuzz instance's ``fuzzer_stats`` within the window, summed, over the
window: :func:`afl_execs`; for ours, its afl workers' afl-fuzz in the state's ``scratch/``) and, for ours, whether the oracle passed.
Everything stays in ``--out`` (default ``runs/harness-<time>/``) as ``bench_hybrid`` keeps it:
``harness/<target>/`` (the harness directory), ``results.json``, ``table.txt``, ``edges*.png``,
each window's directories; ``--resume`` takes a run up again.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_hybrid as hybrid  # noqa: E402
from benchmarks.bench_hybrid import Context, Measurer, Outcome, Sampler, Target  # noqa: E402
from benchmarks.c_libraries import LIBRARIES, LibraryUnavailable, prepared_source  # noqa: E402
from symcc_ulfm.compare.systems.campaign_system import window_args  # noqa: E402
from symcc_ulfm.executors.outcome import sanitizer_state  # noqa: E402
from symcc_ulfm.harness import directory  # noqa: E402

SYSTEMS = ["afl2", "afl2-cmplog", "campaign-afl"]
WORKERS = 2  # afl-fuzz instances of every system
TARGETS = "cjson,libpng,expat"
QUICK = {"seconds": 30.0, "rounds": 1, "targets": TARGETS, "systems": ",".join(SYSTEMS)}
FULL = {"seconds": 600.0, "rounds": 2, "targets": TARGETS, "systems": ",".join(SYSTEMS)}
MAX_SEED = 4096  # bytes: a seed larger than this is left out
BUILD_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Recipe:
    """An OSS-Fuzz harness that a Debian source package ships, built from its sources."""

    library: str  # a key of c_libraries.LIBRARIES: the package; its C files (and its deps') are built with it
    harness: str  # relative to the unpacked source
    cflags: tuple[str, ...] = ()
    dictionary: str | None = None  # the harness's tokens, relative to the source
    seeds: tuple[str, ...] = ()  # globs relative to the source
    exclude: tuple[str, ...] = (".pc",)  # a seed with one of these path components is left out


RECIPES = {
    "cjson": Recipe("cjson", "fuzzing/cjson_read_fuzzer.c", dictionary="fuzzing/json.dict",
                    seeds=("fuzzing/inputs/*",)),
    "libpng": Recipe("libpng1.6", "contrib/oss-fuzz/libpng_read_fuzzer.cc", dictionary="contrib/oss-fuzz/png.dict",
                     seeds=("**/*.png",), exclude=(".pc", "crashers")),
    "expat": Recipe("expat", "expat/fuzz/xml_parse_fuzzer.c", cflags=("-DENCODING_FOR_FUZZING=UTF-8",),
                    seeds=("testdata/largefiles/*.xml",)),
}


# -- building the harnesses ---------------------------------------------------------------------

def library_files(name: str, cache: Path, log) -> tuple[list[Path], list[str], dict[str, str]]:
    """The C files, flags (``-D``, ``-I``) and package versions of library ``name`` and its deps."""
    lib = LIBRARIES[name]
    files, flags, versions = [], [], {}
    for dep in lib.deps:
        more, more_flags, more_versions = library_files(dep, cache, log)
        files, flags = files + more, flags + more_flags
        versions.update(more_versions)
    source, version = prepared_source(lib, cache, log)
    return ([*(source / s for s in lib.sources), *files], [*lib.flags, *(f"-I{source / i}" for i in lib.include), *flags],
            {lib.package: version, **versions})


def package_seeds(source: Path, recipe: Recipe) -> list[Path]:
    found = sorted({p for pattern in recipe.seeds for p in source.glob(pattern)})
    return [p for p in found if p.is_file() and not p.is_symlink() and p.stat().st_size <= MAX_SEED
            and not set(recipe.exclude) & set(p.relative_to(source).parts)]


def symcc_build(root: Path, args: list[str], log) -> None:
    """``symcc-ulfm build --out ROOT ARGS``; RuntimeError with its last lines when it fails."""
    command = [sys.executable, "-m", "symcc_ulfm", "build", "--out", str(root), *args]
    log(f"$ {shlex.join(command)}")
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"symcc-ulfm build exited {done.returncode}: {(done.stderr or done.stdout)[-800:]}")


def make_harness(name: str, scripts: dict[str, Path], root: Path, cache: Path, log,
                 symcc: str | None = None) -> tuple[list[Path], dict]:
    """Build target ``name`` into the harness directory ``root`` (``symcc``: SymCC's compiler wrapper
    for its symcc build, ``build --symcc``): its seed files and package versions."""
    given = ["--symcc", symcc] if symcc else []
    if name in scripts:
        script = scripts[name]
        symcc_build(root, ["--script", str(script), "--src", str(script.parent), *given], log)
        seeds = root / "seeds"
        return (sorted(p for p in seeds.iterdir() if p.is_file()) if seeds.is_dir() else []), {}
    recipe = RECIPES[name]
    files, flags, versions = library_files(recipe.library, cache, log)
    source, _version = prepared_source(LIBRARIES[recipe.library], cache, log)
    own = ["--dictionary", str(source / recipe.dictionary)] if recipe.dictionary else []
    symcc_build(root, [f"--cflags={shlex.join([*flags, *recipe.cflags])}", *own, *given,
                       str(source / recipe.harness), *map(str, files)], log)
    return package_seeds(source, recipe), versions


def binaries_of(harness: directory.Harness) -> dict[str, Path]:
    """The builds the systems and the measurer use: ``afl``, ``cmplog`` (when made), ``asan`` (the sanitizer build)."""
    found = {"afl": harness.path("afl"), "asan": harness.path("sanitizer")}
    if "cmplog" in harness.builds:
        found["cmplog"] = harness.path("cmplog")
    return found


def measurer(harness: directory.Harness, scratch: Path, jobs: int) -> Measurer:
    """``bench_hybrid``'s measurer on a harness directory's builds, run with its ``args``, its
    crashes told apart by their crash state."""
    return Measurer(binaries_of(harness), scratch, jobs, tuple(harness.args), sanitizer_state)


def seed_files(seeds: list[Path], out: Path, name: str) -> Path:
    """``out/seeds/NAME/`` with the seeds (made once: a resumed run keeps its own)."""
    seed_dir = out / "seeds" / name
    if not seed_dir.is_dir():
        seed_dir.mkdir(parents=True)
        for i, path in enumerate(seeds):
            shutil.copyfile(path, seed_dir / f"seed{i:04d}")
    return seed_dir


# -- the systems ----------------------------------------------------------------------------------

def afl_execs(base: Path, seconds: float, end: float) -> dict:
    """The executions of every afl-fuzz below ``base`` (its ``fuzzer_stats``, read without following a
    symlink): ``execs_done`` summed, and those within the window that ends at ``end`` (Unix time),
    in all and per second of the window. An instance that ran past the end (a campaign's afl-fuzz:
    its deadline starts once its executor is ready) counts its executions pro rata to its time
    within the window, at its average rate (``fuzzer_stats`` times are whole seconds)."""
    total, within, instances = 0, 0.0, 0
    for path in sorted(base.rglob("fuzzer_stats")) if base.is_dir() else []:
        if path.is_symlink() or not path.is_file():
            continue
        fields = {key.strip(): value.strip() for key, _, value in
                  (line.partition(":") for line in path.read_text(errors="replace").splitlines())}
        done, start, last = (fields.get(key, "") for key in ("execs_done", "start_time", "last_update"))
        if not (done.isdigit() and start.isdigit() and last.isdigit()):
            continue
        ran = max(1, int(last) - int(start))
        total, instances = total + int(done), instances + 1
        within += int(done) * min(1.0, max(0.0, end - int(start)) / ran)
    return {"execs_done": total, "execs_in_window": round(within), "afl_instances": instances,
            "execs_per_s": round(within / seconds, 1)}


def run_system(system: str, ctx: Context, roots: dict[str, Path]) -> tuple[Sampler | None, dict, str | None]:
    """(sampler, notes, why skipped) of one window of ``system``; the notes hold its afl-fuzz executions."""
    end = time.time() + ctx.seconds  # the sampler's window starts now
    if system == "afl2":
        sampler, notes = hybrid.system_afl(ctx, WORKERS)
        stats = ctx.run_dir / "afl"
    elif system == "afl2-cmplog":
        if "cmplog" not in ctx.binaries:
            return None, {}, "the harness directory has no cmplog build"
        sampler, notes = hybrid.system_afl(ctx, WORKERS, ("-c", str(ctx.binaries["cmplog"])))
        stats = ctx.run_dir / "afl"
    elif system == "campaign-afl":
        args = ["--harness", str(roots[ctx.target.name]), "--seeds", str(ctx.seed_dir),
                "--worker-kinds", f"afl:{WORKERS}", "--slice", f"{ctx.args.slice:g}",
                *window_args(ctx.seconds, WORKERS)]
        sampler, notes = hybrid.system_campaign(ctx, args, False)
        stats = ctx.run_dir / "state" / "scratch"
    else:
        raise ValueError(f"unknown system {system}; known: {', '.join(SYSTEMS)}")
    notes.update(afl_execs(stats, ctx.seconds, end))
    return sampler, notes, None


# -- the table ------------------------------------------------------------------------------------

def execs_per_s(o: Outcome) -> float:
    return o.notes.get("execs_per_s", 0)


def oracle(ran: list[Outcome], ref: list[Outcome]) -> str:
    passed = [o.notes["passed"] for o in ran if "passed" in o.notes]
    return "/".join("pass" if p else "FAIL" for p in passed) if passed else "-"


def table(results: list[Outcome], header: str, reference: str = "afl2") -> str:
    columns = [("corpus", 11, hybrid.per_round(lambda o: o.corpus)), ("edges", 11, hybrid.per_round(lambda o: o.edges)),
               ("execs/s", 15, hybrid.per_round(lambda o: round(execs_per_s(o)))),
               ("crashes", 7, hybrid.per_round(lambda o: o.crashes)), ("busy", 5, hybrid.busy),
               ("edges/" + reference, 10, hybrid.against(lambda o: o.edges)),
               ("execs/" + reference, 10, hybrid.against(execs_per_s)), ("oracle", 6, oracle)]
    lines, problems = hybrid.grid(results, header, reference, columns)
    lines += ["", "corpus, edges, execs/s, crashes: each round (round 0/round 1 ...); execs/s: afl-fuzz's execs_done "
              "of every instance within the window summed, over the window; crashes: distinct crash states of the sanitizer build (type and top frames); "
              "busy: CPU seconds the cores spent busy per window second (whoever ran; mean); ratios: means over "
              f"the rounds against {reference}; oracle: the campaign's verdict"]
    if problems:
        lines += ["", "failures (details in results.json):"] + [f"  {p}" for p in problems]
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = hybrid.window_parser(__doc__.splitlines()[0], QUICK, f"from {', '.join(RECIPES)} and --script's",
                                  SYSTEMS)
    parser.add_argument("--script", action="append", default=[], metavar="NAME=BUILD_SH",
                        help="a target built from an OSS-Fuzz build script (its directory is $SRC)")
    args = hybrid.parse_windows(parser, argv, QUICK, FULL)
    scripts = {}
    for entry in args.script:
        name, _, path = entry.partition("=")
        if not name or not path or name in RECIPES:
            parser.error(f"--script {entry}: expected NAME=BUILD_SH with a name other than {', '.join(RECIPES)}")
        scripts[name] = Path(path).resolve()
    systems = [s for s in args.systems.split(",") if s]
    names = [t for t in args.targets.split(",") if t]
    unknown = sorted(set(systems) - set(SYSTEMS)) + sorted(set(names) - set(RECIPES) - set(scripts))
    if unknown:
        parser.error(f"unknown {unknown}; systems: {', '.join(SYSTEMS)}; targets: {', '.join([*RECIPES, *scripts])}")
    cpus = hybrid.set_cores(args.cores)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = (args.out or ROOT / "runs" / f"harness-{stamp}").resolve()
    settings = {"seconds": args.seconds, "rounds": args.rounds, "targets": args.targets, "systems": args.systems,
                "cores": len(cpus), "slice": args.slice, "scripts": {k: str(v) for k, v in scripts.items()}}
    recorded = hybrid.open_run(parser, out, settings, args.resume)
    log_lines, log = hybrid.logger("bench_harness")

    log(f"cores {cpus}; out {out}")
    known, builds, roots, seed_dirs, packages, measurers, results = {}, {}, {}, {}, {}, {}, []
    started = time.monotonic()
    for name in names:
        root = out / "harness" / name
        kept = hybrid.kept_binaries(recorded["binaries"], name) if args.resume else None
        try:
            if kept:
                versions = recorded["libraries"].get(name, {})
            else:
                if root.exists():
                    shutil.rmtree(root)
                root.parent.mkdir(parents=True, exist_ok=True)
                seeds, versions = make_harness(name, scripts, root, args.cache.resolve(), log)
                seed_files(seeds, out, name)
            harness = directory.read(root)
            builds[name], measurers[name] = binaries_of(harness), measurer(harness, out, len(cpus))
        except (LibraryUnavailable, RuntimeError, subprocess.TimeoutExpired) as exc:
            results += hybrid.not_built(name, systems, args.seconds, exc, log)
            continue
        hybrid.record_builds(parser, recorded, name, builds[name], versions, bool(args.resume and not kept),
                             packages, log)
        roots[name], seed_dirs[name] = root, out / "seeds" / name
        seeds = tuple(p.read_bytes() for p in sorted(seed_dirs[name].iterdir()))
        known[name] = Target(name, root / directory.MANIFEST, None, seeds, tuple(harness.args),
                             harness.file(harness.dictionary))
        log(f"target {name}: builds {', '.join(sorted(harness.builds))}; {len(seeds)} seeds; dictionary "
            f"{harness.dictionary or '-'}")
    (out / "run.json").write_text(json.dumps(recorded, indent=1))
    build_s = time.monotonic() - started
    results += hybrid.run_windows(out, args, systems, known, builds, seed_dirs, measurers, log,
                                  lambda system, ctx: run_system(system, ctx, roots))
    header = (f"bench_harness: {args.seconds:g} s windows, {args.rounds} round(s), cores={len(cpus)}, {stamp}, "
              f"{'quick' if args.quick else 'full'} mode\n"
              f"command: {' '.join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])}\n"
              f"packages: {', '.join(f'{p} {v}' for p, v in packages.items()) or '-'}\n"
              f"campaign-afl: launch --harness DIR --worker-kinds afl:{WORKERS} --ranks {WORKERS + 1} "
              f"--warm-spares 0 --workers-per-master {WORKERS} (one master, {WORKERS} afl workers)\n"
              f"{hybrid.spread(results)}")
    text = table(results, header)
    print(text)
    hybrid.report(out, text, results, {"header": header, "seconds": args.seconds, "rounds": args.rounds,
                                       "systems": systems, "cores": cpus, "packages": packages,
                                       "recipes": {k: asdict(v) for k, v in RECIPES.items()},
                                       "build_s": round(build_s, 1)}, started, log_lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
