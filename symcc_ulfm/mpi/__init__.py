"""The MPI layer: the only code that imports mpi4py.

``rank`` (the ``mpiexec`` entry point), ``campaign`` (start-up, generations, recovery and
shutdown of one rank: the role loops of ``runtime`` wired to communicators), ``context`` (a
rank's communicators beside ``runtime.rank_state``), ``channels`` (the MPI transport),
``requests`` (buffers, tags, bounded waits, what counts as a failure), ``recovery`` (DESIGN.md
§6), ``ft`` (ULFM or plain operations), ``capability`` (the ULFM probe), ``watchdog`` (bounds of
blocking calls), ``engine`` (the functions ipyparallel engines run) and ``access_probe`` (what
another user needs to run a rank).
"""
