"""Shared test helpers, by what they help with: ``mpi`` (launching real campaigns), ``store`` (state directories, a small tmpfs), ``evidence`` (run directories), ``concolic`` (the engine), ``master_invariants`` (the master's
invariants after every event)."""
