"""Evidence: run directories, seal and verify, provenance, and the independent oracle."""
