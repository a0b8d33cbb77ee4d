"""The master's state machine, pure: events in, instructions out (``machine``).

``events`` (every event, fact and instruction), ``start`` (replay, reclaim, rebuild at the start
of a generation), ``rounds`` (group commit rounds), ``manifest`` (the one builder of commit
manifests), ``poison`` (which lapsed inputs are quarantined), ``frontier`` (what to analyze next
and where new inputs go), ``ownership`` (rendezvous ownership of inputs), ``termination`` (when
the search is exhausted) and ``report`` (what a master takes from a RESULT).
"""
