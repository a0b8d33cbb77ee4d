"""The independent oracle: it imports neither ``core`` nor ``store`` (its own parser, so that a
bug of the runtime cannot hide in its checker). ``judge`` reads a state directory and decides;
``membership_checks``, ``wal_checks`` (WAL, corpus, seeds), ``finding_checks`` and ``log_checks``
are its parts, ``rules`` what they share, ``verdict_text`` its verdict in words."""
