"""The MPI layer: the only code that imports mpi4py.

capability (ULFM probe), transport (bytes, bounded waits), ft (ULFM or plain operations),
recovery (DESIGN.md §6), master / worker loops, injection, campaign (the per-rank runtime) and
rank (the ``mpiexec`` entry point).
"""
