"""Operational gates, not runtime: the fault matrix (``make faults``), the cross-node gate on
network-namespace hosts (``make multinode``) and what they need (``netns``)."""
