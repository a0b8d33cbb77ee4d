"""What both families' measurers share: the time limit of one input and the result they return."""

from __future__ import annotations

from ..listing import Input

TIMEOUT_S = 5.0  # per input and run, for every form


def summary(measurer: str, unit: str, curve: list[list[float]], final: int, inputs: list[Input],
            findings: dict[str, Input], hangs: int) -> dict:
    """The result both families return: ``findings`` maps a signature to its earliest input."""
    found = [{"signature": signature, "first_s": item.first_s, "sha256": item.sha256}
             for signature, item in sorted(findings.items(), key=lambda pair: (pair[1].first_s, pair[0]))]
    return {"measurer": measurer, "unit": unit, "final": final, "curve": curve, "inputs": len(inputs),
            "findings": found, "first_finding_s": found[0]["first_s"] if found else None, "hangs": hangs}


def first_of(findings: dict[str, Input], signature: str, item: Input) -> None:
    """Keep ``item`` as the input of ``signature`` unless an earlier one holds it."""
    if signature not in findings or item.first_s < findings[signature].first_s:
        findings[signature] = item
