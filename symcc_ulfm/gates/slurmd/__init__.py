"""A real Slurm on one machine for the Slurm gate (:mod:`symcc_ulfm.gates.slurm`, ``make slurm``):
munge, slurmctld and one slurmd per network-namespace node (``cluster``), and the outside kills
the gate does to a running campaign (``kills``). See ``docs/slurm.md``."""
