"""symcc_ulfm: fault-tolerant multi-master concolic execution campaigns on MPI with ULFM."""

__version__ = "0.1.0"
