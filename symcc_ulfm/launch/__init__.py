"""The host side of a campaign job: ``prepare`` (the state directory, the executor probe),
``mpiexec`` (the command line and its environment), ``job`` (run it, bounded and supervised),
``conclude`` (final coverage and the oracle's verdict), ``engines`` (the same campaign on
ipyparallel MPI engines) and ``json_child`` (``launch --json`` as a child process)."""
