# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/tools/system_packages.sh (what `make test` runs first) and the failure message of a test whose
program is missing (tests/tools/system_programs.py).

The script runs with a PATH of empty stand-in executables, so which programs are "installed" is chosen
here. sshd, ca-certificates, libc6-dev's headers, libpmix-dev's library and python's ensurepip are checked at fixed paths (or
through PYTHON, set to this interpreter): present once `make system-packages` has run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO_ROOT, "tests", "tools", "system_packages.sh")
BASH = shutil.which("bash") or "/bin/bash"
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

from system_programs import (  # noqa: E402  pylint: disable=import-error,wrong-import-position
    missing_programs_message, program_packages, require_programs)

ON_PATH = ("make", "git", "ip", "tc", "ss", "ssh", "ssh-keygen", "unshare", "iperf3", "mpirun", "shellcheck",
           "chromium", "gcc", "promtool", "sqlite3", "slurmctld", "slurmd", "srun", "munged")


def fake_bin(folder: Path, names: Iterable[str]) -> str:
    folder.mkdir()
    for name in names:
        path = folder / name
        path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        path.chmod(0o755)
    return str(folder)


def run_script(path: str, **extra: str) -> subprocess.CompletedProcess:
    env: Dict[str, str] = {"PATH": path, "PYTHON": sys.executable, "HOME": os.environ.get("HOME", "/root")}
    env.update(extra)
    return subprocess.run([BASH, SCRIPT], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_all_present_is_silent(tmp_path):
    proc = run_script(fake_bin(tmp_path / "bin", ON_PATH + ("apt-get",)))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_dry_run_names_the_missing_program_and_the_one_install_command(tmp_path):
    path = fake_bin(tmp_path / "bin", [name for name in ON_PATH if name != "iperf3"] + ["apt-get"])
    proc = run_script(path, GPUFLEET_SYSTEM_PACKAGES_DRY_RUN="1")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "tests/tools/system_packages.sh: missing: iperf3 (iperf3)\n"
        "tests/tools/system_packages.sh: dry run (GPUFLEET_SYSTEM_PACKAGES_DRY_RUN=1), nothing installed; "
        "install them with:\n"
        "sudo apt-get install -y --no-install-recommends iperf3\n")


def test_programs_of_one_package_name_it_once(tmp_path):
    path = fake_bin(tmp_path / "bin", [name for name in ON_PATH if name not in ("ip", "tc", "ss", "mpirun")])
    proc = run_script(path, GPUFLEET_SYSTEM_PACKAGES_DRY_RUN="1")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == (
        "tests/tools/system_packages.sh: missing: ip (iproute2), tc (iproute2), ss (iproute2), mpirun (openmpi-bin)")
    assert proc.stderr.splitlines()[-1] == (
        "sudo apt-get install -y --no-install-recommends iproute2 openmpi-bin")


def test_without_apt_get_it_stops_instead_of_installing(tmp_path):
    """Not a dry run: with no apt-get on PATH (or not root) the script can only name the command."""
    proc = run_script(fake_bin(tmp_path / "bin", [name for name in ON_PATH if name != "iperf3"]))
    why = "no apt-get here" if os.geteuid() == 0 else "not root"
    assert proc.returncode == 2
    assert proc.stderr == (
        "tests/tools/system_packages.sh: missing: iperf3 (iperf3)\n"
        "tests/tools/system_packages.sh: %s; install them with:\n"
        "sudo apt-get install -y --no-install-recommends iperf3\n" % why)


def test_the_table_is_read_from_the_script():
    packages = program_packages()
    assert {name: packages[name] for name in ("sshd", "ssh-keygen", "mpirun", "promtool", "iperf3", "venv")} == {
        "sshd": "openssh-server", "ssh-keygen": "openssh-client", "mpirun": "openmpi-bin", "promtool": "prometheus",
        "iperf3": "iperf3", "venv": "python3-venv"}
    assert set(ON_PATH) <= set(packages)


def test_a_missing_program_fails_naming_package_and_setup_command():
    assert missing_programs_message(["mpirun", "iperf3"], "the SSH fleet needs them") == (
        "missing: mpirun (Debian package openmpi-bin), iperf3 (Debian package iperf3): the SSH fleet needs them. "
        "A missing program is a set-up defect, not a skip: run `make system-packages` (as root it installs the "
        "packages; otherwise it prints the command: "
        "sudo apt-get install -y --no-install-recommends openmpi-bin iperf3)")


def test_require_programs_fails_rather_than_skips(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(pytest.fail.Exception, match=r"^missing: gcc \(Debian package gcc\): it builds the fake"):
        require_programs(["gcc"], "it builds the fake libnvidia-ml.so")


def test_script_is_shellcheck_clean():
    require_programs(["shellcheck"], "it lints the set-up script")
    proc = subprocess.run(["shellcheck", SCRIPT], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
