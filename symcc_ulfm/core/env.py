"""Names of the environment variables of the runtime contract (DESIGN.md §11)."""

HOT_PATH_VAR = "SYMCC_ULFM_HOT_PATH"  # "1" turns the ULFM path on; launch sets it
FT_ENABLE_VAR = "OMPI_MCA_mpi_ft_enable"  # set by mpiexec --with-ft ulfm
