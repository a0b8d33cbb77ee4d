"""Containment of target code: ``parent`` (the :class:`~.parent.Sandbox` a rank holds),
``forkserver`` (the fork server and the child it forks), ``child`` (what runs in that child),
``slot`` (the execution slot shared with the parent) and ``frames`` (the pipe format)."""
