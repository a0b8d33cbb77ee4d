"""Fuzzer worker kinds (``core.kinds``): given time slices (``core.slices``) instead of
inputs, each returns what its fuzzer kept meanwhile. ``afl`` runs AFL++'s ``afl-fuzz`` on a
binary target's AFL build, ``havoc`` the concolic engine's mutation phase on a Python target,
``simfuzz`` a seeded stand-in for the protocol tests; ``sync`` is how the others' finds reach them."""
