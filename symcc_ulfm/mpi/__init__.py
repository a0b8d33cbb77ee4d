"""The MPI layer: the only code that imports mpi4py.

capability (ULFM probe), transport (bytes, bounded waits), ft (ULFM or plain operations),
recovery (DESIGN.md §6), master / worker loops, injection, campaign (the per-rank runtime),
rank (the ``mpiexec`` entry point), engine (the functions ipyparallel engines run) and
access_probe (what another user needs to run a rank).
"""
