"""What the installed package says of itself: one version, written in Cargo.toml and
read from the metadata by the module and the command line, and the licence declared
as an SPDX expression with its file shipped beside it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import fastcompact
import pytest

# Among the smoke tests a release build runs against each wheel it makes.
pytestmark = pytest.mark.smoke

ROOT = Path(__file__).resolve().parents[2]


def _cargo_version() -> str:
    return str(tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"])


def test_the_version_is_written_once_in_cargo_toml():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert fastcompact.__version__ == metadata.version("fastcompact") == _cargo_version()


def test_the_command_line_reports_the_installed_version():
    done = subprocess.run(
        [sys.executable, "-m", "fastcompact", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == f"fastcompact {_cargo_version()}"


def test_the_licence_is_declared_and_shipped():
    meta = metadata.metadata("fastcompact")
    assert meta["License-Expression"] == "MIT"
    shipped = [str(f) for f in metadata.files("fastcompact") or [] if f.name == "LICENSE"]
    assert shipped, "the LICENSE file is not in the installed package's metadata"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    # A licence is declared by its expression; a classifier saying it again is refused
    # by current packaging tools.
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    assert "Typing :: Typed" in (meta.get_all("Classifier") or [])
