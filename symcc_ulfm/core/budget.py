"""The campaign's time budget: every bound derived from ``deadline_s`` and ``policy.timeouts``.

A campaign runs as one or more *epochs*, one per job (``core.membership``). Within an epoch
the wall deadline counts from the epoch's start and is never extended by recovery; across
epochs ``deadline_s`` is a budget: ``consumed_s`` is what earlier epochs used, so an epoch
ends at ``epoch_started_at + deadline_s - consumed_s``. ``deadline_s`` is the deadline in force
for the epoch: the policy's, or the extension a resume recorded (``core.deadlines``); what a lost
epoch used is charged up to its own deadline.

Around that window: ``launch`` bounds the whole job by the start-up, the window, the shutdown
grace and its own grace (:func:`job_timeout`); ranks may outlive ``mpiexec`` by a bounded
finalize (:func:`ranks_over_s`); the last agreement of a generation waits for the rest of the
window plus the shutdown grace and two recovery steps (:func:`final_agreement_s`); a lease must
hold one run of the executor and one overrunning execution, twice (:func:`check_lease`).
"""

from __future__ import annotations

import dataclasses
import math

from ..errors import PolicyError
from .policy import Policy, Timeouts

FINALIZE_MARGIN_S = 5.0  # what ranks may take past timeouts.finalize_s before they are killed


def epoch_deadline(epoch_started_at: float, consumed_s: float, deadline_s: float) -> float:
    """Wall time at which an epoch that started at ``epoch_started_at`` ends."""
    return epoch_started_at + max(0.0, deadline_s - consumed_s)


def consumed_after(previous_consumed_s: float, epoch_started_at: float, last_sign: float, deadline_s: float) -> float:
    """The budget used once an epoch that started at ``epoch_started_at`` was last alive at ``last_sign``."""
    return min(deadline_s, previous_consumed_s + max(0.0, last_sign - epoch_started_at))


def job_timeout(policy: Policy, deadline_s: float) -> float:
    """How long ``launch`` (or the notebook's engines) waits for a whole job before killing it, for
    a campaign whose deadline is ``deadline_s`` (``core.deadlines``: the latest)."""
    t = policy.timeouts
    return t.startup_s + deadline_s + t.shutdown_grace_s + t.job_grace_s


def ranks_over_s(policy: Policy) -> float:
    """How long ranks may outlive ``mpiexec`` (a bounded finalize) before they are killed."""
    return policy.timeouts.finalize_s + FINALIZE_MARGIN_S


def worker_give_up(deadline: float, timeouts: Timeouts) -> float:
    """Wall time after which a worker that got no STOP from its master stops on its own."""
    return deadline + timeouts.shutdown_grace_s + timeouts.recovery_step_s


def final_agreement_s(remaining_s: float, timeouts: Timeouts) -> float:
    """How long a rank waits in the last agreement of a generation, ``remaining_s`` before the deadline."""
    return max(0.0, remaining_s) + timeouts.shutdown_grace_s + 2 * timeouts.recovery_step_s


def lease_needed(run_limit_s: float, execution_limit_s: float) -> float:
    """The shortest ``lease_s`` :func:`check_lease` accepts for these limits."""
    return 2 * (run_limit_s + execution_limit_s)


def fit_lease(policy: Policy, run_limit_s: float, execution_limit_s: float) -> Policy:
    """``policy`` with ``lease_s`` raised to what the executor needs (whole seconds), where the
    user did not choose it: what ``launch`` without ``--timeout lease_s`` and the notebook run."""
    needed = math.ceil(lease_needed(run_limit_s, execution_limit_s))
    if policy.timeouts.lease_s >= needed:
        return policy
    return dataclasses.replace(policy, timeouts=dataclasses.replace(policy.timeouts, lease_s=float(needed)))


def check_lease(policy: Policy, run_limit_s: float, execution_limit_s: float) -> None:
    """Refuse a ``lease_s`` too short for the executor: a worker that runs an input for as long as
    its executor allows must never look stuck to its master, which fences it after ``lease_s``.

    One lease can take a whole run plus the coverage runs of its children, which the worker
    bounds by half the lease, plus one execution that overruns (its limit and the sandbox's
    grace); twice that must fit in the lease (the worker's next lease waits behind it).
    """
    needed = lease_needed(run_limit_s, execution_limit_s)
    lease = policy.timeouts.lease_s
    if lease < needed:
        raise PolicyError("timeouts.lease_s", f"{lease:g} s is too short for this executor: one run may take "
                                              f"{run_limit_s:g} s and one execution {execution_limit_s:g} s (with the "
                                              f"sandbox's grace), so a lease needs at least {needed:g} s; raise it "
                                              "(--timeout lease_s=...) or lower the executor's time limits")
