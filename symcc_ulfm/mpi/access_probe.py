"""Can this user run a rank on a state directory? ``python -m symcc_ulfm.mpi.access_probe STATE_DIR``.

Run as the unprivileged host-B user (``gates.netns.access``): it imports what a rank imports first
(mpi4py, without initialising MPI, and the rank's entry point) and exits 0 when the state
directory is readable, writable and searchable; otherwise the reason is its last line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def mpi4py_dir() -> Path:
    """The installed mpi4py package, which every rank imports."""
    import mpi4py

    return Path(mpi4py.__file__).parent


def main(argv: list[str]) -> int | str:
    if len(argv) != 2:
        return "usage: python -m symcc_ulfm.mpi.access_probe STATE_DIR"
    mpi4py_dir()
    import symcc_ulfm.mpi.rank  # noqa: F401
    import symcc_ulfm.store.atomic  # noqa: F401

    os.listdir(argv[1])
    return 0 if os.access(argv[1], os.R_OK | os.W_OK | os.X_OK) else f"cannot write {argv[1]}"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
