"""Entry point of every rank under mpiexec: ``python -m symcc_ulfm.mpi.rank STATE_DIR``.

Exit status: 0 when this rank finished the campaign, the error's exit code otherwise (a
victim of an injected failure exits 86 before it gets here).

Only a rank that finished calls ``MPI_Finalize``. A rank that ends through any exception
(a full disk, a bug, a recovery that failed closed) leaves with ``os._exit`` and the error's
code, without finalizing: to ULFM that is a process failure, which the survivors recover from
at once, instead of a rank that left politely while its leases wait for the final agreement's
timeout. The reason is in the rank's log (``rank-error``, when the log can still be written)
and on its standard error, which ``launch`` keeps.

A rank also dies with the process that started it (``PR_SET_PDEATHSIG``): when ``mpiexec`` is
killed, with or without ``launch``, no rank runs on unsupervised.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import traceback

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies; exit at once if it is gone already."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: mpiexec's own clean-up is all there is
    if os.getppid() != parent:
        os._exit(70)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m symcc_ulfm.mpi.rank STATE_DIR", file=sys.stderr)
        return 2
    die_with_parent()
    from ..errors import SymccUlfmError
    from .campaign import run_campaign

    try:
        outcome = run_campaign(argv[1], finalize=True)
    except SymccUlfmError as exc:
        _leave(exc.exit_code, f"symcc-ulfm rank error (exit {exc.exit_code}): {type(exc).__name__}: {exc}")
    except BaseException as exc:  # a bug, MemoryError, KeyboardInterrupt: a failure all the same
        traceback.print_exc()
        _leave(70, f"symcc-ulfm rank error (exit 70): unexpected {type(exc).__name__}: {exc}")
    print(f"rank {outcome['stable']}: {outcome['status']} in generation {outcome['generation']} "
          f"as {outcome['role']}", file=sys.stderr)
    return 0


def _leave(code: int, message: str) -> None:
    """End this rank abnormally (see the module docstring)."""
    try:
        print(message[:4000], file=sys.stderr, flush=True)
    finally:
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
