"""One-process commands that need no MPI job: ``explore``, ``replay`` (and ``findings``),
``export`` and ``seeds`` (reading seed directories)."""
