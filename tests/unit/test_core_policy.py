"""Policy, file modes, host specs, failure schedules and canonical JSON (pure core)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from symcc_ulfm.core.canonical import canonical_json, digest, is_sha256_hex, sha256_hex
from symcc_ulfm.core.hosts import format_hosts, host_of_rank, parse_hosts
from symcc_ulfm.core.modes import (
    CORPUS_MODE_VAR,
    DEFAULT_CORPUS_MODE,
    DEFAULT_SNAPSHOT_MODE,
    SNAPSHOT_MODE_VAR,
    FileModes,
    directory_mode,
    format_mode,
    modes_from_env,
    parse_mode,
)
from symcc_ulfm.core.policy import POLICY_FORMAT, Policy, Timeouts, build_policy, differences
from symcc_ulfm.core.schedule import FailureEvent, format_schedule, parse_schedule
from symcc_ulfm.errors import ConfigError, HostSpecError, ModeError, PolicyError, ScheduleError

# -- canonical JSON ----------------------------------------------------------------------------


def test_canonical_json_is_sorted_compact_ascii():
    assert canonical_json({"b": 1, "a": [1, "é"]}) == b'{"a":[1,"\\u00e9"],"b":1}'
    assert canonical_json({"a": 1, "b": 2}) == canonical_json({"b": 2, "a": 1})
    assert digest({"x": 1}) == sha256_hex(b'{"x":1}')


def test_canonical_json_rejects_nan():
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


@pytest.mark.parametrize(
    "text, ok",
    [("a" * 64, True), ("0" * 64, True), ("A" * 64, False), ("a" * 63, False), ("g" * 64, False), (None, False)],
)
def test_is_sha256_hex(text, ok):
    assert is_sha256_hex(text) is ok


# -- policy ------------------------------------------------------------------------------------


def test_default_policy_is_the_reference_campaign():
    p = Policy()
    assert (p.ranks, p.warm_spares, p.workers_per_master, p.active_budget) == (10, 2, 3, 8)
    assert p.deadline_s == 15.0 and p.executor == "concolic" and p.minimum_hosts == 1
    assert is_sha256_hex(p.sha256)


def test_policy_is_frozen():
    p = Policy()
    with pytest.raises(AttributeError):
        p.ranks = 4  # type: ignore[misc]


def _full_policy() -> Policy:
    return build_policy(
        ranks=10,
        warm_spares=2,
        workers_per_master=3,
        deadline_s=20,
        failure_schedule="0:2,1:5@commit!",
        executor="simulate",
        target="magic",
        executor_options={"cost_s": 0.01, "nested": {"k": [1, 2, None, True]}},
        hosts="node-a:9,node-b:1",
        minimum_hosts=2,
        seed=7,
        timeouts={"lease_s": 5, "recovery_retries": 4},
    )


def test_policy_canonical_json_round_trip():
    p = _full_policy()
    data = p.to_bytes()
    value = json.loads(data)
    assert value["format"] == POLICY_FORMAT
    assert value["failure_schedule"] == "0:2,1:5@commit!"
    assert value["hosts"] == "node-a:9,node-b:1"
    again = Policy.from_json(value)
    assert again == p
    assert again.to_bytes() == data
    assert again.sha256 == p.sha256 == sha256_hex(data)
    assert canonical_json(value) == data  # to_bytes is already canonical


def test_policy_sha_int_and_float_deadline_agree():
    assert Policy(deadline_s=15).sha256 == Policy(deadline_s=15.0).sha256
    assert Policy.from_json({"deadline_s": 15}).sha256 == Policy.from_json({"deadline_s": 15.0}).sha256
    a = build_policy(timeouts={"lease_s": 60, "startup_s": 60.0})
    assert a.sha256 == Policy().sha256
    assert Policy(deadline_s=15).sha256 != Policy(deadline_s=16).sha256


def test_policy_sha_stable_across_processes():
    code = (
        "from symcc_ulfm.core.policy import build_policy;"
        "print(build_policy(failure_schedule='1:3,0:2', hosts='node-a:9,node-b:1', minimum_hosts=2).sha256)"
    )
    here = build_policy(failure_schedule="0:2,1:3", hosts="node-a:9,node-b:1", minimum_hosts=2).sha256
    for seed in ("0", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert out.stdout.strip() == here


def test_idle_is_written_only_when_the_workers_wait():
    """``idle`` came after the first format: a policy that keeps the default keeps its bytes."""
    assert "idle" not in Policy().to_json() and Policy().idle == "fuzz"
    waiting = Policy(idle="wait")
    assert waiting.to_json()["idle"] == "wait" and Policy.from_json(waiting.to_json()) == waiting
    assert waiting.sha256 != Policy().sha256


def test_the_mix_is_written_only_when_adaptive():
    assert "mix" not in Policy().to_json() and Policy().mix == "fixed"
    adaptive = Policy(executor="simulate", workers_per_master=2, worker_kinds=(("simfuzz", 1), ("simulate", 1)),
                      mix="adaptive")
    assert adaptive.to_json()["mix"] == "adaptive" and Policy.from_json(adaptive.to_json()) == adaptive
    assert differences(replace(adaptive, mix="fixed"), adaptive) == [("mix", "fixed", "adaptive")]


def test_a_budget_by_count_is_written_only_when_set():
    assert not {"stop_after", "stop_from"} & set(Policy().to_json())
    budget = Policy(stop_after=3, stop_from=2)
    assert budget.to_json()["stop_after"] == 3 and budget.to_json()["stop_from"] == 2
    assert Policy.from_json(budget.to_json()) == budget


def test_policy_from_json_subset_uses_defaults():
    assert Policy.from_json({}) == Policy()
    assert Policy.from_json({"format": POLICY_FORMAT, "ranks": 6, "warm_spares": 1}).ranks == 6


@pytest.mark.parametrize("key", ["rank", "spares", "extra", "Ranks"])
def test_policy_from_json_rejects_unknown_field(key):
    with pytest.raises(PolicyError) as info:
        Policy.from_json({key: 1})
    assert info.value.field == key
    assert "unknown policy field" in str(info.value) and "ranks" in str(info.value)


def test_policy_from_json_rejects_unknown_timeout_field_and_format():
    with pytest.raises(PolicyError) as info:
        Policy.from_json({"timeouts": {"lease": 5}})
    assert info.value.field == "timeouts.lease"
    with pytest.raises(PolicyError) as info:
        Policy.from_json({"format": "symcc-ulfm-policy/2"})
    assert info.value.field == "format" and POLICY_FORMAT in str(info.value)
    for bad in ([], "x", None, 3):
        with pytest.raises(PolicyError):
            Policy.from_json(bad)
    with pytest.raises(PolicyError) as info:
        Policy.from_json({"timeouts": [1]})
    assert info.value.field == "timeouts"


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"ranks": 1}, "ranks"),
        ({"ranks": 4097}, "ranks"),
        ({"ranks": "10"}, "ranks"),
        ({"ranks": 10.0}, "ranks"),
        ({"ranks": True}, "ranks"),
        ({"warm_spares": -1}, "warm_spares"),
        ({"warm_spares": 9}, "warm_spares"),
        ({"ranks": 4, "warm_spares": 3}, "warm_spares"),
        ({"workers_per_master": 0}, "workers_per_master"),
        ({"workers_per_master": 1.5}, "workers_per_master"),
        ({"deadline_s": 0}, "deadline_s"),
        ({"deadline_s": -1}, "deadline_s"),
        ({"deadline_s": float("inf")}, "deadline_s"),
        ({"deadline_s": float("nan")}, "deadline_s"),
        ({"deadline_s": 7 * 86400 + 1}, "deadline_s"),
        ({"deadline_s": "15"}, "deadline_s"),
        ({"deadline_s": True}, "deadline_s"),
        ({"executor": "no such executor"}, "executor"),
        ({"executor": ""}, "executor"),
        ({"executor": None}, "executor"),
        ({"target": ""}, "target"),
        ({"target": "   "}, "target"),
        ({"target": 5}, "target"),
        ({"executor_options": []}, "executor_options"),
        ({"executor_options": {1: 2}}, "executor_options"),
        ({"executor_options": {"a": float("nan")}}, "executor_options.a"),
        ({"executor_options": {"a": {"b": object()}}}, "executor_options.a.b"),
        ({"executor_options": {"a": (1, 2)}}, "executor_options.a"),
        ({"executor_options": {"a": [b"x"]}}, "executor_options.a"),
        ({"hosts": (("node-a", 9),)}, "hosts"),
        ({"hosts": (("node-a", 9), ("node-b", 1)), "minimum_hosts": 3}, "minimum_hosts"),
        ({"minimum_hosts": 0}, "minimum_hosts"),
        ({"minimum_hosts": 11}, "minimum_hosts"),  # more hosts than ranks; without a spec launch checks the job's
        ({"seed": -1}, "seed"),
        ({"seed": 2**63}, "seed"),
        ({"seed": "0"}, "seed"),
        ({"ulfm": 1}, "ulfm"),
        ({"ulfm": "true"}, "ulfm"),
        ({"max_message_bytes": 4095}, "max_message_bytes"),
        ({"max_message_bytes": 256 * 1024 * 1024 + 1}, "max_message_bytes"),
        ({"timeouts": {"lease_s": 5}}, "timeouts"),
        ({"failure_schedule": (FailureEvent(0, 2),), "ulfm": False}, "failure_schedule"),
        # wrong types given straight to Policy (not through build_policy/from_json)
        ({"failure_schedule": "0:2"}, "failure_schedule"),
        ({"failure_schedule": ((0, 2),)}, "failure_schedule"),
        ({"hosts": "node-a:10"}, "hosts"),
        ({"hosts": (("node-a", "10"),)}, "hosts"),
        ({"idle": "sleep"}, "idle"),
        ({"idle": None}, "idle"),
        ({"stop_after": -1}, "stop_after"),
        ({"stop_after": 1.5}, "stop_after"),
        ({"stop_after": True}, "stop_after"),
        ({"stop_from": 2}, "stop_from"),  # without a budget
        ({"stop_after": 1, "stop_from": -1}, "stop_from"),
        ({"mix": "auto"}, "mix"),
        ({"mix": "adaptive"}, "mix"),  # nothing to lend: no worker kinds
        ({"mix": "adaptive", "workers_per_master": 2, "worker_kinds": (("simfuzz", 2),)}, "mix"),  # no analysis slot
        ({"mix": "adaptive", "workers_per_master": 2, "worker_kinds": (("simfuzz", 1), ("simulate", 1)),
          "idle": "wait"}, "mix"),
    ],
)
def test_policy_rejections_name_the_field(overrides, field):
    with pytest.raises(ConfigError) as info:
        Policy(**overrides)
    assert info.value.field == field, str(info.value)
    assert str(info.value).startswith(f"{field}: ")
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "timeouts, field",
    [
        ({"startup_s": 0}, "timeouts.startup_s"),
        ({"recovery_step_s": -1.0}, "timeouts.recovery_step_s"),
        ({"lease_s": 86401}, "timeouts.lease_s"),
        ({"lease_s": "5"}, "timeouts.lease_s"),
        ({"finalize_s": float("nan")}, "timeouts.finalize_s"),
        ({"recovery_retries": 0}, "timeouts.recovery_retries"),
        ({"recovery_retries": 101}, "timeouts.recovery_retries"),
        ({"recovery_retries": 3.0}, "timeouts.recovery_retries"),
        ({"recovery_retries": True}, "timeouts.recovery_retries"),
    ],
)
def test_timeout_rejections_name_the_field(timeouts, field):
    with pytest.raises(PolicyError) as info:
        build_policy(timeouts=timeouts)
    assert info.value.field == field
    with pytest.raises(PolicyError):
        Timeouts(**timeouts)


def test_timeouts_are_floats_and_retries_int():
    t = Timeouts(lease_s=5, recovery_retries=2)
    assert type(t.lease_s) is float and t.lease_s == 5.0 and t.recovery_retries == 2


def test_build_policy_parses_strings_and_schedule_is_validated_by_predict():
    p = build_policy(failure_schedule="1:3,0:2", hosts="a:5,b:5")
    assert p.failure_schedule == (FailureEvent(0, 2), FailureEvent(1, 3))
    assert p.hosts == (("a", 5), ("b", 5))
    with pytest.raises(ScheduleError) as info:
        build_policy(failure_schedule="0:2,2:3")
    assert info.value.field == "failure_schedule" and "never reached" in str(info.value)
    with pytest.raises(ScheduleError):
        build_policy(failure_schedule="0:9@commit")
    with pytest.raises(HostSpecError):
        build_policy(hosts="a:5,a:5")


def test_policy_with_hosts_and_minimum_hosts():
    p = build_policy(hosts="node-a:9,node-b:1", minimum_hosts=2)
    assert p.minimum_hosts == 2
    assert Policy.from_json(p.to_json()) == p


# -- file modes --------------------------------------------------------------------------------

REJECTED_MODES = [
    "644", "0o644", "0999", "rw-r--r--", "", "0602", "0666", "0777", "0400", "0200", "0000",
    "00644", "0644 ", " 0644", "0644\n", "+644", "0x1a4", "1644", "4755", "0o600", "06４4", "-0644", "0 644",
]


@pytest.mark.parametrize("text", REJECTED_MODES)
@pytest.mark.parametrize("var", [SNAPSHOT_MODE_VAR, CORPUS_MODE_VAR])
def test_mode_rejections_name_the_variable(var, text):
    with pytest.raises(ModeError) as info:
        parse_mode(var, text)
    assert info.value.field == var
    message = str(info.value)
    assert message.startswith(f"{var}: ")
    assert repr(text) in message or text in message
    # the accepted form is spelled out (or, for a well-formed but unsafe mode, the reason)
    assert "0600" in message or "world-writable" in message
    with pytest.raises(ModeError):
        modes_from_env({var: text})


@pytest.mark.parametrize("text", ["644", "0o644", "0999", "rw-r--r--", ""])
def test_mode_rejection_names_the_accepted_form(text):
    with pytest.raises(ModeError) as info:
        parse_mode(SNAPSHOT_MODE_VAR, text)
    assert "0640" in str(info.value) and "octal" in str(info.value)


def test_world_writable_and_owner_denied_messages():
    with pytest.raises(ModeError, match="world-writable"):
        parse_mode(CORPUS_MODE_VAR, "0602")
    with pytest.raises(ModeError, match="owner read/write"):
        parse_mode(CORPUS_MODE_VAR, "0400")


@pytest.mark.parametrize("text, mode", [("0600", 0o600), ("0640", 0o640), ("0644", 0o644), ("0660", 0o660)])
def test_accepted_modes(text, mode):
    assert parse_mode(SNAPSHOT_MODE_VAR, text) == mode
    assert format_mode(mode) == text


@pytest.mark.parametrize(
    "mode, dmode", [(0o600, 0o700), (0o640, 0o750), (0o644, 0o755), (0o660, 0o770), (0o620, 0o720)]
)
def test_directory_mode(mode, dmode):
    assert directory_mode(mode) == dmode
    assert not directory_mode(mode) & 0o002


def test_modes_from_env_defaults_and_values():
    assert modes_from_env({}) == FileModes(DEFAULT_SNAPSHOT_MODE, DEFAULT_CORPUS_MODE) == FileModes()
    assert (DEFAULT_SNAPSHOT_MODE, DEFAULT_CORPUS_MODE) == (0o600, 0o644)
    m = modes_from_env({SNAPSHOT_MODE_VAR: "0640", CORPUS_MODE_VAR: "0660"})
    assert (m.snapshot, m.corpus, m.snapshot_dir, m.corpus_dir) == (0o640, 0o660, 0o750, 0o770)
    assert m.as_env() == {SNAPSHOT_MODE_VAR: "0640", CORPUS_MODE_VAR: "0660"}
    assert modes_from_env(m.as_env()) == m
    with pytest.raises(ModeError) as info:
        modes_from_env({SNAPSHOT_MODE_VAR: "0600", CORPUS_MODE_VAR: ""})
    assert info.value.field == CORPUS_MODE_VAR


# -- hosts -------------------------------------------------------------------------------------


def test_parse_hosts():
    assert parse_hosts("node-a:9,node-b:1") == (("node-a", 9), ("node-b", 1))
    assert parse_hosts(" node-a:9 , 10.0.0.2:1 ") == (("node-a", 9), ("10.0.0.2", 1))
    assert parse_hosts("") == () and parse_hosts("  ") == ()
    hosts = parse_hosts("a:2,b:1")
    assert format_hosts(hosts) == "a:2,b:1"
    assert [host_of_rank(hosts, r) for r in range(4)] == ["a", "a", "b", None]


@pytest.mark.parametrize(
    "text",
    ["node-a", "node-a:", ":3", "node-a:0", "node-a:-1", "node-a:x", "node-a:9,", "node-a:9,,b:1", "a b:1",
     "-a:1", "a-:1", "a:9,a:1", "a:1:2", "a:²", "a:١", "a:+1", "ä:1"],
)
def test_parse_hosts_rejections(text):
    with pytest.raises(HostSpecError) as info:
        parse_hosts(text)
    assert info.value.field == "hosts"
    assert "HOST:SLOTS" in str(info.value) or "twice" in str(info.value)


def test_parse_hosts_rejects_non_string():
    with pytest.raises(HostSpecError):
        parse_hosts(None)  # type: ignore[arg-type]


# -- failure schedules -------------------------------------------------------------------------


def test_parse_schedule_full_syntax():
    events = parse_schedule("1:3,0:2@commit!, 0:9@idle ,2:4@recovery,3:1!")
    assert events == (
        FailureEvent(0, 2, "commit", True),
        FailureEvent(0, 9, "idle", False),
        FailureEvent(1, 3, "work", False),
        FailureEvent(2, 4, "recovery", False),
        FailureEvent(3, 1, "work", True),
    )
    assert format_schedule(events) == "0:2@commit!,0:9@idle,1:3,2:4@recovery,3:1!"
    assert parse_schedule(format_schedule(events)) == events
    assert parse_schedule("") == () and parse_schedule("  ") == ()
    assert str(FailureEvent(0, 2, "work", True)) == "0:2!"
    for e in events:
        assert FailureEvent.from_json(e.to_json()) == e


@pytest.mark.parametrize(
    "text",
    ["0", "0:", ":2", "a:2", "0:2@", "0:2@crash", "0:2@WORK", "0:2!!", "0:2!@work", "-1:2", "0:-2", "0:2,", "0;2",
     "0:2,0:2@idle", "٠:٢", "0 :2", "0:2 @work"],
)
def test_parse_schedule_rejections(text):
    with pytest.raises(ScheduleError) as info:
        parse_schedule(text)
    assert info.value.field == "failure_schedule"
    message = str(info.value)
    assert "G:R" in message or "phase" in message or "twice" in message


def test_parse_schedule_rejects_non_string():
    with pytest.raises(ScheduleError):
        parse_schedule(["0:2"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [{"generation": 0, "rank": 1}, {"generation": -1, "rank": 1, "phase": "work", "sigkill": False},
     {"generation": 0, "rank": 1, "phase": "boom", "sigkill": False},
     {"generation": 0, "rank": 1, "phase": "work", "sigkill": 0},
     {"generation": "0", "rank": 1, "phase": "work", "sigkill": False}, [0, 1]],
)
def test_failure_event_from_json_rejections(value):
    with pytest.raises(ScheduleError):
        FailureEvent.from_json(value)


def test_the_executor_registry_owns_the_names():
    """The core takes any well-formed name; every entry point that builds a policy from user input
    checks it against the registry (the one list of executors)."""
    from symcc_ulfm import executors
    from symcc_ulfm.evidence.rundir import policy_from_parameters
    from symcc_ulfm.launch.prepare import check_executor

    assert executors.names() == ["concolic", "native", "simulate", "symcc"]
    assert executors.fuzzer_names() == ["afl", "havoc", "simfuzz"]
    policy = build_policy(executor="afl")
    with pytest.raises(PolicyError, match="unknown executor 'afl'; expected one of concolic, native, simulate, symcc"):
        check_executor(policy)
    with pytest.raises(PolicyError) as refused:
        policy_from_parameters(executor="afl")
    assert refused.value.field == "executor"
