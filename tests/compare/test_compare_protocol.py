"""The comparison protocol: what it accepts, what it refuses (naming the field), and its plan."""

import json
from pathlib import Path

import pytest

from symcc_ulfm.compare import design as protocols
from symcc_ulfm.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def base(**changes):
    value = {"targets": {"tok": {"python": "tokenizer"}},
             "systems": {"seeds": {"kind": "seeds"}, "fuzz": {"kind": "campaign", "launch": ["--stop-after", "2"]}},
             "reference": "seeds", "trials": 3, "window_s": 5, "cores": 1, "seed": 7}
    value.update(changes)
    return value


def test_defaults_are_filled_in_and_digest_covers_them():
    protocol = protocols.validate(base())
    assert protocol["min_trials"] == 5 and protocol["snapshots"] == 10 and protocol["rerun"] == {"max_attempts": 2}
    assert protocols.protocol_digest(protocol) != protocols.protocol_digest(protocols.validate(base(seed=8)))


@pytest.mark.parametrize("changes, field", [
    ({"trails": 3}, "trails"),
    ({"reference": "afl"}, "reference"),
    ({"trials": 0}, "trials"),
    ({"min_trials": 1}, "min_trials"),
    ({"window_s": float("inf")}, "window_s"),
    ({"window_s": True}, "window_s"),
    ({"targets": {}}, "targets"),
    ({"targets": {"Bad Name": {"python": "tokenizer"}}}, "targets.Bad Name"),
    ({"targets": {"t": {"python": "tokenizer", "seeds": ["zz"]}}}, "targets.t.seeds"),
    ({"targets": {"t": {"harness": "../etc"}}}, "targets.t"),
    ({"targets": {"t": {"python": "tokenizer", "extra": 1}}}, "targets.t"),
    ({"rerun": {"max_attempts": 0}}, "rerun"),
    ({"stop_rule": {"max_cells": 3}}, "stop_rule"),
    ({"format": "symcc-ulfm-scale-protocol/1"}, "format"),
])
def test_refuses_naming_the_field(changes, field):
    with pytest.raises(protocols.CompareProtocolError) as caught:
        protocols.validate(base(**changes))
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith(field)


def test_a_system_must_fit_every_target_family():
    """An AFL++ arrangement runs harness builds: on a Python target it is refused before anything runs."""
    with pytest.raises(ConfigError):
        protocols.validate(base(systems={"afl": {"kind": "afl", "instances": [["-S", "a"]]}}, reference="afl"))


def test_plan_is_a_pure_function_of_the_protocol():
    protocol = protocols.validate(base())
    first, again = protocols.plan(protocol), protocols.plan(json.loads(json.dumps(protocol)))
    assert first == again
    cells = first["cells"]
    assert len(cells) == 3 * 1 * 2 and len({c["cell"] for c in cells}) == 6
    # every trial's cells are contiguous (a trial is a block), in the shuffled trial order
    assert [c["trial"] for c in cells[::2]] == first["trial_order"]
    assert all(c["seed"] == protocols.cell_seed(protocol, c["cell"]) for c in cells)
    assert len({c["seed"] for c in cells}) == 6


def test_curve_times_cover_the_window():
    protocol = protocols.validate(base(window_s=10, snapshots=4))
    assert protocols.curve_times(protocol) == [0.0, 2.5, 5.0, 7.5, 10.0]
