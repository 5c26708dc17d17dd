"""The package builds and installs offline, with its type marker."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.offline


def copy_project(tmp_path: Path) -> Path:
    """A copy to build in, so no build output lands in the checkout."""
    dest = tmp_path / "project"
    shutil.copytree(PROJECT, dest, ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache", "tests"))
    return dest


def quiet_env() -> dict[str, str]:
    return {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def test_the_sdist_builds_with_the_installed_backend(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    project, out = copy_project(tmp_path), tmp_path / "dist"
    out.mkdir()
    script = f"import setuptools.build_meta as b; print(b.build_sdist({str(out)!r}))"
    proc = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True,
                          env=quiet_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    name = proc.stdout.strip().splitlines()[-1]
    assert name == "countersign-0.1.0.tar.gz"
    with tarfile.open(out / name) as sdist:
        names = set(sdist.getnames())
        pkg_info = sdist.extractfile("countersign-0.1.0/PKG-INFO")
        assert pkg_info is not None
        metadata = pkg_info.read().decode()
        # Older setuptools keep the dependencies in the egg-info only.
        requires = sdist.extractfile("countersign-0.1.0/src/countersign.egg-info/requires.txt")
        extra = requires.read().decode() if requires else ""
        metadata += "".join(f"Requires-Dist: {line}\n" for line in extra.splitlines())
    assert "countersign-0.1.0/src/countersign/py.typed" in names
    assert "countersign-0.1.0/src/countersign/_client.py" in names
    assert "Requires-Python: >=3.10" in metadata
    assert "Requires-Dist: httpx" in metadata and "Requires-Dist: cryptography" in metadata


def test_the_wheel_builds_and_installs_offline(tmp_path: Path) -> None:
    # setuptools before 70.1 needs the `wheel` package for bdist_wheel.
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    if (major, minor) < (70, 1) and importlib.util.find_spec("wheel") is None:
        pytest.skip(f"setuptools {setuptools.__version__} without the `wheel` package cannot build wheels offline")
    project, wheels, target = copy_project(tmp_path), tmp_path / "wheels", tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(project)],
        capture_output=True, text=True, env=quiet_env(), timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [wheel] = list(wheels.glob("countersign-0.1.0-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        assert "countersign/py.typed" in zf.namelist()
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        capture_output=True, text=True, env=quiet_env(), timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = ("import sys; sys.path.insert(0, sys.argv[1]); import countersign; "
             "print(countersign.__file__); print(countersign.Client.__name__)")
    env = {k: v for k, v in quiet_env().items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", check, str(target)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(target / "countersign" / "__init__.py"), "Client"]
