"""A finished hybrid campaign's state directory in well under a second: the real master and two
real workers, a ``simfuzz`` fuzzer and a ``simulate`` analysis worker, on the loopback transport
(``tests/protocol/scenarios.py``), ended by a budget of six results per worker. Their edges come
from a universe of 120, so the two kinds reach some edges alike and some apart."""

from __future__ import annotations

from pathlib import Path

from protocol.scenarios import (
    MASTER,
    MASTER_ROLE,
    PEER,
    SEED,
    W1,
    W2,
    WORKER_ROLE,
    Peer,
    Scenario,
    Stage,
    run_loopback,
)

HYBRID = Scenario("mechanism-of-a-hybrid", (Stage({MASTER: MASTER_ROLE, W1: WORKER_ROLE, W2: WORKER_ROLE,
                                                   PEER: Peer()}),),
                  check=lambda root, observed: None, seeds=(SEED,), stop_after=6, idle="wait",
                  options={"cost_s": 0, "children": 3, "space": 400, "edges": 120,
                           "simfuzz": {"kept": 3, "space": 400, "edges": 120}},
                  worker_kinds="simfuzz:1,simulate:1")


def hybrid_state(root: Path) -> Path:
    """``root``, now the state directory of the campaign above."""
    run_loopback(root, HYBRID)
    return root
