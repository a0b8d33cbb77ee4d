"""The reference campaign: the one configuration ``make evidence``, the run notebook, ``launch``'s
defaults and the multinode gate all start from (DESIGN.md §3, §12).

10 ranks (8 active, 2 warm spares), 2 masters with 3 workers each, 15 s, the ``concolic``
executor on the ``bundle`` target (a container read by ``plistlib`` and ``tomllib``: real
parsers, still yielding new coverage at the deadline, and documented bugs), and the failure
schedule ``0:2,1:3``. ``launch`` takes the layout and the deadline here as its
defaults, not the target (the executor's own default) nor the schedule: it injects nothing
unless asked (``--failure-schedule``), while the notebook and ``make evidence`` pass this one
explicitly.
"""

from __future__ import annotations

from typing import Any

REFERENCE_SCHEDULE = "0:2,1:3"
REFERENCE: dict[str, Any] = {
    "ranks": 10, "warm_spares": 2, "workers_per_master": 3, "failure_schedule": REFERENCE_SCHEDULE,
    "deadline_s": 15.0, "executor": "concolic", "target": "bundle", "executor_options": {}, "hosts": "",
    "minimum_hosts": 1, "seed": 0, "worker_kinds": "", "keep": "all", "slice_s": 5.0,
    "isolation": "namespaces", "stop_after": 0,
}
