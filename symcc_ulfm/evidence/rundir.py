"""The run directory: ``<base>/<run-id>/`` and what goes where (see evidence/README.md).

``make evidence`` makes it under ``evidence/`` (the sealed runs of the checkout); the notebook
run without ``run_dir`` (in JupyterLab, or by papermill without ``-p run_dir``) makes it under
``runs/notebook/``, which git ignores, so that interactive runs leave nothing untracked in the
checkout.

::

    state/              the campaign state directory (policy.json, membership/, wal/, corpus/, logs/, ...)
    provenance.json     source-tree, seed-input and tool identities, plus the live re-checks
    engines.json        what each MPI engine returned, classified against the failure schedule
    engines-output.txt  mpiexec's output for the engine job
    run.ipynb           the executed notebook (written by papermill)
    figures/            membership, throughput and per-master figures, SVG and PNG
    oracle.json         the oracle's verdict (the same bytes as state/oracle.json)
    findings.json       the unique findings and the replay of each (``symcc-ulfm findings`` / ``replay``)
    SHA256SUMS.txt      ``sha256sum -c`` list of every other file
    INCOMPLETE          written when the directory is made, removed by the seal: a run interrupted or
                        failed before it was sealed keeps it, and ``verify`` says it is incomplete

Run ids are ``f447-<UTC time>-<first 8 hex of the policy SHA-256>``.

``python -m symcc_ulfm.evidence.rundir BASE [NAME=VALUE ...]`` creates a new, empty run
directory for the notebook's policy with those parameters and prints its path (the Makefile
uses it so that papermill can write the executed notebook into the run).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.policy import Policy, build_policy
from ..core.reference import REFERENCE
from ..executors import check_name

RUN_PREFIX = "f447"
NOTEBOOK_NAME = "run.ipynb"
SUMS_NAME = "SHA256SUMS.txt"
INCOMPLETE_NAME = "INCOMPLETE"
INCOMPLETE_TEXT = ("This run was not sealed: it was interrupted or failed before its seal step, which removes this "
                   "file. It is not evidence.\n")


def repo_root() -> Path:
    """The checkout holding the package (where ``evidence/`` lives)."""
    return Path(__file__).resolve().parents[2]


def interactive_base() -> Path:
    """Where a notebook run without ``run_dir`` goes: ``runs/notebook/`` of the checkout (ignored by git)."""
    return repo_root() / "runs" / "notebook"


def policy_from_parameters(**params: Any) -> Policy:
    """The campaign policy of the notebook parameters, whose defaults are the reference campaign's
    (unknown names are an error, and so is an executor the registry does not have)."""
    unknown = sorted(set(params) - set(REFERENCE))
    if unknown:
        raise TypeError(f"not policy parameters: {', '.join(unknown)}")
    values = {**REFERENCE, **params}
    check_name(values["executor"])
    values["deadline_s"] = float(values["deadline_s"])
    values["executor_options"] = dict(values["executor_options"] or {})
    return build_policy(**values)


def run_id(policy: Policy, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{RUN_PREFIX}-{stamp}-{policy.sha256[:8]}"


@dataclass(frozen=True)
class RunDir:
    root: Path

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def provenance(self) -> Path:
        return self.root / "provenance.json"

    @property
    def engines(self) -> Path:
        return self.root / "engines.json"

    @property
    def engines_output(self) -> Path:
        return self.root / "engines-output.txt"

    @property
    def notebook(self) -> Path:
        return self.root / NOTEBOOK_NAME

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def oracle(self) -> Path:
        return self.root / "oracle.json"

    @property
    def findings(self) -> Path:
        return self.root / "findings.json"

    @property
    def sums(self) -> Path:
        return self.root / SUMS_NAME

    @property
    def incomplete(self) -> Path:
        """``INCOMPLETE``: present from the directory's making until its seal."""
        return self.root / INCOMPLETE_NAME

    def mark_incomplete(self) -> RunDir:
        """Write ``INCOMPLETE`` (the seal removes it: ``evidence.seal``)."""
        self.incomplete.write_text(INCOMPLETE_TEXT)
        return self


def enclosing_run(state: Path) -> RunDir | None:
    """The run directory whose ``state/`` is ``state`` (it has a provenance record or a seal),
    or None for a state directory of its own."""
    parent = Path(state).parent
    if Path(state).name != "state":
        return None
    run = RunDir(parent)
    return run if run.provenance.exists() or run.sums.exists() else None


def new_run_dir(policy: Policy, base: str | Path | None = None) -> RunDir:
    """Create ``<base>/<run-id>/``, marked incomplete (default base: :func:`interactive_base`); never
    reuse one."""
    base = Path(base) if base is not None else interactive_base()
    base.mkdir(parents=True, exist_ok=True)
    root = base / run_id(policy)
    root.mkdir()
    return RunDir(root.absolute()).mark_incomplete()


def open_run_dir(path: str | Path) -> RunDir:
    """An existing run directory made for this run (empty, or holding only papermill's notebook and
    the ``INCOMPLETE`` mark of :func:`new_run_dir`), marked incomplete."""
    root = Path(path).absolute()
    root.mkdir(parents=True, exist_ok=True)
    extra = sorted(p.name for p in root.iterdir() if p.name not in (NOTEBOOK_NAME, INCOMPLETE_NAME))
    if extra:
        raise FileExistsError(f"{root} already holds {', '.join(extra)}: use a new run directory")
    return RunDir(root).mark_incomplete()


def parse_value(text: str) -> Any:
    """papermill's ``-p`` typing: True/False/None, int, float, else the string."""
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m symcc_ulfm.evidence.rundir BASE [NAME=VALUE ...]", file=sys.stderr)
        return 2
    params = {}
    for pair in argv[1:]:
        name, sep, value = pair.partition("=")
        if not sep:
            print(f"not NAME=VALUE: {pair!r}", file=sys.stderr)
            return 2
        if name in REFERENCE:
            params[name] = parse_value(value)
    print(new_run_dir(policy_from_parameters(**params), argv[0]).root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
