"""Slurm's allocation variables as a value (core.allocation): host lists, task counts, placement; a lost daemon."""

from __future__ import annotations

import pytest

from symcc_ulfm.core.allocation import Allocation, expand_nodelist, expand_tasks, from_environment, placement
from symcc_ulfm.core.hosts import host_of_rank
from symcc_ulfm.errors import HostSpecError
from symcc_ulfm.launch.batch import lost_daemon


@pytest.mark.parametrize(("text", "nodes"), [
    ("node1", ("node1",)),
    ("a,b", ("a", "b")),
    ("node[1-3,5]", ("node1", "node2", "node3", "node5")),
    ("node[01-03]", ("node01", "node02", "node03")),
    ("node[8-11]", ("node8", "node9", "node10", "node11")),
    ("node[098-101]", ("node098", "node099", "node100", "node101")),
    ("n[7]", ("n7",)),
    ("rack[1-2]-n[1-2]", ("rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2")),
    ("gpu[1-2],cpu[10,12],login", ("gpu1", "gpu2", "cpu10", "cpu12", "login")),
    ("symcc-slurm-a,symcc-slurm-b", ("symcc-slurm-a", "symcc-slurm-b")),
    ("c1.cluster.example,c[2-3].cluster.example", ("c1.cluster.example", "c2.cluster.example", "c3.cluster.example")),
    ("  node[1-2]  ", ("node1", "node2")),
])
def test_host_lists_expand_as_slurm_writes_them(text, nodes):
    assert expand_nodelist(text) == nodes


@pytest.mark.parametrize(("text", "says"), [
    ("", "expected a host list"),
    ("node[1-3", "'[' without ']'"),
    ("node1-3]", "']' without '['"),
    ("node[[1-2]]", "nested"),
    ("node[3-1]", "runs backwards"),
    ("node[a-b]", "is not N or N-M"),
    ("node[1-]", "is not N or N-M"),
    ("node[]", "is not N or N-M"),
    ("node[١-٢]", "is not N or N-M"),
    ("node[1,,2]", "is not N or N-M"),
    ("a,,b", "an empty entry"),
    ("node1,node[1-2]", "names a node twice: node1"),
    ("node_1", "not a host name"),
    ("-node", "not a host name"),
    ("node[1-70000]", "more than 65536"),
    ("a[1-300]b[1-300]", "more than 65536"),
])
def test_malformed_host_lists_are_refused_with_the_variable_named(text, says):
    with pytest.raises(HostSpecError) as info:
        expand_nodelist(text)
    assert info.value.field == "SLURM_JOB_NODELIST" and says in str(info.value)


@pytest.mark.parametrize(("text", "counts"), [
    ("5", (5,)),
    ("2(x3),1", (2, 2, 2, 1)),
    ("5(x2)", (5, 5)),
    ("1,2,3", (1, 2, 3)),
    ("4(x1)", (4,)),
    ("16(x2),8,16(x1)", (16, 16, 8, 16)),
])
def test_tasks_per_node_expand(text, counts):
    assert expand_tasks(text) == counts


@pytest.mark.parametrize("text", ["", "0", "2(x0)", "2(3)", "x3", "2(x3", "2,,1", "-1", "2 (x3)", "1(x70000)", "٣"])
def test_malformed_tasks_per_node_are_refused(text):
    with pytest.raises(HostSpecError) as info:
        expand_tasks(text)
    assert info.value.field == "SLURM_TASKS_PER_NODE"


def slurm_env(**extra):
    return {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_TASKS_PER_NODE": "5(x2)",
            "SLURM_CLUSTER_NAME": "lab", **extra}


def test_from_environment_reads_the_allocation():
    found = from_environment(slurm_env())
    assert found == Allocation("4242", ("node1", "node2"), (5, 5), "lab")
    assert found.slots == 10 and found.hosts() == (("node1", 5), ("node2", 5))
    assert found.to_json() == {"job_id": "4242", "cluster": "lab", "nodes": ["node1", "node2"], "tasks_per_node": [5, 5]}


def test_from_environment_outside_slurm_and_older_names():
    assert from_environment({"PATH": "/bin"}) is None
    old = {"SLURM_JOBID": "7", "SLURM_NODELIST": "a,b", "SLURM_TASKS_PER_NODE": "1(x2)"}
    assert from_environment(old) == Allocation("7", ("a", "b"), (1, 1))
    assert from_environment({**slurm_env(), "SLURM_JOB_ID": "12_3"}).job_id == "12_3"  # an array job


@pytest.mark.parametrize(("env", "field", "says"), [
    ({"SLURM_JOB_NODELIST": ""}, "SLURM_JOB_NODELIST", "not set although SLURM_JOB_ID=4242"),
    ({"SLURM_TASKS_PER_NODE": ""}, "SLURM_TASKS_PER_NODE", "request tasks"),
    ({"SLURM_TASKS_PER_NODE": "5"}, "SLURM_TASKS_PER_NODE", "1 task counts for 2 nodes"),
    ({"SLURM_TASKS_PER_NODE": "5(x3)"}, "SLURM_TASKS_PER_NODE", "3 task counts for 2 nodes"),
    ({"SLURM_JOB_ID": "42; rm -rf /"}, "SLURM_JOB_ID", "expected a Slurm job id"),
])
def test_inconsistent_environments_are_refused(env, field, says):
    with pytest.raises(HostSpecError) as info:
        from_environment(slurm_env(**env))
    assert info.value.field == field and says in str(info.value)


def test_placement_fills_nodes_in_order_as_map_by_slot():
    allocation = Allocation("1", ("a", "b", "c"), (4, 4, 4))
    assert placement(allocation, 12) == (("a", 4), ("b", 4), ("c", 4))
    assert placement(allocation, 10) == (("a", 4), ("b", 4), ("c", 2))
    assert placement(allocation, 4) == (("a", 4),)  # c and b get no rank and are left out
    hosts = placement(Allocation("1", ("a", "b"), (5, 5)), 10)
    assert [host_of_rank(hosts, r) for r in range(10)] == ["a"] * 5 + ["b"] * 5


def test_placement_refuses_more_ranks_than_slots():
    with pytest.raises(HostSpecError) as info:
        placement(Allocation("9", ("a", "b"), (2, 2)), 10)
    assert info.value.field == "ranks" and "4 task slots" in str(info.value) and "--ranks 4" in str(info.value)


@pytest.mark.parametrize("output", [
    b"--------\nPRTE has lost communication with a remote daemon.\n\n  HNP daemon   : [prterun-a-1@0] on node a\n",
    b"--------\nsrun returned non-zero exit status (35072) from launching\nthe per-node daemon. You may debug this\n",
])
def test_either_way_prrte_reports_a_lost_daemon_is_recognised(output):
    """PRRTE says one or the other, whichever of the daemon's socket or its srun it notices first."""
    assert lost_daemon(output)
    assert not lost_daemon(b"mpiexec noticed that process rank 7 ... exited on signal 9 (Killed).\n")
