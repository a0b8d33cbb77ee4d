"""Pure core: no mpi4py, no clock, no filesystem. Values in, decisions out."""
