"""Two hosts on one machine: network namespaces, a veth pair, an ssh-like agent for PRRTE.

Used by the cross-node gate (:mod:`symcc_ulfm.gates.multinode`, ``make multinode``). Everything here
needs root and iproute2; :func:`.topology.unavailable_reason` says why it cannot run otherwise.
See ``docs/multinode.md``.
"""
