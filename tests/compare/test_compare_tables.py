"""symcc_ulfm.compare.tables.load_study on a hostile study directory: planted links are never followed,
and what cannot be read reaches the analysis as an unreadable cell instead of a crash."""

from __future__ import annotations

import os

from symcc_ulfm.compare import analyze, design, tables
from symcc_ulfm.experiment.jsonfile import write_json

PROTOCOL = {"targets": {"t": {"python": "tokenizer"}}, "systems": {"a": {"kind": "seeds"}}, "reference": "a",
            "trials": 6, "min_trials": 2, "window_s": 10, "cores": 1, "seed": 0}


def test_load_study_reads_cells_without_following_links(tmp_path):
    root = tmp_path / "study"
    protocol = design.validate(PROTOCOL)
    for name, value in (("protocol.json", protocol), ("selection.json", {"s": 1}), ("analysis/compare.json", {"a": 1})):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        write_json(root / name, value)
    cells = root / "cells"
    for name in ("0.t.a", "1.t.a", "2.t.a", "3.t.a", ".attempts"):
        (cells / name).mkdir(parents=True)
        if name != "3.t.a":  # 3.t.a: still running
            (cells / name / "COMPLETE").write_bytes(b"")
    write_json(cells / "0.t.a" / "result.json", {"cell": "0.t.a"})
    (cells / "1.t.a" / "result.json").write_text("{not json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_json(elsewhere / "result.json", {"cell": "planted"})
    (elsewhere / "COMPLETE").write_bytes(b"")
    os.symlink(elsewhere / "result.json", cells / "2.t.a" / "result.json")  # a link where a file belongs
    os.symlink(elsewhere, cells / "4.t.a")  # a link where a cell directory belongs: not a cell
    write_json(cells / ".attempts" / "result.json", {"cell": "moved aside"})
    (cells / "5.t.a").write_text("")  # a file: not a cell
    study = tables.load_study(root)
    assert study["results"] == {"0.t.a": {"cell": "0.t.a"}, "1.t.a": None, "2.t.a": None}
    assert (study["selection"], study["analysis"]) == ({"s": 1}, {"a": 1})
    selection, _ = analyze.analyze(protocol, study["results"], [])
    (valid,) = [r for r in selection["rules"] if r["rule"] == "valid"]
    assert {e["cell"]: e["reason"] for e in valid["excluded"]} == {
        "0.t.a": "not a symcc-ulfm-compare-cell/1 object", "1.t.a": "result.json is unreadable",
        "2.t.a": "result.json is unreadable"}
