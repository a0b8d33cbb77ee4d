"""A user's fuzz harness: the builds ``symcc-ulfm build`` makes of it (``build``) and their manifest
(``directory``)."""
