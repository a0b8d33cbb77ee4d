"""The oracle's verdict in words, as ``symcc-ulfm oracle`` and ``symcc-ulfm launch`` print it."""

from __future__ import annotations

from typing import Any


def verdict_lines(verdict: dict[str, Any], directory: str) -> list[str]:
    """PASS or FAIL with ``result_sha256``; for a judged campaign its membership, its counts and
    its findings (``symcc-ulfm findings DIRECTORY --confirm`` replays them); each problem and note."""
    lines = [f"oracle: {'PASS' if verdict['passed'] else 'FAIL'}  result_sha256={verdict.get('result_sha256')}"]
    if verdict.get("final_generation") is not None:
        lines += [
            f"generation {verdict['final_generation']}; receipts {verdict['receipts']}; promoted {verdict['promoted']}; "
            f"active {verdict['final_active']}; masters {verdict['masters']}; workers {verdict['workers']}; "
            f"surviving hosts {verdict['surviving_hosts']}",
            f"analyzed {verdict['wal_analyzed']}, generated {verdict['wal_generated']}, unique {verdict['wal_unique']}, "
            f"novel {verdict['wal_novel']}, public objects {verdict['public_objects']}, "
            f"endpoint edges {verdict['endpoint_edges']}",
            f"findings: {verdict['findings_unique']} unique, {verdict['findings_hits']} hits"
            + (f", as the target reported them (symcc-ulfm findings {directory} --confirm replays each)"
               if verdict["findings_unique"] else ""),
        ]
    return lines + [f"problem: {p}" for p in verdict["problems"]] + [f"note: {n}" for n in verdict["notes"]]
