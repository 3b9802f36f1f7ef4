"""Packaging (issue 22 item 11): the wheel carries the license, the data files, the Grafana
dashboard, the job-side sitecustomize and the PEP 561 marker; its metadata has the license
expression, classifiers, URLs and plotly as a dependency; the version is written once. And
installed into a fresh virtual environment, as ``pipx install`` does, every README command needs
nothing more: the HTML report included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from the source tree as pip builds it for 'pipx install .' (no build
    isolation here: the build backend is the one installed, so no download)."""
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    (whl,) = out.glob("bottleneckd-*.whl")
    return whl


@pytest.mark.slow
def test_the_wheel_carries_what_an_installed_sidecar_needs(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(meta).decode()
        lic = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
        assert z.read(lic) == (ROOT / "LICENSE").read_bytes()
        dashboard = json.loads(z.read("bottleneckd/data/dashboards/bottleneckd.json"))
    assert dashboard == json.loads((ROOT / "dashboards" / "bottleneckd.json").read_text())  # the same file
    assert {
        "bottleneckd/py.typed",
        "bottleneckd/data/peaks.json",
        "bottleneckd/data/mitigations.json",
        "bottleneckd/torch/_inject/sitecustomize.py",  # what 'run' puts on the job's PYTHONPATH
        "bottleneckd/integrations/pytorch_lightning.py",
    } <= names
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text  # the full text, not a notice
    assert "License-Expression: Apache-2.0" in metadata
    assert "Requires-Dist: plotly" in metadata  # the HTML report works after a plain install
    assert "Classifier: Typing :: Typed" in metadata and "Classifier: Operating System :: POSIX :: Linux" in metadata
    assert "Project-URL: Paper, https://arxiv.org/abs/2210.06640" in metadata
    assert f"Version: {version('bottleneckd')}" in metadata


def test_the_version_is_read_from_the_metadata():
    import tomllib

    import bottleneckd

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert bottleneckd.__version__ == version("bottleneckd") == declared
    assert declared not in (ROOT / "bottleneckd" / "__init__.py").read_text()  # not written by hand


def test_the_build_backend_reads_the_license_expression():
    """``license = "Apache-2.0"`` as a string is PEP 639, which setuptools reads from 77 on."""
    import tomllib

    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["license"] == "Apache-2.0"
    (req,) = [r for r in doc["build-system"]["requires"] if r.startswith("setuptools")]
    assert req == "setuptools>=77"


@pytest.mark.slow
def test_installed_into_a_fresh_venv_every_readme_command_runs(wheel, tmp_path):
    venv = tmp_path / "venv"
    # nothing of the source tree or the test's environment: no PYTHONPATH (pip would take the
    # checkout on it for an installed bottleneckd), the machine's pip settings kept
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "BOTTLENECKD"))}
    env.update(PATH=f"{venv / 'bin'}:/usr/bin:/bin", HOME=str(tmp_path), BOTTLENECKD_HOME=str(tmp_path / "h"))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120, env=env)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True, text=True, timeout=600, env=env
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    exe = str(venv / "bin" / "bottleneckd")
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and version("bottleneckd") in r.stdout, r.stderr
    trace = ROOT / "tests" / "ranks_data" / "straggler_4ranks.jsonl"
    out = tmp_path / "run.html"
    r = subprocess.run(
        [exe, "report", str(trace), "-o", str(out)], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr  # no "needs plotly" after a plain install
    assert out.stat().st_size > 1_000_000  # plotly.js inside
    r = subprocess.run([exe, "mitigations", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr
    code = (
        "import importlib.resources as r, json, sys;"
        "d = json.loads((r.files('bottleneckd') / 'data/dashboards/bottleneckd.json').read_text());"
        "assert d['title'], d; assert 'torch' not in sys.modules; print('ok')"
    )
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
