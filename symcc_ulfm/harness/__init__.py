"""A user's fuzz harness: the builds ``symcc-ulfm build`` makes of it and their manifest (``manifest``)."""
