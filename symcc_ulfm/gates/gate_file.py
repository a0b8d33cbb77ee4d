"""A gate's end: its ``gate.json``, the run directory sealed and verified when every check passed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..errors import CheckFailed
from ..evidence.seal import seal
from ..evidence.verify import verify


def conclude_gate(out: Path, gate: dict, problems: list[str], name: str, passed: Callable[[dict], str],
                  echo: Callable[[str], None]) -> dict:
    """Write ``out/gate.json`` (``passed`` and ``problems`` added to ``gate``); when no check failed,
    seal the run directory and verify it (a failed verification is written too: a failed gate is
    never left looking sealed). Raise CheckFailed naming every problem; else echo ``passed(gate)``
    and return ``gate``."""

    def write() -> None:
        gate.update(passed=not problems, problems=problems)
        (out / "gate.json").write_text(json.dumps(gate, indent=1, sort_keys=True) + "\n")

    write()
    if not problems:
        seal(out)
        result = verify(out)
        gate["verify"] = {k: result[k] for k in ("passed", "result_sha256", "files_checked")}
        problems += [f"verify: {p}" for p in result["problems"]]
        if problems:
            write()
    if problems:
        raise CheckFailed(f"{name} gate failed:\n  " + "\n  ".join(problems) + f"\n(run directory {out})")
    echo(f"{name} gate: PASS  {passed(gate)}, {gate['verify']['files_checked']} files sealed, "
         f"{gate['seconds']:.1f} s -> {out}")
    return gate
