"""The master's state machine, pure: events in, instructions out (``machine``).

``fields`` (the state every part of it reads and writes, declared once, and its config),
``invariants`` (what holds of that state between two events), ``events`` (every event, fact and
instruction), ``start`` (replay, reclaim, rebuild at the start of a generation), ``rounds``
(group commit rounds), ``manifest`` (the one builder of commit manifests), ``poison`` (which
lapsed inputs are quarantined), ``frontier`` (what to analyze next and where new inputs go),
``ownership`` (rendezvous ownership of inputs), ``termination`` (when the search is exhausted)
and ``report`` (what a master takes from a RESULT).
"""
