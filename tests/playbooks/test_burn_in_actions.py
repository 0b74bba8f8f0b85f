# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller-side burn-in modules in a real ansible-playbook run on localhost (~10-16 s: ansible-playbook start-up and eight tasks).

burn_in_record -> health_history -> fleet_verdict (family burn_in) -> health_prometheus -> ansible.builtin.copy into a
textfile directory -> render_report, for two hosts: ``good`` (healthy) and ``sag`` (GPU 2 sags: 1500 MHz in 4 of 10
ticks), with ``gpufleet_burn_in_thresholds`` set in the inventory for ``good``. Samples are SYNTHETIC
(tests/fixtures/nvml-samples/synthetic_nvml.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "nvml-samples"))

import synthetic_nvml as synth  # noqa: E402  pylint: disable=import-error,wrong-import-position


def sag_gpu2(gpu, tick, sample):
    if gpu == 2 and tick >= 6:
        sample["sm_clock_mhz"] = 1500


def play(tmp_path):
    run_dir = str(tmp_path / "run")
    return [{
        "name": "Burn-in controller modules",
        "hosts": "all",
        "gather_facts": False,
        "tasks": [
            {"name": "Start the run", "gpufleet.acceptance.results_record": {"phase": "start", "run_dir": run_dir, "playbook": "test"},
             "run_once": True, "delegate_to": "localhost", "register": "gpufleet_run"},
            {"name": "Record the samples", "gpufleet.acceptance.burn_in_record": {
                "run_dir": "{{ gpufleet_run.run_dir }}", "samples": str(tmp_path) + "/{{ inventory_hostname }}.jsonl",
                "load": {"tool": "gpu-burn", "outcome": "ok", "reason": "", "duration_s": 9}},
             "delegate_to": "localhost", "register": "recorded"},
            {"name": "Append to the history", "gpufleet.acceptance.health_history": {"db": str(tmp_path / "db" / "health.sqlite"),
                                                                                     "run_dir": "{{ gpufleet_run.run_dir }}"},
             "run_once": True, "delegate_to": "localhost", "register": "history"},
            {"name": "Judge", "gpufleet.acceptance.fleet_verdict": {"run_dir": "{{ gpufleet_run.run_dir }}", "families": ["burn_in"]},
             "run_once": True, "delegate_to": "localhost", "register": "verdict"},
            {"name": "Prometheus text", "gpufleet.acceptance.health_prometheus": {"run_dir": "{{ gpufleet_run.run_dir }}"},
             "delegate_to": "localhost", "register": "prom"},
            {"name": "Into the textfile directory", "ansible.builtin.copy": {
                "content": "{{ prom.content }}", "dest": str(tmp_path) + "/textfile/{{ inventory_hostname }}/{{ prom.file_name }}", "mode": "0644"}},
            {"name": "Report", "gpufleet.acceptance.render_report": {"results_dir": "{{ gpufleet_run.run_dir }}", "formats": ["html"]},
             "run_once": True, "delegate_to": "localhost"},
            {"name": "Dump", "ansible.builtin.copy": {
                "content": "{{ {'recorded': recorded, 'history': history, 'verdict': verdict, 'prom': prom} | to_json }}",
                "dest": str(tmp_path) + "/{{ inventory_hostname }}.out.json", "mode": "0600"}, "delegate_to": "localhost"},
        ],
    }]


def test_record_history_verdict_prometheus_report(tmp_path):
    (tmp_path / "good.jsonl").write_text(synth.text(synth.series(gpus=4)))
    (tmp_path / "sag.jsonl").write_text(synth.text(synth.series(gpus=4, change=sag_gpu2)))
    for host in ("good", "sag"):
        (tmp_path / "textfile" / host).mkdir(parents=True)
    hostvars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpufleet_profile": "generic"}
    inventory = {"all": {"hosts": {"good": dict(hostvars, gpufleet_burn_in_thresholds={"hot_margin_c": 5}), "sag": dict(hostvars)}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play(tmp_path), sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO_ROOT, "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp-local"), ANSIBLE_REMOTE_TEMP=str(tmp_path / "tmp-remote"))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
                           str(tmp_path / "play.yml")], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    good = json.loads((tmp_path / "good.out.json").read_text())
    sag = json.loads((tmp_path / "sag.out.json").read_text())
    # burn_in_record: the flags at once; the inventory's thresholds were used for "good"
    assert good["recorded"]["flagged"] == [] and good["recorded"]["samples_path"] == "raw/good/burn_in/burn_in.jsonl"
    assert "hot_margin_c = 5" in [item for item in good["recorded"]["findings"] if item["id"] == "burn_in.hot"][0]["threshold_source"]
    assert len(sag["recorded"]["flagged"]) == 1 and sag["recorded"]["flagged"][0].startswith("fail burn_in.clock_sag: GPU 2 (")
    # history: 8 rows, no drift on a first run
    assert good["history"]["rows"] == 8 and good["history"]["flags"] == [] and good["history"]["hosts"] == ["good", "sag"]
    # verdicts
    assert good["verdict"]["nodes"]["good"]["verdict"] == "ACCEPT"
    assert good["verdict"]["nodes"]["sag"]["verdict"] == "REJECT" and good["verdict"]["nodes"]["sag"]["failed"] == ["burn_in.clock_sag"]
    # the .prom file on each "node"
    text = (tmp_path / "textfile" / "sag" / "gpufleet.prom").read_text()
    assert 'gpufleet_gpu_findings{gpu="2",uuid="%s",name="%s",status="fail"} 1' % (synth.uuid_of(2), synth.MODEL) in text.splitlines()
    assert oct(os.stat(tmp_path / "textfile" / "sag" / "gpufleet.prom").st_mode & 0o777) == "0o644"
    promtool = shutil.which("promtool")
    if promtool:
        assert subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60, check=False).returncode == 0
    html = (tmp_path / "run" / "report.html").read_text()
    assert 'id="burn-in"' in html and "node-a" not in html and 'aria-label="sag: SM clock (MHz) over the run"' in html
