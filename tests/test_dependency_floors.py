"""The constraints that .ci/floors installs are pyproject.toml's floors: each runtime
dependency pinned to a release of the lowest version its specifier allows, and each other pin
a dependency of an extra, at that extra's floor."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from .helpers import ROOT

# The check reads repository files, not the library: Python 3.11's reader is enough for it.
tomllib = pytest.importorskip("tomllib")


def _floor(requirement: Requirement) -> Version:
    floors = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    assert len(floors) == 1, f"{requirement} declares no single floor (>=)"
    return floors[0]


def _pins(path: Path) -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            key = canonicalize_name(name)
            assert key not in pins, f"{name} is pinned twice in {path.name}"
            pins[key] = Version(version)
    return pins


def _at_floor(requirement: Requirement, pin: Version) -> None:
    floor = _floor(requirement)
    assert requirement.specifier.contains(pin, prereleases=False), (requirement, pin)
    # A release of the floor itself ("3.0" is met by 3.0.0.1), not a later one.
    assert pin.release[: len(floor.release)] == floor.release, f"{requirement}: {pin} is above"


def test_the_floor_constraints_pin_each_dependency_at_its_floor() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = [Requirement(r) for r in project["dependencies"]]
    extras = [
        Requirement(r)
        for requirements in project["optional-dependencies"].values()
        for r in requirements
        if not r.startswith("ctxpack[")
    ]
    pins = _pins(ROOT / ".ci" / "floors.txt")
    assert {canonicalize_name(r.name) for r in runtime} <= set(pins)
    for name, pin in pins.items():
        declared = [r for r in runtime + extras if canonicalize_name(r.name) == name]
        assert declared, f"{name} is pinned but no dependency of ctxpack"
        for requirement in declared:
            _at_floor(requirement, pin)
