"""Benchmarks (``make bench``): measured figures, printed and sealed, never asserted."""
