"""Size bounds that every reader applies before it reads, and every writer before it writes.

A state directory is shared with workers (and, across hosts, with other users): a staged
candidate, a corpus object or a record may be a sparse file far larger than it claims, so no
file is read without a bound known in advance. The oracle and the verifier carry their own
copies of these numbers (they import nothing from the runtime).
"""

from __future__ import annotations

MAX_OBJECT_BYTES = 64 << 20  # one corpus object: a staged candidate, a seed
MAX_POLICY_BYTES = 1 << 20  # policy.json (executor options and their seeds included)
MAX_RECORD_BYTES = 64 << 20  # one WAL record file (every state of one work identity)
MAX_MEMBERSHIP_BYTES = 16 << 20  # a snapshot, layout, prepare or receipt
MAX_SMALL_JSON_BYTES = 1 << 20  # outcome.json, executor.json, endpoint.json and the like
