# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment for AWX / Automation Platform: `make ee` (the wheel, the collection archive, then
`ansible-builder create` of execution-environment.yml) makes a build context whose Containerfile installs what the
playbooks need, and the EE's Ansible settings are the collection's ansible.cfg.

No container engine runs here (podman is not installed on this machine; `podman build` of the context is what a user
runs next, docs/install.md), so the image itself is not built: what is checked is the build context ansible-builder
wrote, read back.
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import tarfile
import zipfile

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTEXT = os.path.join(REPO_ROOT, "build", "ee", "context")
# ansible.cfg keys that are the checkout's own, not a fleet's settings: the EE installs the collection instead of
# linking it (collections_path), and AWX prints its own way (stdout_callback, interpreter discovery)
CHECKOUT_ONLY = {"collections_path", "stdout_callback", "interpreter_python"}


@pytest.fixture(scope="module", name="context")
def context_fixture():
    proc = subprocess.run(["make", "--no-print-directory", "ee"], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(os.path.join(CONTEXT, "Containerfile"), encoding="utf-8") as handle:
        return handle.read()


def test_the_containerfile_installs_core_runner_ssh_library_and_collection(context):
    assert re.search(r"^ARG EE_BASE_IMAGE=\"?quay.io/ansible/awx-ee:24.6.1\"?$", context, re.M), context[:500]
    assert "ansible-core>=2.19,<2.20" in context and "ansible-runner>=2.4" in context
    with open(os.path.join(CONTEXT, "_build", "bindep.txt"), encoding="utf-8") as handle:
        assert "openssh-client [platform:dpkg]" in handle.read()
    final = context[context.rindex("FROM "):]
    assert "COPY _build/gpufleet /tmp/gpufleet" in final
    assert "pip install --no-cache-dir /tmp/gpufleet/gpufleet-*.whl" in final
    assert "ansible-galaxy collection install --offline -p /usr/share/ansible/collections" in final


def test_the_context_carries_the_wheel_and_the_collection(context):
    del context
    artifacts = os.path.join(CONTEXT, "_build", "gpufleet")
    [wheel] = [name for name in os.listdir(artifacts) if name.endswith(".whl")]
    [archive] = [name for name in os.listdir(artifacts) if name.endswith(".tar.gz")]
    with zipfile.ZipFile(os.path.join(artifacts, wheel)) as handle:
        assert "gpufleet/results/slurm_drain.py" in handle.namelist()
    with tarfile.open(os.path.join(artifacts, archive)) as handle:
        names = handle.getnames()
    assert "plugins/action/slurm_drain.py" in names and "roles/slurm_gate/tasks/main.yml" in names
    assert not [name for name in names if name.startswith("gpufleet/")], "the library ships by pip, not in the archive"


def test_the_ee_has_the_collections_ansible_settings(context):
    config = configparser.ConfigParser(interpolation=None)
    config.read(os.path.join(REPO_ROOT, "ansible.cfg"))
    settings = {key: value for section in config.sections() for key, value in config.items(section)}
    env = dict(re.findall(r"^ENV (ANSIBLE_[A-Z_]+)=(.*)$", context, re.M))
    wanted = {"ANSIBLE_" + key.upper(): value for key, value in settings.items() if key not in CHECKOUT_ONLY}
    assert {key: env.get(key, "").strip('"') for key in wanted} == wanted
