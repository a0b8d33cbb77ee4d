"""A Slurm allocation as a value: its job, nodes and task slots, read from Slurm's variables.

Inside ``sbatch`` or ``salloc`` Slurm describes the allocation in the job's environment:
``SLURM_JOB_NODELIST`` in its compressed host-list form (``node[1-3,5]``, ``rack[1-2]-n[01-02]``),
``SLURM_TASKS_PER_NODE`` with run-length counts (``2(x3),1`` = 2, 2, 2, 1 tasks on four nodes).
:func:`from_environment` takes that mapping (the caller reads ``os.environ``; ``launch.batch``)
and :func:`placement` fills the nodes' slots with a campaign's ranks in node order, as
``mpiexec --map-by slot`` does, so that the host of every stable rank is known before the job
starts (``core.hosts.host_of_rank``). Malformed values are refused with the variable named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import HostSpecError
from .hosts import is_host_name

JOB_ID_VARS = ("SLURM_JOB_ID", "SLURM_JOBID")  # the older name is still set by Slurm 22.05
NODELIST_VARS = ("SLURM_JOB_NODELIST", "SLURM_NODELIST")
TASKS_VAR = "SLURM_TASKS_PER_NODE"
MAX_NODES = 65536  # more than any allocation this tool is run in; bounds what a host list may expand to
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")  # ASCII digits only: \\d would take any script's
_TASKS = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?")
_JOB_ID = re.compile(r"[0-9]+(?:_[0-9]+)?")


@dataclass(frozen=True)
class Allocation:
    """One Slurm job's allocation: the job id, its nodes in Slurm's order and the task slots of each."""

    job_id: str
    nodes: tuple[str, ...]
    tasks: tuple[int, ...]
    cluster: str | None = None

    def __post_init__(self):
        if len(self.nodes) != len(self.tasks):
            raise HostSpecError(TASKS_VAR, f"{len(self.tasks)} task counts for {len(self.nodes)} nodes "
                                           f"({', '.join(self.nodes[:4])}{', ...' if len(self.nodes) > 4 else ''})")

    @property
    def slots(self) -> int:
        return sum(self.tasks)

    def hosts(self) -> tuple[tuple[str, int], ...]:
        """Every node with its task slots, in Slurm's order (the form of ``core.hosts.parse_hosts``)."""
        return tuple(zip(self.nodes, self.tasks, strict=True))

    def to_json(self) -> dict:
        return {"job_id": self.job_id, "cluster": self.cluster, "nodes": list(self.nodes), "tasks_per_node": list(self.tasks)}


def expand_nodelist(text: str, limit: int = MAX_NODES) -> tuple[str, ...]:
    """Expand a Slurm host list: ``a,b``, ``node[1-3,5]``, ``node[01-10]`` (zero padding kept),
    ``rack[1-2]-n[1-2]`` (every combination, the leftmost range outermost)."""
    if not isinstance(text, str) or not text.strip():
        raise HostSpecError(NODELIST_VARS[0], f"{text!r}: expected a host list such as node[1-3,5]")
    names: list[str] = []
    for item in _split_top_level(text.strip()):
        names += _expand_item(item, limit - len(names))
    seen: set[str] = set()
    twice = sorted({name for name in names if name in seen or seen.add(name)})
    if twice:
        raise HostSpecError(NODELIST_VARS[0], f"{text!r} names a node twice: {', '.join(twice[:4])}")
    return tuple(names)


def _split_top_level(text: str) -> list[str]:
    """Split on the commas outside brackets; refuse unbalanced or nested brackets."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise HostSpecError(NODELIST_VARS[0], f"{text!r}: nested brackets")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostSpecError(NODELIST_VARS[0], f"{text!r}: ']' without '['")
        elif char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise HostSpecError(NODELIST_VARS[0], f"{text!r}: '[' without ']'")
    items.append(text[start:])
    if any(not item for item in items):
        raise HostSpecError(NODELIST_VARS[0], f"{text!r}: an empty entry")
    return items


def _expand_item(item: str, limit: int) -> list[str]:
    """One entry: literal parts and bracket groups, expanded into every combination."""
    parts = re.split(r"(\[[^\]]*\])", item)
    names = [""]
    for part in parts:
        if part.startswith("["):
            choices = _expand_ranges(part[1:-1], item, limit)
        else:
            choices = [part]
        if len(names) * len(choices) > limit:
            raise HostSpecError(NODELIST_VARS[0], f"{item!r} expands to more than {MAX_NODES} nodes")
        names = [name + choice for name in names for choice in choices]
    for name in names:
        if not is_host_name(name):
            raise HostSpecError(NODELIST_VARS[0], f"{name!r} (from {item!r}) is not a host name this tool can pass to "
                                                  "mpiexec (letters, digits, '.' and '-')")
    return names


def _expand_ranges(body: str, item: str, limit: int) -> list[str]:
    values: list[str] = []
    for piece in body.split(","):
        match = _RANGE.fullmatch(piece)
        if not match:
            raise HostSpecError(NODELIST_VARS[0], f"{item!r}: {piece!r} is not N or N-M")
        low, high = match[1], match[2] if match[2] is not None else match[1]
        if int(high) < int(low):
            raise HostSpecError(NODELIST_VARS[0], f"{item!r}: the range {piece!r} runs backwards")
        if int(high) - int(low) + 1 + len(values) > limit:
            raise HostSpecError(NODELIST_VARS[0], f"{item!r} expands to more than {MAX_NODES} nodes")
        width = len(low)  # node[01-10]: every number as wide as the low one (Slurm's zero padding)
        values += [str(n).zfill(width) for n in range(int(low), int(high) + 1)]
    return values


def expand_tasks(text: str, limit: int = MAX_NODES) -> tuple[int, ...]:
    """Expand ``SLURM_TASKS_PER_NODE``: ``2(x3),1`` -> (2, 2, 2, 1); every count >= 1."""
    if not isinstance(text, str) or not text.strip():
        raise HostSpecError(TASKS_VAR, f"{text!r}: expected counts such as 2(x3),1")
    counts: list[int] = []
    for piece in text.strip().split(","):
        match = _TASKS.fullmatch(piece)
        if not match:
            raise HostSpecError(TASKS_VAR, f"{text!r}: {piece!r} is not N or N(xK)")
        count, repeat = int(match[1]), int(match[2]) if match[2] is not None else 1
        if count < 1 or repeat < 1:
            raise HostSpecError(TASKS_VAR, f"{text!r}: {piece!r} gives a node no task slot")
        if len(counts) + repeat > limit:
            raise HostSpecError(TASKS_VAR, f"{text!r} describes more than {MAX_NODES} nodes")
        counts += [count] * repeat
    return tuple(counts)


def from_environment(env: Mapping[str, str]) -> Allocation | None:
    """The allocation the environment describes, None outside one (no Slurm job id).

    A job id with no node list or no task counts is refused: inside ``salloc``/``sbatch`` Slurm
    always sets them, so something else has changed the environment."""
    job_id = next((env[name] for name in JOB_ID_VARS if env.get(name)), None)
    if job_id is None:
        return None
    if not _JOB_ID.fullmatch(job_id.strip()):
        raise HostSpecError(JOB_ID_VARS[0], f"{job_id!r}: expected a Slurm job id such as 4242")
    nodelist = next((env[name] for name in NODELIST_VARS if env.get(name)), None)
    if nodelist is None:
        raise HostSpecError(NODELIST_VARS[0], f"not set although {JOB_ID_VARS[0]}={job_id.strip()} is: launch "
                                              "inside the allocation's own environment (sbatch or salloc)")
    if not env.get(TASKS_VAR):
        raise HostSpecError(TASKS_VAR, f"not set although {JOB_ID_VARS[0]}={job_id.strip()} is: request tasks "
                                       "(sbatch --ntasks or --ntasks-per-node)")
    return Allocation(job_id.strip(), expand_nodelist(nodelist), expand_tasks(env[TASKS_VAR]),
                      env.get("SLURM_CLUSTER_NAME") or None)


def placement(allocation: Allocation, ranks: int) -> tuple[tuple[str, int], ...]:
    """The hosts of a job of ``ranks`` ranks in ``allocation``: its nodes' slots filled in order,
    the nodes that get no rank left out; refused when the allocation has fewer slots than ranks."""
    if allocation.slots < ranks:
        raise HostSpecError("ranks", f"{ranks} ranks but the Slurm allocation {allocation.job_id} has "
                                     f"{allocation.slots} task slots ({TASKS_VAR} over {len(allocation.nodes)} nodes); "
                                     f"pass --ranks {allocation.slots} or request {ranks} tasks")
    hosts, left = [], ranks
    for node, slots in allocation.hosts():
        if left == 0:
            break
        hosts.append((node, min(slots, left)))
        left -= hosts[-1][1]
    return tuple(hosts)
