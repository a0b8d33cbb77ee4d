"""The role loops of a campaign over any transport: no MPI here.

``transport`` (what a role loop needs from a transport, and its channels), ``loopback`` (the
in-process transport of the protocol tests), ``rank_state`` (what one rank knows),
``master_driver`` (performs what ``core.master`` decides), ``worker_loop`` (READY, WORK ->
execute -> stage -> RESULT), ``exhaustion`` (the masters' side of stopping an exhausted search),
``injection`` (the failure schedule's process deaths), ``adversary`` (a worker that misbehaves on
purpose, for the bad-input tests) and ``backoff`` (how a polling loop waits). ``mpi`` wires
these to communicators; nothing here imports it.
"""
