"""The comparison protocols of ``protocols/compare/`` (issue 42): each read by the study's validator,
each name exists (a harness ``benchmarks/compare_targets.py`` builds, a Python target that resolves
from the repository root with the parser's own modules and seeds), and every campaign's ``launch``
options are options ``launch`` takes, with worker kinds that fit its targets."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import compare_targets, engine_parsers  # noqa: E402
from symcc_ulfm.cli.args import build_parser  # noqa: E402
from symcc_ulfm.compare import design  # noqa: E402
from symcc_ulfm.targets import resolve_target  # noqa: E402

PROTOCOLS = ROOT / "protocols" / "compare"
NAME = re.compile(r"[a-z0-9][a-z0-9_+-]*")
KEYS = {"format", "description", "targets", "systems", "reference", "trials", "min_trials", "window_s", "cores",
        "snapshots", "seed", "rerun", "stop_rule"}
SYSTEM_KEYS = {"campaign": {"kind", "launch"}, "afl": {"kind", "instances"},
               "atheris": {"kind", "processes", "options"}, "seeds": {"kind"}}
PLACEHOLDERS = {"@cmplog", "@dictionary"}
FILES = sorted(PROTOCOLS.glob("*.json"))


def load(name: str) -> dict:
    return json.loads((PROTOCOLS / f"{name}.json").read_text())


def test_the_protocols_are_there():
    assert [path.stem for path in FILES] == ["engine", "hybrid-1", "hybrid-2", "hybrid-3", "quick"]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_each_system_fits_its_kind_and_every_target(path):
    """The study's own validator reads each (shape, names, which kind runs on which form); beyond it,
    the preregistered numbers, and a campaign's worker kinds that fit its targets."""
    protocol = design.load(path)
    assert len(protocol["description"]) > 200
    assert protocol["min_trials"] == protocol["trials"] == 5 and protocol["cores"] == 2
    forms = {design.target_form(spec) for spec in protocol["targets"].values()}
    for name, system in protocol["systems"].items():
        if system["kind"] == "afl":
            assert len(system["instances"]) == protocol["cores"], name
        elif system["kind"] == "atheris":
            assert system["processes"] == protocol["cores"], name
        elif system["kind"] == "campaign":
            options = build_parser().parse_args(["launch", *system["launch"]])  # exit 2 on one launch lacks
            kinds = [k.split(":")[0] for k in options.worker_kinds.split(",") if k]
            assert not ({"afl", "symcc"} & set(kinds)) or forms == {"binary"}, name
            assert not ({"havoc", "concolic"} & set(kinds)) or forms == {"python"}, name


def test_the_c_benchmark_is_the_readme_table_against_afl_as_its_guide_arranges_it():
    """The five programs of the README's hybrid table (a subset of what compare_targets builds) in
    three sitting-size parts that differ only in their targets, the hybrid against AFL++ by its
    parallel-fuzzing guide: CmpLog and transformations on the main, another power schedule on the
    secondary, the dictionary on both."""
    parts = [load(f"hybrid-{n}") for n in (1, 2, 3)]
    targets = [name for protocol in parts for name in protocol["targets"]]
    assert sorted(targets) == sorted(("hdr_opcode", "tlv_records", "crash_dispatch", "libpng", "cjson"))
    assert set(targets) <= set(compare_targets.TARGETS)
    assert all(protocol["targets"] == {name: {"harness": name} for name in protocol["targets"]} for protocol in parts)
    common = [{k: v for k, v in protocol.items() if k not in ("targets", "description")} for protocol in parts]
    assert common[0] == common[1] == common[2]
    protocol = parts[0]
    assert set(protocol["systems"]) == {"afl-best", "hybrid"} and protocol["reference"] == "afl-best"
    assert protocol["window_s"] >= 300
    main, secondary = protocol["systems"]["afl-best"]["instances"]
    assert main[:2] == ["-M", "main"] and secondary[:2] == ["-S", "s1"]
    assert main[main.index("-c") + 1] == "@cmplog" and main[main.index("-l") + 1] == "2AT"
    assert all(flags[flags.index("-x") + 1] == "@dictionary" for flags in (main, secondary))
    assert secondary[secondary.index("-p") + 1] == "explore"  # another power schedule than the default
    launch = build_parser().parse_args(["launch", *protocol["systems"]["hybrid"]["launch"]])
    assert launch.worker_kinds == "afl:1,symcc:1"


def test_the_python_benchmark_targets_resolve_from_the_repository_root(monkeypatch):
    protocol = load("engine")
    assert protocol["window_s"] >= 300 and protocol["reference"] == "atheris2"
    monkeypatch.chdir(ROOT)
    for name, spec in protocol["targets"].items():
        info = resolve_target(spec["python"])
        assert info.function.__name__ == f"t_{name}"
        assert Path(info.function.__code__.co_filename).resolve() == ROOT / "benchmarks" / "engine_parsers.py"
        assert spec["modules"] == engine_parsers.MODULES[name]
        assert [bytes.fromhex(seed) for seed in spec["seeds"]] == [engine_parsers.SEEDS[name]]


def test_the_quick_protocol_needs_neither_symcc_nor_afl_and_has_the_null_control():
    protocol = load("quick")
    assert all(set(spec) == {"python"} for spec in protocol["targets"].values())
    for spec in protocol["targets"].values():
        assert resolve_target(spec["python"]).seeds  # a built-in target with its own seeds
    kinds = {system["kind"] for system in protocol["systems"].values()}
    assert "afl" not in kinds and {"seeds", "atheris", "campaign"} <= kinds
    assert protocol["systems"][protocol["reference"]]["kind"] == "atheris"
    assert protocol["window_s"] <= 30
