"""pyproject.toml is the one place for pins; environment.yml (Binder's and Conda's recipe) mirrors
its runtime pins exactly, with PyTorch's CPU-only build, and nothing a learner does not need.

What runs offline: the mirror; the CPU index for torch; and the dependency closure of every pin
but torch (and of torch itself where the installed build is the CPU one), read from the installed
packages' metadata, which names no CUDA package. Resolving the recipe through the indexes (``pip
install --dry-run --report``) needs the network: ``COURSE_CHECK_RECIPE=1`` runs it."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

from tests.conftest import ROOT

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CUDA_PACKAGE = re.compile(r"^(nvidia-|cuda-|cupy|pytorch-triton-rocm)", re.I)
"""Names of the packages that carry CUDA (NVIDIA's wheels that PyPI's torch depends on, CUDA's
own, CuPy) or ROCm."""
LINUX = {**default_environment(), "sys_platform": "linux", "platform_system": "Linux",
         "platform_machine": "x86_64"}
"""Binder's platform, for the pins' markers."""


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pins(requirements: list[str]) -> dict[str, str]:
    pins = {}
    for requirement in requirements:
        name, _, version = requirement.partition("==")  # version keeps its marker, if any
        assert version, f"{requirement} is not pinned with =="
        pins[name.strip().lower()] = version.strip()
    return pins


def _environment_pip_lines() -> list[str]:
    lines, inside = [], False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        if re.match(r"^\s*-\s*pip:\s*$", line):
            inside = True
        elif inside and re.match(r"^\s{6,}-\s+", line):
            lines.append(re.sub(r"^\s*-\s+", "", line).strip())
        elif inside and line.strip() and not line.lstrip().startswith("#"):
            inside = False
    return lines


def _environment_pins() -> dict[str, str]:
    return _pins([line for line in _environment_pip_lines() if not line.startswith("-")])


def test_environment_yml_mirrors_the_runtime_pins_only():
    """The learner's packages, no test or website extra (transformers, playwright, sphinx...)."""
    runtime = _pins(_pyproject()["dependencies"])
    assert _environment_pins() == runtime, "environment.yml's pins differ from [project] dependencies"
    extras = {name for extra in _pyproject()["optional-dependencies"].values()
              for name in _pins(extra)}
    assert not extras & set(_environment_pins()), "an extra's package is in environment.yml"
    assert "-e ." in _environment_pip_lines(), "environment.yml installs the course itself (-e .)"


def test_environment_yml_python_matches_requires_python():
    assert re.search(r"^\s*-\s*python=3\.11\s*$", (ROOT / "environment.yml").read_text(), re.M)


def test_torch_comes_from_the_cpu_index():
    options = [line for line in _environment_pip_lines() if line.startswith("-")]
    assert any(re.fullmatch(rf"--(extra-)?index-url[ =]{re.escape(CPU_INDEX)}/?", o) for o in options), \
        f"environment.yml does not name PyTorch's CPU-only index ({CPU_INDEX}): {options}"
    assert "torch" in _environment_pins()


def _closure(roots: list[str]) -> dict[str, str]:
    """Installed name -> version of ``roots`` and everything they require on Linux x86-64."""
    found, todo = {}, [Requirement(r) for r in roots]
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate(
                {**LINUX, "extra": ""}):
            continue
        name = requirement.name.lower().replace("_", "-")
        if name in found:
            continue
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{requirement.name} (required on Linux) is not installed here; "
                        "install the course's pins (python3 course.py test installs them)")
        found[name] = distribution.version
        todo.extend(Requirement(r) for r in distribution.requires or ())
    return found


def test_no_pin_but_torch_pulls_a_cuda_package():
    """Read from the installed packages' metadata (each pinned version is the one installed):
    what every runtime pin requires, transitively, on Binder's platform. Torch itself is the CPU
    build's: checked too where the installed torch is it (its version ends in ``+cpu``)."""
    pins = {name: version.split(";")[0].strip() for name, version in _environment_pins().items()}
    for name, version in pins.items():
        here = Requirement(f"{name}=={_environment_pins()[name]}")
        if name != "torch" and (here.marker is None or here.marker.evaluate()):
            assert metadata.version(name) == version, \
                f"{name} {metadata.version(name)} is installed, not {version}: install the pins"
    roots = [f"{name}=={version}" for name, version in pins.items() if name != "torch"]
    if metadata.version("torch").endswith("+cpu"):
        roots.append("torch")
    closure = _closure(roots)
    assert len(closure) > 50, "the closure was not read"
    cuda = sorted(name for name in closure if CUDA_PACKAGE.match(name))
    assert not cuda, f"the recipe pulls CUDA packages: {cuda}"


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("COURSE_CHECK_RECIPE") != "1",
                    reason="resolves through PyPI and PyTorch's index: COURSE_CHECK_RECIPE=1 runs it")
def test_the_recipe_resolves_without_a_cuda_package(tmp_path):
    """pip's resolver, on environment.yml's own lines and indexes, installs nothing of CUDA's."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(line for line in _environment_pip_lines() if line != "-e .") + "\n")
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
                    "--quiet", "--report", str(report), "-r", str(requirements)], check=True)
    installed = {item["metadata"]["name"].lower(): item["metadata"]["version"]
                 for item in json.loads(report.read_text())["install"]}
    assert installed["torch"].endswith("+cpu"), f"torch {installed['torch']} is not the CPU build"
    assert not [name for name in installed if CUDA_PACKAGE.match(name)]
