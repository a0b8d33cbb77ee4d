"""What a user copies from the terminal: the printed mpiexec line carries every forwarded
variable's value, and each subcommand's help shows its defaults."""

from __future__ import annotations

import os
import shlex

from symcc_ulfm.cli.args import build_parser
from symcc_ulfm.core.modes import FileModes
from symcc_ulfm.core.reference import REFERENCE
from symcc_ulfm.launch.mpiexec import ROOT_ENV, forwarded_variables, job_environment, shell_line


def test_every_forwarded_variable_carries_the_value_the_job_gets():
    modes = FileModes()
    args = forwarded_variables(modes)
    env = job_environment(modes, base={})
    pairs = [args[i + 1] for i in range(0, len(args), 2)]
    assert args[::2] == ["-x"] * len(pairs)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        assert sep and env[name] == value, pair


def test_the_printed_line_is_a_shell_line_with_the_root_variables_when_root():
    line = shell_line(["mpiexec", "-x", "A=1", "python", "a b"])
    words = shlex.split(line)
    root = [f"{k}={v}" for k, v in ROOT_ENV.items()]
    assert words == (root if os.geteuid() == 0 else []) + ["mpiexec", "-x", "A=1", "python", "a b"]


def test_launch_help_shows_defaults():
    parser = build_parser()
    launch = parser.commands["launch"]
    text = launch.format_help()
    assert f"(default: {REFERENCE['ranks']})" in text
    assert f"(default: {REFERENCE['warm_spares']})" in text
    assert "(default: 15.0)" in text
