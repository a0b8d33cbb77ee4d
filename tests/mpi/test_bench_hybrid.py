"""Smoke test of ``benchmarks/bench_hybrid.py``'s machinery (builds, one AFL system, the measurer,
the table, the figure, taking a run up again), never its figures: afl1 on hdr_opcode for a 5 s
window, without SymCC."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import bench_hybrid  # noqa: E402
from symcc_ulfm.compare.measure.binary_edges import edge_sets  # noqa: E402

NEEDED = ("gcc", "afl-cc", "afl-fuzz", "afl-showmap")


@pytest.mark.skipif(any(shutil.which(tool) is None for tool in NEEDED), reason="needs gcc and AFL++ (afl++)")
def test_afl_alone_on_one_c_target(tmp_path, monkeypatch):
    monkeypatch.delenv("SYMCC_CC", raising=False)
    out = tmp_path / "run"
    assert bench_hybrid.main(["--seconds", "5", "--rounds", "1", "--targets", "hdr_opcode",
                              "--systems", "afl1,hybrid", "--cores", "0", "--out", str(out), "--cache", str(tmp_path / "cache")]) == 0
    report = json.loads((out / "results.json").read_text())
    afl1, hybrid = report["results"]
    assert afl1["system"] == "afl1" and afl1["skipped"] is None and afl1["failed"] is None
    assert afl1["corpus"] >= 3 and afl1["edges"] > 0 and afl1["behaviours"] >= 3  # the three seeds at least
    times = [t for t, _inputs, _edges in afl1["timeline"]]
    assert times[0] == 0 and times[-1] == pytest.approx(5.0) and len(times) == bench_hybrid.SAMPLES + 1
    assert [e for _t, _n, e in afl1["timeline"]] == sorted(e for _t, _n, e in afl1["timeline"])
    assert afl1["timeline"][-1][2] == afl1["edges"]
    assert hybrid["skipped"] and "SYMCC_CC" in hybrid["skipped"]
    text = (out / "table.txt").read_text()
    assert "afl1" in text and "skipped" in text
    assert (out / "edges-hdr_opcode.png").read_bytes()[:4] == b"\x89PNG"
    assert afl1["commit"] and afl1["started"] and len(afl1["load"]) == 2 and "commits: " in text

    # --resume keeps a finished window (same figures, not run again) and runs an interrupted one anew
    window = out / "round0" / "hdr_opcode" / "afl1"
    args = ["--seconds", "5", "--rounds", "1", "--targets", "hdr_opcode", "--systems", "afl1,hybrid", "--cores", "0",
            "--out", str(out), "--cache", str(tmp_path / "cache"), "--resume"]
    assert bench_hybrid.main(args) == 0
    kept = json.loads((out / "results.json").read_text())["results"][0]
    assert kept == afl1
    (window / "outcome.json").unlink()
    assert bench_hybrid.main(args) == 0
    again = json.loads((out / "results.json").read_text())["results"][0]
    assert again["started"] > afl1["started"] and again["edges"] > 0
    assert (window.parent / "afl1.interrupted-1" / "afl").is_dir() and (window / "outcome.json").is_file()

    with pytest.raises(SystemExit) as refused:  # other settings are another run
        bench_hybrid.main([*args[:1], "6", *args[2:]])
    assert refused.value.code == 2


def test_measurer_edges_are_the_union_of_afl_showmap_maps(tmp_path):
    if any(shutil.which(tool) is None for tool in NEEDED):
        pytest.skip("needs gcc and AFL++ (afl++)")
    from benchmarks import c_bench

    target = bench_hybrid.targets()["hdr_opcode"]
    binaries = {kind: c_bench.link(kind, None, [target.harness], tmp_path / f"hdr.{kind}") for kind in ("afl", "plain")}
    inputs = {c_bench.sha256(d): d for d in target.seeds}
    sets = edge_sets(binaries["afl"], inputs, tmp_path)
    assert len(set().union(*sets.values())) == c_bench.afl_edges(binaries["afl"], inputs, tmp_path)
    words = {c_bench.behaviour_of(binaries["plain"], d) for d in target.seeds}
    assert len(words) == 3 and {status for _out, status in words} == {10, 12, 24}  # ping, echo, set
