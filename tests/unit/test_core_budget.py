"""The campaign's time budget (``core.budget``): the one place each bound is computed."""

from __future__ import annotations

import pytest

from symcc_ulfm.core.budget import (
    check_lease,
    consumed_after,
    epoch_deadline,
    final_agreement_s,
    job_timeout,
    ranks_over_s,
)
from symcc_ulfm.core.policy import build_policy
from symcc_ulfm.errors import PolicyError


def test_an_epoch_ends_when_the_budget_is_spent():
    assert epoch_deadline(1000.0, 0.0, 15.0) == 1015.0
    assert epoch_deadline(1000.0, 10.0, 15.0) == 1005.0
    assert epoch_deadline(1000.0, 20.0, 15.0) == 1000.0  # never before the epoch starts


def test_consumed_budget_counts_up_to_the_last_sign_of_life_and_never_past_the_deadline():
    assert consumed_after(2.0, 1000.0, 1004.5, 15.0) == 6.5
    assert consumed_after(2.0, 1000.0, 999.0, 15.0) == 2.0  # a clock step back costs nothing
    assert consumed_after(10.0, 1000.0, 1010.0, 15.0) == 15.0


def test_job_bounds_follow_the_policy():
    policy = build_policy(deadline_s=15.0, timeouts={"startup_s": 30.0, "shutdown_grace_s": 4.0, "job_grace_s": 20.0,
                                                     "finalize_s": 3.0, "recovery_step_s": 7.0})
    assert job_timeout(policy, policy.deadline_s) == 30.0 + 15.0 + 4.0 + 20.0
    assert job_timeout(policy, 40.0) == 30.0 + 40.0 + 4.0 + 20.0  # a resume extended the deadline
    assert ranks_over_s(policy) == 3.0 + 5.0
    assert final_agreement_s(2.0, policy.timeouts) == 2.0 + 4.0 + 14.0
    assert final_agreement_s(-3.0, policy.timeouts) == 4.0 + 14.0


def test_a_lease_must_hold_two_runs_and_overruns():
    policy = build_policy(timeouts={"lease_s": 10.0})
    check_lease(policy, run_limit_s=3.0, execution_limit_s=2.0)
    with pytest.raises(PolicyError, match="timeouts.lease_s.*at least 10.2 s"):
        check_lease(policy, run_limit_s=3.0, execution_limit_s=2.1)
