# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One contract per record: the TypedDicts of gpufleet/results/shapes.py and gpufleet/report/schemas/results.schema.json
declare the same keys, and what the real code path writes (a results directory made through RunDir, bench.py,
burn_in.py and judge_run, and its results.json rendered by report/render.py) has the keys its shape declares.

The expected key sets come from the TypedDicts (``typing.get_type_hints``, ``__required_keys__``): a key added to one
side only fails here; the results.json of a run holding every optional key the code writes (a reconnected benchmark
and fact phase, cut raw output, burn-in records) validates against the schema. The records are hand-made only where
no function of the library writes them (slurm.json: the slurm_drain action plugin's document around
slurm_drain.action_record).
"""

from __future__ import annotations

import json
import os
import sys
import types
import typing
from typing import Any

import jsonschema
import pytest

from gpufleet.checks import engine
from gpufleet.cli.common import load_run, run_json
from gpufleet.checks.model import PASS, CheckResult, result
from gpufleet.facts import FACT_GROUPS
from gpufleet.report.render import render_report
from gpufleet.results import shapes
from gpufleet.results.bench import counters_record, plain_record, record_run
from gpufleet.results.burn_in import record_burn_in
from gpufleet.results.compact import expand_document
from gpufleet.results.shapes import (BenchmarkRecord, BurnInRecord, CoverageCounts, CoverageItem, FleetDocument,
                                     HealthReading, HostRecord, NodeVerdict, PhaseRecord, ProfileChoice, RawEntry,
                                     ReportBenchmark, ReportCoverage, ReportHost, ResultsDocument, RunDocument,
                                     RunRecord, SlurmAction, SlurmDocument)
from gpufleet.results.slurm_drain import SLURM_FILE, DrainAction, action_record
from gpufleet.results.store import (BENCHMARK_FIELDS, BENCHMARK_OPTIONAL, COVERAGE_SUMMARY_KEYS, RunDir, read_json,
                                    write_json_atomic)
from gpufleet.results.verdicts import judge_run
from profile_double import FakeJudge  # pylint: disable=import-error

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
SCHEMA_FILE = os.path.join(REPO_ROOT, "gpufleet", "report", "schemas", "results.schema.json")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "nvml-samples"))

import synthetic_nvml as synth  # noqa: E402  pylint: disable=import-error,wrong-import-position

# Each object results.schema.json declares with properties, where it is in the schema, and its TypedDict.
OBJECTS = {
    "results.json": ((), ResultsDocument),
    "run.json": (("$defs", "run"), RunRecord),
    "fleet.json": (("$defs", "fleet"), FleetDocument),
    "a node verdict of fleet.json": (("$defs", "fleet", "properties", "node_verdicts", "additionalProperties"),
                                     NodeVerdict),
    "coverage": (("$defs", "coverage_counts"), CoverageCounts),
    "a coverage item": (("$defs", "coverage_counts", "properties", "items", "items"), CoverageItem),
    "a check result": (("$defs", "check"), CheckResult),
    "a raw entry": (("$defs", "raw_entry"), RawEntry),
    "a benchmark record": (("$defs", "benchmark"), BenchmarkRecord),
    "a host record": (("$defs", "host"), HostRecord),
    "a host of results.json": (("$defs", "report_host"), ReportHost),
    "a benchmark of results.json": (("$defs", "report_benchmark"), ReportBenchmark),
    "the coverage of a host of results.json": (("$defs", "report_coverage"), ReportCoverage),
    "a phase of a host record": (("$defs", "host", "properties", "phases", "additionalProperties"), PhaseRecord),
    "the profile of a host record": (("$defs", "host", "properties", "profile", "oneOf", 1), ProfileChoice),
    "slurm.json": (("properties", "slurm"), SlurmDocument),
    "an action of slurm.json": (("properties", "slurm", "properties", "actions", "items"), SlurmAction),
}


def _schema() -> dict[str, Any]:
    with open(SCHEMA_FILE, encoding="utf-8") as handle:
        return json.load(handle)


def _schema_object(path: tuple) -> dict[str, Any]:
    node: Any = _schema()
    for step in path:
        node = node[step]
    return node


def _keys(shape: type) -> set[str]:
    return set(typing.get_type_hints(shape))


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_schema_and_typeddict_declare_the_same_keys(name):
    path, shape = OBJECTS[name]
    declared = _schema_object(path)
    assert set(declared["properties"]) == _keys(shape), name
    assert set(declared.get("required", ())) == set(shape.__required_keys__), name


def test_facts_are_the_fact_groups_and_the_store_checks_the_benchmark_shape():
    facts = _schema_object(("$defs", "host", "properties", "facts"))
    assert set(facts["properties"]) == set(FACT_GROUPS) and "required" not in facts
    assert set(BENCHMARK_FIELDS) == _keys(BenchmarkRecord)
    assert BENCHMARK_OPTIONAL == BenchmarkRecord.__optional_keys__
    # fleet.json keeps the coverage without its item list
    assert set(COVERAGE_SUMMARY_KEYS) == _keys(CoverageCounts) - {"items", "verified"}
    assert CoverageCounts.__required_keys__ <= set(COVERAGE_SUMMARY_KEYS)


# -- what the real code path writes ----------------------------------------------------------------------------------

FAMILY = __name__


@engine.node_check("record_shapes_demo.facts_read", requires=("gpu",))
def _facts_read(node):
    return [result("record_shapes_demo.facts_read", PASS, "%d GPUs read" % node.group("gpu")["gpu_count"])]


def _tool(cmd: list[str], stdout: str, **extra: Any) -> dict[str, Any]:
    return dict({"cmd": cmd, "rc": 0, "stdout": stdout, "stderr": "", "duration_s": 0.5, "error": None}, **extra)


def _fact_results() -> dict[str, Any]:
    facts = {"topology": {"gpu_pairs": []}, "gpu": {"gpu_count": 2}, "nic": {"interfaces": [], "rdma": []},
             "host": {"summary": []}}
    raw = {"host": {"dmesg": _tool(["dmesg"], "line\n", dropped_lines=3),
                    "journalctl": _tool(["journalctl", "-k"], "x\n", stderr="warn\n")},
           "gpu": {"smi": _tool(["nvidia-smi", "-q"], "q\n"), "files": {"a": _tool(["cat", "a"], "1\n")}},
           "nic": {"sysfs": {"net": [{"name": "eth0"}]}, "ibstat": _tool(["ibstat"], "", rc=None, error="not_found")}}
    return {group: {"ansible_facts": {FACT_GROUPS[group]: value}, "raw": raw.get(group, {})}
            for group, value in facts.items()}


def _bench_args(run: RunDir) -> dict[str, Any]:
    return {"run_dir": run.path, "record_host": "a", "kind": "gpu_compute", "job_id": "job-1", "argv": ["gpubench"],
            "env": {"CUDA_VISIBLE_DEVICES": "0,1"}, "hosts": ["a"]}


def _module_result() -> dict[str, Any]:
    return {"outcome": "failed", "reason": "exit status 1", "cmd": ["gpubench"], "rc": 1, "stdout": "not gpubench\n",
            "stderr": "boom\n", "started": "2026-01-31T12:00:00Z", "duration_s": 2.0,
            "reconnected": "the controller's ssh connection to the node ended mid-task; reconnected once"}


@pytest.fixture(name="judged_run")
def judged_run_fixture(tmp_path):
    """A results directory written by the library as a run writes it: facts (one host unreachable), a health re-read
    after the benchmarks, benchmark records of every writer, a burn-in record, the verdicts, slurm.json."""
    run = RunDir.create(str(tmp_path / "run"), inventory=["hosts.yml"], playbook="validate_cluster.yml",
                        hosts=["a", "b"], profile_choices={"requested": {}}, invocation="4242:1",
                        extra={"ansible_version": "2.19.0", "settings": {"level": "standard", "benchmarks": None,
                                                                         "burn_in": None}})
    run.record_facts("a", _fact_results(), claim={"gpu_count": 2}, settings={"gpufleet_nccl_env": {}},
                     profile_request={"profile": None, "overrides": None}, reconnected="ssh dropped once")
    run.record_facts("b", {"topology": {"unreachable": True, "msg": "ssh: connect to host b: refused"}})
    run.record_health_after("a", "benchmarks", _fact_results())
    run.add_benchmark("a", plain_record("iperf3", "iperf3", ["a"], "2026-01-31T12:00:00Z",
                                        reason="no second host in the play"))
    before = {"taken": "2026-01-31T12:00:00Z", "counters": {"mlx5_0/1": {"port_rcv_errors": 0}}, "hw_counters": {}}
    run.add_benchmark("a", counters_record("a", "ib_write_bw", before, dict(before, taken="2026-01-31T12:01:00Z")))
    record_run(_bench_args(run), _module_result(), None, samples=[{"index": 0, "samples": 3}])
    record_burn_in(run, "a", sample_records=synth.series(gpus=2, ticks=3),
                   load={"tool": "gpu-burn", "outcome": "ok", "reason": ""}, duration_s=3.0)
    judge_run(run, ["a", "b"], {"a"}, {host: {"claim": None, "profile": None, "overrides": None, "settings": {}}
                                       for host in ("a", "b")}, FakeJudge(), families=[FAMILY])
    action = DrainAction("a", "a", "drain", "REJECT", "gpufleet: reason")
    document = {"reached": True, "sinfo_foreign_lines": [], "actions": [action_record(action, "scontrol", 0, "")]}
    write_json_atomic(os.path.join(run.path, SLURM_FILE), document)
    return run


def _is_typeddict(shape: object) -> bool:
    return isinstance(shape, type) and issubclass(shape, dict) and hasattr(shape, "__required_keys__")


def _conforms(value: Any, shape: Any, where: str, seen: set) -> None:
    """Every TypedDict within ``shape`` holds exactly its declared keys (all required ones among them) in ``value``;
    the scalars' types are not checked."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if _is_typeddict(shape):
        assert isinstance(value, dict), where
        hints = typing.get_type_hints(shape)
        undeclared = sorted(set(value) - set(hints))
        assert set(value) <= set(hints), "%s: keys %s does not declare: %s" % (where, shape.__name__, undeclared)
        assert shape.__required_keys__ <= set(value), "%s: %s keys missing: %s" % (
            where, shape.__name__, sorted(shape.__required_keys__ - set(value)))
        seen.add(shape)
        for key, item in value.items():
            _conforms(item, hints[key], "%s.%s" % (where, key), seen)
    elif origin in (typing.Union, types.UnionType):
        # the arm the value is: a row of results.json is a list of indexes or one index
        for arg in (arg for arg in args if arg is not type(None)):
            if isinstance(value, dict if _is_typeddict(arg) else (typing.get_origin(arg) or arg)):
                _conforms(value, arg, where, seen)
    elif origin is list:
        for index, item in enumerate(value):
            _conforms(item, args[0], "%s[%d]" % (where, index), seen)
    elif origin is dict:
        for key, item in value.items():
            _conforms(item, args[1], "%s.%s" % (where, key), seen)


def test_what_the_store_writes_has_the_keys_of_its_shape(judged_run):
    seen: set = set()
    _conforms(read_json(judged_run.run_file), RunRecord, "run.json", seen)
    _conforms(read_json(os.path.join(judged_run.path, "fleet.json")), FleetDocument, "fleet.json", seen)
    for host, record in judged_run.host_records().items():
        _conforms(record, HostRecord, "hosts/%s.json" % host, seen)
    _conforms(read_json(os.path.join(judged_run.path, SLURM_FILE)), SlurmDocument, "slurm.json", seen)
    assert {RunRecord, FleetDocument, NodeVerdict, CoverageCounts, HostRecord, PhaseRecord, RawEntry, BenchmarkRecord,
            CheckResult, CoverageItem, ProfileChoice, HealthReading, BurnInRecord, shapes.SamplerSummary,
            SlurmDocument, SlurmAction} <= seen
    # the optional keys of the run's records were written (the keys the schema leaves undeclared among them)
    record = judged_run.read_host("a")
    assert {"burn_in", "health_after", "coverage", "updated"} <= set(record)
    assert "reconnected" in record["phases"]["facts"] and "dropped_lines" in record["raw"]["host"]["dmesg"]
    assert any("reconnected" in bench for bench in record["benchmarks"])


def test_results_json_has_the_keys_of_its_shape(judged_run, tmp_path):
    files = render_report(judged_run.path, output_dir=str(tmp_path / "out"), formats=["json"])["files"]
    seen: set = set()
    document = read_json(files["json"])
    _conforms(document, ResultsDocument, "results.json", seen)
    assert {ResultsDocument, RunRecord, FleetDocument, ReportHost, ReportCoverage, ReportBenchmark, BurnInRecord,
            SlurmDocument} <= seen
    # its rows, expanded, are the records' check results and coverage items
    for name, host in expand_document(document)["hosts"].items():
        for index, item in enumerate(host["checks"]):
            _conforms(item, CheckResult, "results.json hosts.%s.checks[%d]" % (name, index), seen)
        for index, item in enumerate((host.get("coverage") or {}).get("items") or []):
            _conforms(item, CoverageItem, "results.json hosts.%s.coverage.items[%d]" % (name, index), seen)
    assert {CheckResult, CoverageItem} <= seen


def test_the_cli_run_document_has_the_keys_of_its_shape(judged_run):
    run, fleet, hosts = load_run(judged_run.path)
    seen: set = set()
    _conforms(run_json(run, fleet, hosts), RunDocument, "gpufleet report --output json", seen)
    assert {RunDocument, HostRecord, CheckResult, RawEntry} <= seen


def test_results_json_of_a_run_with_a_reconnected_benchmark_validates(judged_run, tmp_path):
    files = render_report(judged_run.path, output_dir=str(tmp_path / "out"), formats=["json"])["files"]
    jsonschema.Draft202012Validator(_schema()).validate(read_json(files["json"]))
