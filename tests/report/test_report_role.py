# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role gpufleet.acceptance.report run by ansible-playbook: its preflight refuses a directory that is
not a gpufleet run with a clear message, and on a run it writes the four files."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.dirname(sys.executable)


def _play(tmp_path, results_dir):
    play = [{"name": "Report", "hosts": "localhost", "gather_facts": False,
             "tasks": [{"name": "Render", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.report"},
                        "vars": {"report_results_dir": str(results_dir)}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO_ROOT, "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"))
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml")],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)


def test_preflight_refuses_a_directory_that_is_not_a_run(tmp_path):
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "not-a-run" / "run.json").write_text('{"schema": "someone-else/v1"}')
    for bad in (tmp_path / "not-a-run", tmp_path / "missing"):
        proc = _play(tmp_path, bad)
        assert proc.returncode == 2, proc.stdout
        assert "report_results_dir %s is not a gpufleet results directory" % bad in proc.stdout
        assert not (bad / "report.html").exists()


def test_role_writes_the_four_files(tmp_path):
    from gpufleet.results.store import RunDir  # pylint: disable=import-outside-toplevel
    run = RunDir.create(str(tmp_path / "run"), hosts=["node-a"])
    record = run.new_host_record("node-a")
    record["unreachable"] = "ssh: connect to host node-a port 22: Connection refused"
    record["verdict"] = "UNREACHABLE"
    run.write_host(record)
    proc = _play(tmp_path, run.path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "fleet NOT JUDGED: report in %s/report.html" % run.path in proc.stdout  # no fleet.json: the run was never judged
    assert sorted(name for name in os.listdir(run.path) if "." in name and name != "run.json") == ["junit.xml", "report.html", "report.md", "results.json"]
