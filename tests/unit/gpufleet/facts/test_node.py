# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_facts' controller half: each group parsed as its own action would, failures per group."""

from __future__ import annotations

import json
import os

import pytest
from ansible.errors import AnsibleConnectionFailure

from ansible_collections.gpufleet.acceptance.plugins.action import node_facts
from gpufleet.adapter.node_facts import separate_results
from gpufleet.facts import node, topology
from gpufleet.facts.raw import RawReader
from gpufleet.results.store import RunDir, record_host_facts

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
TOPO = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt")


def _entry(cmd, stdout, rc=0):
    return {"cmd": cmd, "rc": rc, "stdout": stdout, "stderr": "", "duration_s": 0.1, "error": None}


def test_each_group_parsed_or_failed_on_its_own():
    with open(TOPO, encoding="utf-8") as handle:
        topo = handle.read()
    module_result = {"changed": False, "groups": {
        "topology": {"raw": {"topo_m": _entry(["nvidia-smi", "topo", "-m"], topo)}, "failed": False, "msg": None},
        "nic": {"raw": {}, "failed": True, "msg": "no class/net under /nosys: is sysfs mounted there?"},
    }}
    groups = node.group_results("h1", ["topology", "nic"], module_result)
    # the recording is NV18 between all 8 H100s
    summary = groups["topology"]["ansible_facts"]["gpufleet_topology"]["summary"]
    assert (summary["gpu_count"], summary["all_pairs_nvlink"], summary["min_nvlinks"]) == (8, True, 18)
    assert groups["topology"]["raw"]["topo_m"]["stdout"] == topo and not groups["topology"].get("failed")
    assert groups["nic"] == {"changed": False, "failed": True, "msg": "no class/net under /nosys: is sysfs mounted there?", "raw": {}}
    assert groups["gpu"]["skipped"] and groups["host"]["skipped"]
    assert groups["gpu"]["skip_reason"] == "gpu is not in groups"


def test_foreign_lines_skipped_by_a_parser_are_in_the_group_facts_with_their_command():
    with open(TOPO, encoding="utf-8") as handle:
        topo = handle.read()
    # EDITED: a collecting script's banner before the recording, whose own line 1 is "$ nvidia-smi topo -m"
    edited = "===== node-07 : nvidia-smi topo -m =====\n" + topo  # the banner is line 1
    raw = {"topo_m": _entry(["nvidia-smi", "topo", "-m"], edited)}
    facts = node.build_group("h1", "topology", topology.build_facts, raw)["gpufleet_topology"]
    banner = "===== node-07 : nvidia-smi topo -m ====="
    assert facts["ignored_lines"] == [
        {"command": "nvidia-smi topo -m", "line": 1, "text": banner, "why": "banner"},
        {"command": "nvidia-smi topo -m", "line": 2, "text": "$ nvidia-smi topo -m", "why": "shell prompt"},
    ]
    # the facts are those of the recording: NV18 between all 8 H100s, no NIC row (noted)
    assert (facts["summary"]["gpu_count"], facts["summary"]["min_nvlinks"], facts["summary"]["nic_count"]) == (8, 18, 0)
    assert facts["notes"] == ["no NIC rows: the GPU-to-NIC paths are not judged from this matrix"]
    # a text with nothing foreign in it: no ignored_lines key at all
    clean = "\n".join(topo.split("\n")[1:])
    raw = {"topo_m": _entry(["nvidia-smi", "topo", "-m"], clean)}
    assert "ignored_lines" not in node.build_group("h1", "topology", topology.build_facts, raw)["gpufleet_topology"]


def test_a_single_group_action_keeps_the_ignored_lines_too():
    # the single-group fact actions (gpufleet.adapter.action) build through RawReader.attach_notes as build_group does
    raw = {"topo_m": _entry(["nvidia-smi", "topo", "-m"], "+ nvidia-smi topo -m\n" + _read(TOPO))}
    reader = RawReader("h1", raw)
    facts = reader.attach_notes(topology.build_facts(reader))["gpufleet_topology"]
    assert [(item["line"], item["why"]) for item in facts["ignored_lines"]] == [(1, "echoed command"), (2, "shell prompt")]
    assert facts["summary"]["gpu_count"] == 8


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_output_that_cannot_be_read_fails_that_group_with_the_parser_message():
    module_result = {"groups": {"topology": {"raw": {"topo_m": _entry(["nvidia-smi", "topo", "-m"], "no matrix here\n")}, "failed": False}}}
    groups = node.group_results("h1", ["topology"], module_result)
    assert groups["topology"]["failed"]
    assert groups["topology"]["msg"].startswith("h1: cannot read `nvidia-smi topo -m` output:")


def test_a_run_that_failed_as_a_whole_fails_every_group_asked_for():
    module_result = {"failed": True, "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error", "module_stderr": "Traceback ..."}
    groups = node.group_results("h1", ["gpu", "host"], module_result)
    assert groups["gpu"] == {"changed": False, "failed": True, "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error"}
    assert groups["host"]["failed"] and groups["topology"]["skipped"] and groups["nic"]["skipped"]


def _execute_from(outcomes, calls):
    """A fake ``execute(module, module_args)``: module name -> a result dict or an exception to raise."""

    def execute(module, module_args):
        calls.append((module, dict(module_args)))
        outcome = outcomes[module]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return execute


def test_separate_passes_each_module_only_its_own_options_and_keeps_going_after_a_failure():
    with open(TOPO, encoding="utf-8") as handle:
        topo = handle.read()
    calls = []
    execute = _execute_from({
        "gpufleet.acceptance.gpu_topology_facts": {"changed": False, "raw": {"topo_m": _entry(["nvidia-smi", "topo", "-m"], topo)}},
        "gpufleet.acceptance.nic_facts": {"failed": True, "msg": "no class/net under /nosys: is sysfs mounted there?", "raw": {}},
    }, calls)
    args = {"groups": ["topology", "nic"], "nvidia_smi_path": "/opt/smi", "sysfs_root": "/nosys", "ethtool_path": "ethtool", "timeout": 9}
    groups = separate_results("h1", ["topology", "nic"], args, execute, node_facts.MODULE_OPTIONS)
    # topology takes nvidia_smi_path and timeout; nic takes sysfs_root, the tool paths and timeout - never `groups`
    assert calls == [("gpufleet.acceptance.gpu_topology_facts", {"nvidia_smi_path": "/opt/smi", "timeout": 9}),
                     ("gpufleet.acceptance.nic_facts", {"sysfs_root": "/nosys", "ethtool_path": "ethtool", "timeout": 9})]
    assert groups["topology"]["ansible_facts"]["gpufleet_topology"]["summary"]["gpu_count"] == 8
    assert groups["nic"] == {"changed": False, "failed": True, "msg": "no class/net under /nosys: is sysfs mounted there?", "raw": {}}
    assert groups["gpu"]["skipped"] and groups["host"]["skipped"]


def test_separate_node_lost_after_its_first_group():
    calls = []
    execute = _execute_from({
        "gpufleet.acceptance.gpu_topology_facts": {"failed": True, "msg": "nvidia-smi not found", "raw": {}},
        "gpufleet.acceptance.gpu_facts": AnsibleConnectionFailure("ssh: connect to host 10.0.0.7 port 22: Connection refused"),
    }, calls)
    groups = separate_results("h1", ["topology", "gpu", "nic", "host"], {}, execute, node_facts.MODULE_OPTIONS)
    assert len(calls) == 2
    assert groups["topology"]["failed"]
    assert groups["gpu"] == {"changed": False, "unreachable": True, "msg": "ssh: connect to host 10.0.0.7 port 22: Connection refused"}
    assert groups["nic"]["skipped"] and groups["host"]["skipped"]
    assert groups["nic"]["skip_reason"] == "the host became unreachable"


def test_separate_node_that_answers_nothing_raises_the_connection_error():
    execute = _execute_from({"gpufleet.acceptance.gpu_topology_facts": AnsibleConnectionFailure("port 1: Connection refused")}, [])
    with pytest.raises(AnsibleConnectionFailure):
        separate_results("h1", ["topology", "gpu"], {}, execute, node_facts.MODULE_OPTIONS)


@pytest.mark.parametrize("record, message", [
    ("results/run-1", "record must be a mapping with run_dir (the results directory), got 'str'"),
    ({"claim": {}}, "record.run_dir is required: the results directory of this run"),
    ({"run_dir": ""}, "record.run_dir is required: the results directory of this run"),
    # the record option's keys include ``after`` (the health re-read after a stress phase)
    ({"run_dir": "r", "profil": "h100"},
     "record has unknown key(s) profil; known: run_dir, claim, profile, profile_overrides, settings, after"),
])
def test_bad_record_option_is_refused_with_what_is_wrong(record, message):
    assert node_facts.check_record(record) == (None, message)


def test_record_host_facts_unreachable_host(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), inventory=[], playbook=None, hosts=["h1"])
    lost = {"changed": False, "unreachable": True, "msg": "ssh: connect to host 10.0.0.7 port 22: Connection refused"}
    _run, record = record_host_facts("h1", {"topology": lost, "gpu": lost}, {"run_dir": run.path, "claim": {"gpu_count": 8}})
    assert record["unreachable"] == "ssh: connect to host 10.0.0.7 port 22: Connection refused"
    assert record["claim"] == {"gpu_count": 8} and record["raw"] == {} and record["phases"]["facts"]["complete"] is False
    with open(run.host_file("h1"), encoding="utf-8") as handle:
        assert json.load(handle)["unreachable"] == record["unreachable"]


def _deep_xml(depth):
    return "<nvidia_smi_log>\n<gpu>\n" + "<a>\n" * depth + "</a>\n" * depth + "</gpu>\n</nvidia_smi_log>\n"


def test_a_parser_refusing_deep_xml_fails_only_the_gpu_group():
    with open(TOPO, encoding="utf-8") as handle:
        topo = handle.read()
    module_result = {"groups": {
        "topology": {"raw": {"topo_m": _entry(["nvidia-smi", "topo", "-m"], topo)}, "failed": False, "msg": None},
        "gpu": {"raw": {"lspci": _entry(["lspci", "-nn"], ""), "query_xml": _entry(["nvidia-smi", "-q", "-x"], _deep_xml(1100))},
                "failed": False, "msg": None},
    }}
    groups = node.group_results("h1", ["topology", "gpu"], module_result)
    assert groups["gpu"]["failed"]
    # <nvidia_smi_log> line 1, <gpu> line 2, the 63rd <a> (the 65th element deep) line 65
    assert groups["gpu"]["msg"] == ("h1: cannot read `nvidia-smi -q -x` output: line 65: "
                                    "elements nested more than 64 deep (nvidia-smi nests about 6)")
    assert groups["topology"]["ansible_facts"]["gpufleet_topology"]["summary"]["gpu_count"] == 8


def test_any_exception_of_a_builder_fails_only_its_group(monkeypatch):
    """Not only FactError: a RecursionError (or a bug meeting odd output) in one group keeps the others' facts."""

    def broken(_reader):
        raise RecursionError("maximum recursion depth exceeded")

    builders = tuple((name, (module, broken if name == "gpu" else build)) for name, (module, build) in node.BUILDERS)
    monkeypatch.setattr(node, "BUILDERS", builders)
    with open(TOPO, encoding="utf-8") as handle:
        topo = handle.read()
    module_result = {"groups": {
        "topology": {"raw": {"topo_m": _entry(["nvidia-smi", "topo", "-m"], topo)}, "failed": False, "msg": None},
        "gpu": {"raw": {}, "failed": False, "msg": None},
    }}
    groups = node.group_results("h1", ["topology", "gpu"], module_result)
    assert groups["gpu"] == {"changed": False, "failed": True, "raw": {},
                             "msg": "h1: gpu facts could not be built: RecursionError: maximum recursion depth exceeded"}
    assert not groups["topology"].get("failed") and "gpufleet_topology" in groups["topology"]["ansible_facts"]


def test_truncated_output_that_cannot_be_parsed_says_it_was_truncated():
    entry = _entry(["nvidia-smi", "topo", "-m"], "x\n" * 50)
    entry.update(truncated=True, stdout_bytes=200000000, stderr_bytes=0)
    groups = node.group_results("h1", ["topology"], {"groups": {"topology": {"raw": {"topo_m": entry}, "failed": False}}})
    assert groups["topology"]["failed"]
    assert groups["topology"]["msg"].startswith("h1: cannot read `nvidia-smi topo -m` output:")
    assert groups["topology"]["msg"].endswith(" (output truncated on the node: it printed 200000000 bytes, the first 100 were kept)")


def test_a_task_timeout_is_recorded_for_the_groups_asked_for_only(tmp_path):
    # Ansible's own task timeout, raised inside the action while the module runs (ansible-core 2.19)
    from ansible._internal._errors._task_timeout import TaskTimeoutError  # pylint: disable=import-outside-toplevel

    assert node_facts.task_timeout_of(TaskTimeoutError(210)) == 210
    assert node_facts.task_timeout_of(KeyboardInterrupt()) is None
    assert node_facts.task_timeout_of(TimeoutError("ssh")) is None
    run = RunDir.create(str(tmp_path / "run"), inventory=[], playbook=None, hosts=["h1"])
    node_facts.record_timed_out("h1", ["gpu", "nic"], {"run_dir": run.path}, 210)
    with open(run.host_file("h1"), encoding="utf-8") as handle:
        record = json.load(handle)
    said = "the fact task ran past its timeout of 210 s before the node answered: nothing came back from it"
    assert record["fact_errors"] == {"gpu": said, "nic": said}
    assert record["unreachable"] is None and all(value is None for value in record["facts"].values())


def test_collector_separate_shares_one_budget():
    every = ["topology", "gpu", "nic", "host"]
    # 2 x the longest timeout (60 s: topology, gpu, host) + 30 s; nic alone 2 x 30 + 30
    assert node_facts.separate_budget({}, every) == 150
    assert node_facts.separate_budget({}, ["nic"]) == 90
    # an extra var arrives as text
    assert node_facts.separate_budget({"timeout": "10"}, every) == 50
    assert node_facts.separate_budget({"timeout": 10, "phase_timeout": 400}, every) == 400
    assert node_facts.separate_budget({"timeout": "soon"}, every) is None
