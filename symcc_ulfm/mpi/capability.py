"""ULFM capability check: probe real behaviour, never trust that the symbols exist.

mpi4py silently degrades when the MPIX symbols are missing (Shrink becomes Dup, Agree becomes
Allreduce, Revoke does nothing), and Open MPI without ``--with-ft ulfm`` keeps the symbols but
aborts the job on the first failure. So every rank, on a duplicate of ``COMM_SELF``: revokes
it and checks that it reports revoked and that the next operation fails with ``ERR_REVOKED``;
shrinks and agrees on it; and reads whether the runtime enabled FT (``mpi_ft_enable``, which
``mpiexec --with-ft ulfm`` sets). The ranks then compare their capabilities and policy SHA.
"""

from __future__ import annotations

import os
from typing import Any

from mpi4py import MPI

from ..core.env import FT_ENABLE_VAR, HOT_PATH_VAR
from ..errors import CapabilityError


def ft_enabled() -> bool:
    """Whether the runtime enabled fault tolerance for this job (``mpiexec --with-ft ulfm``)."""
    return os.environ.get(FT_ENABLE_VAR, "").lower() in ("1", "true", "yes", "enabled")


def probe() -> dict[str, Any]:
    """This rank's capability facts (JSON-able)."""
    facts: dict[str, Any] = {
        "mpi_library": MPI.Get_library_version().split(",")[0].strip(),
        "mpi4py": __import__("mpi4py").__version__,
        "ft_enabled": ft_enabled(),
        "revoke": False,
        "shrink": False,
        "agree": False,
    }
    comm = MPI.COMM_SELF.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    try:
        comm.Revoke()
        revoked = comm.Is_revoked()
        try:
            comm.Barrier()
            interrupted = False
        except MPI.Exception as exc:
            interrupted = exc.Get_error_class() == MPI.ERR_REVOKED
        facts["revoke"] = bool(revoked and interrupted)
        shrunk = comm.Shrink()
        facts["shrink"] = shrunk.Get_size() == 1 and not shrunk.Is_revoked()
        facts["agree"] = shrunk.Agree(0b1011) == 0b1011
        shrunk.Free()
    except (MPI.Exception, NotImplementedError, AttributeError) as exc:
        facts["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        comm.Free()
    return facts


def require_ulfm(facts: dict[str, Any], stable: int) -> None:
    """Fail closed unless this rank has working ULFM enabled at runtime."""
    if os.environ.get(HOT_PATH_VAR) != "1":
        raise CapabilityError(
            f"rank {stable}: {HOT_PATH_VAR}=1 is not set; the ULFM hot path is off "
            "(symcc-ulfm launch sets it; use --no-ulfm for the fault-free baseline)"
        )
    missing = [name for name in ("revoke", "shrink", "agree") if not facts.get(name)]
    if missing:
        raise CapabilityError(
            f"rank {stable}: ULFM {', '.join(missing)} did not behave as ULFM on COMM_SELF "
            f"({facts.get('error', 'MPIX extension missing or emulated by mpi4py')}); refusing to run as plain MPI"
        )
    if not facts.get("ft_enabled"):
        raise CapabilityError(
            f"rank {stable}: the MPI runtime has fault tolerance disabled ({FT_ENABLE_VAR} unset); "
            "run under mpiexec --with-ft ulfm"
        )


def compare(all_facts: list[dict[str, Any]], policy_shas: list[str]) -> None:
    """Every rank must report the same capabilities and the same policy SHA."""
    if len(set(policy_shas)) != 1:
        by_sha: dict[str, list[int]] = {}
        for rank, sha in enumerate(policy_shas):
            by_sha.setdefault(sha, []).append(rank)
        raise CapabilityError(f"ranks disagree on the policy SHA-256: {by_sha}")
    keys = ("mpi_library", "mpi4py", "ft_enabled", "revoke", "shrink", "agree")
    reference = {k: all_facts[0].get(k) for k in keys}
    for rank, facts in enumerate(all_facts):
        mine = {k: facts.get(k) for k in keys}
        if mine != reference:
            raise CapabilityError(f"rank {rank} reports capabilities {mine}, rank 0 reports {reference}")
