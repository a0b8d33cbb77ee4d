"""environment.yml (the documented conda-forge equivalent) asks for what pyproject.toml asks for,
with the same pins, and does not pull the package's dependencies through pip."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    out = {}
    for line in wanted:
        name, spec = re.match(r"([A-Za-z0-9_.\-\[\]]+)\s*(.*)", line).groups()
        out[name] = spec  # conda-forge uses the PyPI names of these packages
    return out


def _conda() -> dict[str, str]:
    out = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"\s+- ([A-Za-z0-9_.\-]+)\s*([=<>!].*)?$", line)
        if m:
            out[m.group(1)] = (m.group(2) or "").strip()
    return out


def test_every_dependency_of_pyproject_is_in_environment_yml_with_its_pin():
    conda = _conda()
    for name, spec in _requirements().items():
        assert name in conda, f"environment.yml lacks {name}"
        if spec.startswith("=="):
            assert conda[name] == "=" + spec[2:], f"{name}: pyproject {spec}, environment.yml {conda[name]}"
        else:
            assert conda[name] == spec, f"{name}: pyproject {spec}, environment.yml {conda[name]}"


def test_environment_yml_does_not_install_the_package_with_its_dependencies_through_pip():
    text = (ROOT / "environment.yml").read_text()
    assert "- -e ." not in text and "pip:" not in text
    assert "pip install --no-deps -e ." in text
