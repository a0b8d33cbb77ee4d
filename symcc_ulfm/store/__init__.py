"""Durable store: filesystem only, always raises on failure."""
