"""Entry point of every rank under mpiexec: ``python -m symcc_ulfm.mpi.rank STATE_DIR``.

Exit status: 0 when this rank finished the campaign, the error's exit code otherwise (a
victim of an injected failure exits 86 before it gets here).
"""

from __future__ import annotations

import sys
import traceback


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m symcc_ulfm.mpi.rank STATE_DIR", file=sys.stderr)
        return 2
    from mpi4py import MPI

    from ..errors import SymccUlfmError
    from .campaign import finalize_bounded, run_campaign

    code = 0
    try:
        outcome = run_campaign(argv[1], finalize=True)
        print(f"rank {outcome['stable']}: {outcome['status']} in generation {outcome['generation']} "
              f"as {outcome['role']}", file=sys.stderr)
    except SymccUlfmError as exc:
        print(f"symcc-ulfm rank error: {exc}", file=sys.stderr)
        code = exc.exit_code
    except Exception:
        traceback.print_exc()
        code = 70
    if not MPI.Is_finalized():
        finalize_bounded(5.0)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
