"""pyproject.toml is the one place for pins; environment.yml mirrors it exactly."""
from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT


def _pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values()
                                              for r in extra]
    pins = {}
    for requirement in requirements:
        name, _, version = requirement.partition("==")  # version keeps its marker, if any
        assert version, f"{requirement} is not pinned with =="
        pins[name.lower()] = version
    return pins


def _environment_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.match(r"^\s*-\s*([A-Za-z0-9_.\-]+)==(.+?)\s*$", line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def test_environment_yml_mirrors_pyproject():
    assert _environment_pins() == _pyproject_pins()


def test_environment_yml_python_matches_requires_python():
    assert re.search(r"^\s*-\s*python=3\.11\s*$", (ROOT / "environment.yml").read_text(), re.M)
