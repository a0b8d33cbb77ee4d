"""Shared test helpers, by what they help with: ``mpi`` (launching real campaigns), ``store`` (state directories, a small tmpfs), ``evidence`` (run directories), ``concolic`` (the engine)."""
