"""The command line's arguments: every subcommand, its options and their defaults (the
reference campaign's from ``core.reference``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import executors
from ..core.reference import REFERENCE, REFERENCE_SCHEDULE
from ..tools.explore import DEFAULT_SECONDS


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that keeps what it is built from: the actions ``add_argument`` returned
    (``arguments``) and the parsers of its subcommands by name (``commands``, made through
    :meth:`subcommands`), so that the functions below need none of argparse's private attributes."""

    def __init__(self, *args, **kwargs):
        self.arguments: list[argparse.Action] = []
        self.commands: dict[str, CommandParser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action

    def subcommands(self, **kwargs) -> Callable[..., CommandParser]:
        """``add_subparsers(**kwargs)``; what it returns adds one subcommand and keeps its parser."""
        group = self.add_subparsers(**kwargs)

        def command(name: str, **options) -> CommandParser:
            self.commands[name] = group.add_parser(name, **options)
            return self.commands[name]

        return command


def given_options(argv: list[str]) -> set[str]:
    """The options (by dest) that ``argv``, a subcommand and its arguments, gives on the command
    line, whatever their defaults: a resume checks only those against the stored policy.

    A parser fills in defaults only for the names a namespace does not have yet, so ``argv`` is
    parsed into one that holds None for every option (none is None once given: each takes a
    value, a flag stores True, a repeatable one a list)."""
    command = build_parser().commands[argv[0]]
    namespace = argparse.Namespace(**{action.dest: None for action in command.arguments})
    command.parse_args(argv[1:], namespace)
    return {dest for dest, value in vars(namespace).items() if value is not None}


def _show_defaults(parser: CommandParser) -> None:
    """End every option's help with its default unless the help already says it
    (``argparse.ArgumentDefaultsHelpFormatter`` shows defaults only beside a help text)."""
    for command in parser.commands.values():
        _show_defaults(command)
    for action in parser.arguments:
        shown = action.option_strings and action.default not in (None, False, "", argparse.SUPPRESS)
        if shown and "default" not in (action.help or ""):
            action.help = f"{action.help or ''} (default: %(default)s)".lstrip()


def _watch_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.1 <= value <= 3600:
        hint = " (give the directory before --watch)" if not text.replace(".", "", 1).isdigit() else ""
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds between 0.1 and 3600{hint}")
    return value


def _triage_target(p: argparse.ArgumentParser) -> None:
    """``replay``/``minimize`` of a file the user has: the target and how to run it."""
    p.add_argument("--input", metavar="FILE", help="a file to execute instead of a finding's input (with --target)")
    p.add_argument("--target", help="with --input: built-in name, module:function, file.py:function or a binary")
    p.add_argument("--executor", default=REFERENCE["executor"], help="with --input")
    p.add_argument("--executor-option", action="append", metavar="KEY=VALUE", help="with --input (repeatable)")
    p.add_argument("--isolation", choices=("namespaces", "none"), default=REFERENCE["isolation"], help="with --input")


def build_parser() -> CommandParser:
    parser = CommandParser(
        prog="symcc-ulfm",
        description="Fault-tolerant multi-master concolic execution campaigns on MPI with ULFM, sealed as evidence.",
        epilog="Exit codes: 0 pass, 1 check failed, 2 bad input, 3 matrix or study cells failed, 4 integrity, "
        "5 capability missing (ULFM, isolation), 6 provenance changed, 7 store failure, 8 campaign running, "
        "70 internal error (also: an executor, not its target, failed), 128+N launch stopped by signal N "
        "(its job with it), 141 stdout's reader went away.",
    )
    command = parser.subcommands(dest="command", required=True, metavar="COMMAND")

    p = command("launch", help="run a campaign under mpiexec --with-ft ulfm, then the oracle")
    p.add_argument("--ranks", type=int, default=REFERENCE["ranks"], help="MPI processes of the job")
    p.add_argument("--warm-spares", type=int, default=REFERENCE["warm_spares"],
                   help="the highest ranks, idle until a failure promotes them")
    p.add_argument("--workers-per-master", type=int, default=REFERENCE["workers_per_master"],
                   help="the active ranks are cut into groups of one master and this many workers")
    p.add_argument("--failure-schedule", default="",
                   help=f"G:R[@work|commit|recovery|idle][!], comma separated (default: none; the reference campaign "
                        f"uses {REFERENCE_SCHEDULE})")
    p.add_argument("--deadline", type=float, default=REFERENCE["deadline_s"],
                   help="campaign seconds from generation 0; with --resume, a longer one extends the campaign")
    p.add_argument("--state-dir", help="state directory (default runs/launch-<time>)")
    p.add_argument("--seeds", help="directory of seed inputs, an AFL++ output directory (each instance's queue/, "
                                   "not crashes/) or a libFuzzer corpus, instead of the executor's own; with "
                                   "--resume, more seeds for the campaign")
    p.add_argument("--executor", default=REFERENCE["executor"],
                   help=f"{', '.join(executors.names())} (default {REFERENCE['executor']})")
    p.add_argument("--dictionary", metavar="FILE|DIR",
                   help="tokens in AFL's -x format (name=\"value\" or \"value\" lines, \\xNN escapes; or a "
                        "directory of token files) for the concolic engine's and the havoc kind's mutations and "
                        "afl-fuzz -x; recorded in the policy with its SHA-256")
    p.add_argument("--target", help="built-in target name, module:function, file.py:function, or a binary (symcc: "
                                    "the SymCC build; native: the sanitizer build, else the AFL build)")
    p.add_argument("--harness", metavar="DIR",
                   help="a harness directory (symcc-ulfm build --out DIR, its harness.json): the symcc executor on its "
                        "SymCC build when it has one, else native on its sanitizer (or AFL) build; its AFL build, "
                        "args, dictionary and seeds (unless --dictionary/--seeds); worker kinds by default afl:1 and "
                        "symcc for the rest, or afl for every slot without a SymCC build (not with --target or "
                        "--executor)")
    p.add_argument("--executor-option", action="append", metavar="KEY=VALUE",
                   help="executor option (repeatable); KIND={...} holds a worker kind's own options")
    p.add_argument("--worker-kinds", default="", metavar="KIND:N,...",
                   help="the kind of each worker slot of a master group, e.g. afl:1,symcc:2 (the counts add up to "
                        "--workers-per-master; default: every slot runs --executor); fuzzer kinds: afl (binary "
                        "targets), havoc (Python targets)")
    p.add_argument("--keep", choices=("all", "novel"), default="all",
                   help="which candidates enter the corpus: every distinct one (all), or only those adding coverage "
                        "or first holding a finding (novel, as SymCC's fuzzing helper keeps test cases)")
    p.add_argument("--slice", type=float, default=5.0, metavar="SECONDS", dest="slice_s",
                   help="how long a fuzzer worker's lease runs before it returns what it kept")
    p.add_argument("--idle", choices=("fuzz", "wait"), default="fuzz",
                   help="what an analysis worker with nothing to analyze does in a campaign with a fuzzer kind: "
                        "runs slices of the first fuzzer kind of --worker-kinds until inputs come (fuzz), or waits")
    p.add_argument("--concolic-order", choices=("seed", "edge"), default="seed",
                   help="what an analysis worker gets next: seeds, then inputs that added coverage, shorter first "
                        "(seed, as SymCC's fuzzing helper); or the inputs whose paths have the most edges no "
                        "analysis was on, skipping those with none, with a campaign-wide record of the branches "
                        "tried that no worker tries again (edge)")
    p.add_argument("--mix", choices=("fixed", "adaptive"), default="fixed",
                   help="the mix of kinds: --worker-kinds as given (fixed), or analysis slots lent to the fuzzer "
                        "kind of --idle fuzz, even while inputs are queued, as far as each kind's new edges per "
                        "CPU-second say (adaptive; docs/worker-kinds.md, 'The mix of kinds')")
    p.add_argument("--isolation", choices=("namespaces", "none"), default=REFERENCE["isolation"],
                   help="target code runs in user, mount and PID namespaces where the campaign's files are "
                        "read-only and every process it starts dies with its sandbox (default); none: only where "
                        "the kernel refuses namespaces and you accept a target that can write them")
    p.add_argument("--hosts", default="", help="host spec such as node-a:9,node-b:1 (default: this host, or the "
                                               "Slurm allocation's task slots inside one)")
    p.add_argument("--minimum-hosts", type=int, default=1, help="hosts the ranks must run on (checked before the job "
                                                                      "and by the oracle)")
    p.add_argument("--seed", type=int, default=0, help="an integer recorded in the policy")
    p.add_argument("--no-ulfm", action="store_true", help="fault-free baseline without ULFM")
    p.add_argument("--timeout", action="append", metavar="NAME=SECONDS",
                   help="bound on a wait: startup_s, recovery_step_s, recovery_retries, lease_s, shutdown_grace_s, "
                   "finalize_s, job_grace_s, endpoint_s (repeatable)")
    p.add_argument("--resume", action="store_true",
                   help="continue the campaign in --state-dir with its stored policy (options given are checked "
                        "against it: only --deadline may differ, longer; --seeds adds seeds)")
    p.add_argument("--run-to-deadline", action="store_true",
                   help="keep the ranks up until the deadline even when the search is exhausted")
    p.add_argument("--stop-after", type=int, default=0, metavar="N",
                   help="a budget by count: end the campaign once every worker has N results (analyses or fuzzer "
                        "slices) committed in one generation, however fast the machine; --deadline still bounds it "
                        "(0: the deadline only)")
    p.add_argument("--stop-from", type=int, default=0, metavar="G",
                   help="count the --stop-after budget only in generation G or later (generations that a scheduled "
                        "failure is still to end never count)")
    p.add_argument("--json", action="store_true")

    p = command("oracle", help="judge a state or run directory independently; exit 8, naming the holder, while "
                               "its campaign runs")
    p.add_argument("dir", help="a state directory, or a run directory holding one")
    p.add_argument("--minimum-hosts", type=int, help="hosts the ranks must have run on (default: the policy's)")
    p.add_argument("--json", action="store_true")

    p = command("findings", help="list the unique findings of a state, run or explore --out directory, each "
                                 "confirmed or not by its latest replay, with the command that replays it; exit 4 "
                                 "naming a damaged WAL record")
    p.add_argument("dir", help="a state, run or explore --out directory")
    p.add_argument("--confirm", action="store_true", help="first replay each finding not replayed yet, each attempt "
                                                          "in a fresh sandbox, and record the replay")
    p.add_argument("--repeat", type=int, help="attempts of a --confirm replay (default 3)")
    p.add_argument("--min-rate", type=float, default=0.8, help="the reproduction rate that confirms a finding")
    p.add_argument("--json", action="store_true")

    p = command("status", help="a running or finished campaign's progress, from its files (read-only)")
    p.add_argument("dir", help="a state directory, or a run directory holding one")
    p.add_argument("--json", action="store_true", help="the status as JSON (one object per line with --watch)")
    p.add_argument("--watch", type=_watch_seconds, nargs="?", const=2.0, default=None, metavar="SECONDS",
                   help="redraw every SECONDS (default 2) until the campaign has ended or Ctrl-C")

    p = command("mechanism", help="what each worker kind of a finished campaign added: edges, edges first, the "
                                  "edges the analysis and fuzzer kinds both reached, hand-off times, CPU per kind "
                                  "(docs/worker-kinds.md, \"What each kind adds\")")
    p.add_argument("dir", help="a state directory, or a run directory holding one")
    p.add_argument("--json", action="store_true")

    p = command("replay", help="re-run a finding's input (or --input FILE), contained, --repeat times; "
                                      "exit 0 when its measured reproduction rate is at least --min-rate")
    p.add_argument("dir", nargs="?", help="a state, run or explore --out directory (not with --input)")
    p.add_argument("finding", nargs="?", help="finding id (or 4+ of its first characters) or the SHA-256 of its input")
    _triage_target(p)
    p.add_argument("--repeat", type=int, help="attempts, each in a fresh sandbox (default: 10 for a finding, 1 for "
                                              "--input)")
    p.add_argument("--min-rate", type=float, default=0.8, help="the reproduction rate that passes")
    p.add_argument("--json", action="store_true")

    p = command("minimize", help="shrink a finding's input (or --input FILE) while it keeps its signature")
    p.add_argument("dir", nargs="?", help="a state, run or explore --out directory (not with --input)")
    p.add_argument("finding", nargs="?", help="finding id (or 4+ of its first characters) or the SHA-256 of its input")
    _triage_target(p)
    p.add_argument("--out", help="also write the minimised input to this new file (required for a sealed run; "
                                 "with --input default FILE.min)")
    p.add_argument("--max-executions", type=int, default=1000, help="contained executions the reduction may spend")
    p.add_argument("--json", action="store_true")

    p = command("sarif", help="write the unique findings of a directory as a SARIF 2.1.0 log")
    p.add_argument("dir", help="a state, run or explore --out directory")
    p.add_argument("out", help="a new file, e.g. findings.sarif")
    p.add_argument("--json", action="store_true")

    p = command("export", help="write a campaign's seeds, coverage-adding inputs and findings as AFL++ "
                                      "(OUT/default/queue/, crashes/, hangs/, exceptions/) or libFuzzer "
                                      "(OUT/corpus/, OUT/artifacts/) lay them out")
    p.add_argument("dir", help="a state or run directory")
    p.add_argument("out", help="a new directory, outside the campaign's state and run directory")
    p.add_argument("--layout", default="afl", choices=("afl", "libfuzzer"),
                   help="afl: one AFL++ instance, OUT/default/; libfuzzer: OUT/corpus/<sha1> and "
                        "OUT/artifacts/crash-<sha1>")
    p.add_argument("--json", action="store_true")

    p = command("seal", help="write SHA256SUMS.txt over every file of a run directory")
    p.add_argument("run_dir", help="a run directory (evidence/<run-id>/ or runs/notebook/<run-id>/)")

    p = command("verify", help="check a sealed run: file list, digests, oracle agreement; a run that still "
                               "holds INCOMPLETE is incomplete")
    p.add_argument("run_dir", help="a sealed run directory, scaling study or comparison study")
    p.add_argument("--remeasure", action="store_true",
                   help="a comparison study: also run the measurer again on every ok cell's kept inputs")
    p.add_argument("--json", action="store_true")

    p = command("explore", help="one process, no MPI: search a target and keep what it finds")
    p.add_argument("--target", required=True,
                   help="built-in target name, module:function, file.py:function, or a SymCC binary")
    p.add_argument("--executor", default=REFERENCE["executor"])
    p.add_argument("--executor-option", action="append", metavar="KEY=VALUE", help="executor option (repeatable)")
    p.add_argument("--seeds", help="directory of seed inputs, an AFL++ output directory (each instance's queue/) "
                                   "or a libFuzzer corpus (default: the target's shipped seeds)")
    p.add_argument("--dictionary", metavar="FILE|DIR", help="tokens in AFL's -x format for the mutations")
    p.add_argument("--seconds", type=float,
                   help="search for this long once the seeds are measured (default "
                        f"{DEFAULT_SECONDS:g} unless --runs is given; with both, whichever comes first)")
    p.add_argument("--runs", type=int,
                   help="stop after this many runs of the executor (no clock without --seconds)")
    p.add_argument("--out", required=True, help="a new directory for what it finds (one explore per directory; "
                                                "its JSON's \"stopped\" says why it stopped)")
    p.add_argument("--isolation", choices=("namespaces", "none"), default=REFERENCE["isolation"],
                   help="run the target in namespaces where it cannot write the campaign's files (default), or not")
    p.add_argument("--json", action="store_true")

    p = command("build", help="make every build of a libFuzzer harness this machine's tools allow (afl, cmplog, "
                              "symcc, sanitizer), its dictionary and seeds, into a harness directory for launch "
                              "--harness; exit 2 naming the afl build when it failed")
    p.add_argument("sources", nargs="*", metavar="SOURCE",
                   help="the harness's source files (.c; .cc, .cpp, .cxx as C++), compiled and linked per build "
                        "(or --script)")
    p.add_argument("--out", required=True, help="a new directory: a subdirectory per build, NAME.dict, seeds/, "
                                                "logs/ and the manifest harness.json")
    p.add_argument("--script", metavar="FILE",
                   help="an OSS-Fuzz build script, run with bash once per build in a fresh copy of --src with "
                        "CC, CXX, CFLAGS, CXXFLAGS, LIB_FUZZING_ENGINE, SRC, WORK and OUT set; it leaves the "
                        "harness (and NAME.dict, NAME_seed_corpus.zip) in $OUT")
    p.add_argument("--src", metavar="DIR", help="with --script: its $SRC, copied afresh for each build (default: "
                                                "the script's directory)")
    p.add_argument("--workdir", metavar="DIR", help="with --script: where in --src it runs, as an OSS-Fuzz "
                                                    "Dockerfile's WORKDIR (relative to --src; default: --src)")
    p.add_argument("--name", help="the harness: with --script, which executable of $OUT (needed when it leaves "
                                  "several); with sources, its file name (default: the first source's)")
    p.add_argument("--cflags", default="", metavar="FLAGS",
                   help="compiler flags added to every build's (one string, split as a shell splits it)")
    p.add_argument("--dictionary", metavar="FILE", help="with sources: the harness's own tokens (AFL's -x format), "
                                                        "merged with those AFL++ extracts while it builds")
    p.add_argument("--symcc", metavar="PATH", help="SymCC's compiler wrapper symcc, with sym++ beside it (default: "
                                                   "both on PATH; without SymCC the symcc build is skipped)")
    p.add_argument("--json", action="store_true")

    p = command("targets", help="list the built-in targets")
    p.add_argument("--json", action="store_true")

    p = command("matrix", help="run a preregistered scaling matrix")
    p.add_argument("protocol", help="a protocol file, e.g. protocols/default.json")
    p.add_argument("--out", required=True, help="the study's directory")
    p.add_argument("--resume", action="store_true", help="keep the finished cells of --out and run the rest")
    p.add_argument("--json", action="store_true")

    p = command("compare", help="run (or resume) a preregistered comparison study of systems on targets")
    p.add_argument("protocol", help="a comparison protocol, e.g. protocols/compare/quick.json")
    p.add_argument("--out", required=True, help="the study's directory")
    p.add_argument("--resume", action="store_true", help="keep the complete cells of --out and run the rest")
    p.add_argument("--harnesses", metavar="DIR", help="the directory holding the protocol's harness directories "
                                                      "(symcc-ulfm build --out DIR/NAME)")
    p.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="cells at once, each on its own cores (N x the protocol's cores must fit)")
    p.add_argument("--slurm-steps", action="store_true",
                   help="in a Slurm allocation: run each cell as a job step (srun --exact) on the protocol's cores")
    p.add_argument("--json", action="store_true")

    p = command("analyze", help="selection, intervals, models and ceiling of a matrix directory")
    p.add_argument("dir", help="a matrix --out directory; writes selection.json and analysis/ there")
    p.add_argument("--json", action="store_true")

    p = command("model", help="scaling models on published numbers")
    model = p.subcommands(dest="model", required=True)
    m = model("usl", help="fit the Universal Scalability Law")
    m.add_argument("--workers", required=True, help="worker counts, comma separated, e.g. 8,32,128")
    m.add_argument("--throughput", required=True, help="the throughput at each, comma separated")
    m.add_argument("--gain", type=float, default=0.10, help="the marginal gain below which more workers do not pay")
    m.add_argument("--json", action="store_true")
    m = model("wilson", help="Wilson 95%% interval of a failure rate")
    m.add_argument("--failures", type=int, required=True, help="failed trials")
    m.add_argument("--trials", type=int, required=True, help="all trials")
    m.add_argument("--json", action="store_true")
    _show_defaults(parser)
    return parser
