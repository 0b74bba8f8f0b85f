# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The declared shapes of a results directory (schema ``gpufleet.results/v1``) and of results.json (``v2``): one
TypedDict per record, the contract docs/results-schema.md words and gpufleet/report/schemas/results.schema.json checks.

A record whose schema object requires some keys and allows others is two classes: ``_<Name>Keys`` holds the
required keys, ``<Name>`` (``total=False``) adds the optional ones (``__required_keys__`` / ``__optional_keys__``:
Python 3.10 has no ``typing.NotRequired``). Values a node or an inventory gave (facts, parsed outputs, claims) are
``Any``: their own modules declare them. tests/unit/gpufleet/results/test_record_shapes.py holds these keys and the
JSON schema's ``properties`` / ``required`` to each other.

Pure: no I/O, no gpufleet import but the check result's shape (gpufleet/checks/model.py CheckResult).
"""

from __future__ import annotations

from typing import Any, TypedDict

from gpufleet.checks.model import CheckResult

__all__ = [
    "BenchmarkRecord", "BurnInRecord", "CheckResult", "CoverageCounts", "CoverageItem", "FactsByGroup",
    "FleetDocument", "HealthReading", "HostRecord", "NodeVerdict", "PhaseRecord", "ProfileChoice", "RawEntry",
    "RawIndex", "ReportBenchmark", "ReportCoverage", "ReportHost", "ResultsDocument", "ResumeState", "Row",
    "RunDocument", "RunRecord", "RunSlice", "SamplerSummary", "SlurmAction", "SlurmDocument",
]


# -- hosts/<host>.json ---------------------------------------------------------------------------------------------

class _RawEntryKeys(TypedDict):
    path: str | None  # run-relative stdout file; None when the tool never ran
    stderr_path: str | None
    cmd: list[str] | None  # the argv as run; None for a collected value kept as .json
    rc: int | None
    duration_s: float | None
    error: str | None  # None, not_found, timeout or exec_failed: ...


class RawEntry(_RawEntryKeys, total=False):
    """One collector key of a fact group in the host record's ``raw`` index (RunDir.write_raw)."""

    # what the node's reader cut (node_collect caps output while reading it), kept as the node said
    dropped_lines: Any
    truncated: Any
    stdout_bytes: Any
    stderr_bytes: Any


# ``raw[group][key]``: a fact group's raw index
RawIndex = dict[str, RawEntry]


class _PhaseRecordKeys(TypedDict):
    complete: bool
    finished: str


class PhaseRecord(_PhaseRecordKeys, total=False):
    """``phases[<phase>]`` of a host record (``facts``, ``checks``)."""

    reconnected: str  # facts only: why the facts were gathered again after one reconnect


# ``facts`` of a host record: per fact group (gpufleet.facts.FACT_GROUPS, the one list of their names) its fact dict,
# None when not gathered. A mapping, not a TypedDict: every reader and writer goes by a group held in a variable.
FactsByGroup = dict[str, dict[str, Any] | None]


class ProfileChoice(TypedDict):
    """The profile a host was judged against and how it was chosen (``profile`` of a host record)."""

    name: str | None
    reason: str | None


class _CoverageItemKeys(TypedDict):
    item: str
    label: str
    checks: list[str]
    expected: str | None
    source: str | None
    subject: str | None
    status: str  # verified, failed or unverified
    reason: str | None


class CoverageItem(_CoverageItemKeys, total=False):
    """One required item of a node's coverage (gpufleet/checks/evidence.py)."""

    fix: str  # an unverified item's fix before the retest (checks/fixes.py)


class _CoverageCountsKeys(TypedDict):
    claim: bool
    required: int
    judged: int
    failed: int
    skipped: int
    incomplete: list[str]


class CoverageCounts(_CoverageCountsKeys, total=False):
    """A node's required-evidence coverage (gpufleet/checks/evidence.py ``coverage``); fleet.json's node verdicts
    carry it without ``verified`` and ``items``."""

    verified: int
    level: str | None
    label: str | None
    items: list[CoverageItem]


class _ReportBenchmarkKeys(TypedDict):
    name: str
    command: list[str]
    environment: dict[str, str]
    message_size_bytes: int | None
    algorithm: str | None
    raw_output_path: str | None
    started: str
    duration_s: float | None


class ReportBenchmark(_ReportBenchmarkKeys, total=False):
    """A benchmark run as results.json keeps it: its record without the parser's output (compact.py)."""

    kind: str | None
    hosts: list[str]
    outcome: str | None
    reason: str | None
    rc: int | None
    repeat: int
    round: int | None
    group: str | None
    job_id: str | None
    stderr_path: str | None
    samples: list[dict[str, Any]] | None  # the NVML sampler's per-GPU summary of the run
    reconnected: str | None  # the run was started again after one reconnect, and why


class BenchmarkRecord(ReportBenchmark):
    """One benchmark run of a host record's ``benchmarks`` (gpufleet/results/bench.py builds it,
    RunDir.add_benchmark checks it against store.BENCHMARK_FIELDS)."""

    parsed: Any  # the parser's result: a dict, a list or None


class SamplerSummary(TypedDict):
    """What a burn-in record keeps of its sampler run (gpufleet/results/burn_in.py sampler_summary)."""

    schema: Any
    driver_version: Any
    nvml_version: Any
    binding: Any
    interval_s: Any
    host_time_start: Any
    samples: int
    ticks: int
    span_s: float | None
    bad_lines: int
    ended: Any


class BurnInRecord(TypedDict):
    """One burn-in or health-check record of a host record's ``burn_in`` (gpufleet/results/burn_in.py,
    docs/burn-in.md)."""

    name: str
    kind: str  # burn_in or health_check
    samples_path: str | None
    sampler_error: str | None
    load: dict[str, Any] | None  # {tool, outcome, reason} and the known extras (burn_in.clean_load)
    started: str
    duration_s: float | None
    recorded: str
    sampler: SamplerSummary | None
    gpus: list[dict[str, Any]]  # nvml_samples.summarise per GPU


class HealthReading(TypedDict):
    """The health facts read again after a stress phase (``health_after[<phase>]``, RunDir.record_health_after)."""

    phase: str
    read: str
    before: str  # the ``finished`` time of the facts phase it follows
    groups: list[str]
    facts: FactsByGroup
    fact_errors: dict[str, str]
    unreachable: str | None
    raw: dict[str, RawIndex]


class _HostKeys(TypedDict):
    host: str
    unreachable: str | None
    phases: dict[str, PhaseRecord]
    fact_errors: dict[str, str]
    claim: dict[str, Any] | None
    failed: list[str]
    verdict: str | None


class _Host(_HostKeys, total=False):
    """What a host record and a host of results.json hold alike (compact.py copies it as it is)."""

    updated: str
    settings: dict[str, Any]
    profile_request: dict[str, Any] | None
    profile: ProfileChoice | None
    burn_in: list[BurnInRecord]


class _HostRecordKeys(_Host):
    schema: str
    facts: FactsByGroup
    raw: dict[str, RawIndex]
    checks: list[CheckResult]
    benchmarks: list[BenchmarkRecord]


class HostRecord(_HostRecordKeys, total=False):
    """``hosts/<host>.json`` (gpufleet/results/store.py RunDir); results.json holds it as a ReportHost."""

    coverage: CoverageCounts | None
    health_after: dict[str, HealthReading]


# -- run.json and fleet.json ---------------------------------------------------------------------------------------

class RunSlice(TypedDict):
    """One slice of a merged sliced run (gpufleet/results/merge.py)."""

    path: str
    run_id: Any


class _RunRecordKeys(TypedDict):
    schema: str
    run_id: str
    started: str
    finished: str | None
    status: str  # running or finished
    hosts: list[str]


class RunRecord(_RunRecordKeys, total=False):
    """``run.json`` (RunDir.create, update_run), and ``run`` of results.json."""

    resumed: list[str]
    inventory: list[str]
    playbook: str | None
    profile_choices: dict[str, Any]
    gpufleet_version: str | None
    gpufleet_path: str | None
    ansible_version: str | None
    invocation: str | None
    settings: dict[str, Any]  # the run's level, benchmarks and burn-in as the playbook opened it
    slices: list[RunSlice]  # a merged sliced run only


class _NodeVerdictKeys(TypedDict):
    verdict: str
    failed: list[str]
    unreachable: str | None
    record: str  # the host file, run-relative


class NodeVerdict(_NodeVerdictKeys, total=False):
    """``node_verdicts.<host>`` of fleet.json (RunDir.write_fleet)."""

    profile: str | None
    coverage: CoverageCounts | None


class _FleetDocumentKeys(TypedDict):
    schema: str
    run_id: str | None
    generated: str
    verdict: str | None
    counts: dict[str, int]
    nodes: int
    node_verdicts: dict[str, NodeVerdict]


class FleetDocument(_FleetDocumentKeys, total=False):
    """``fleet.json`` (RunDir.write_fleet, merge.merge_slices), and ``fleet`` of results.json."""

    invocation: str | None  # run.json's invocation when it was written
    level: str | None
    label: str | None
    slices: list[RunSlice]  # a merged sliced run only


# -- slurm.json ----------------------------------------------------------------------------------------------------

class _SlurmActionKeys(TypedDict):
    host: str
    node: str
    action: str  # drain, resume, keep or absent
    why: str
    command: list[str] | None
    rc: int | None


class SlurmAction(_SlurmActionKeys, total=False):
    """One action of slurm.json (gpufleet/results/slurm_drain.py action_record)."""

    reason: str | None
    output: str


class _SlurmDocumentKeys(TypedDict):
    reached: bool
    actions: list[SlurmAction]


class SlurmDocument(_SlurmDocumentKeys, total=False):
    """slurm.json: what ``--slurm-drain`` did in Slurm (the slurm_drain action), and ``slurm`` of results.json."""

    sinfo_foreign_lines: list[str]


# -- results.json (gpufleet.results/v2) and the CLI's run document (v1) --------------------------------------------

# a check result or coverage item of results.json: indexes into ``values`` (gpufleet/results/compact.py)
Row = list[int | None] | int


class _ReportCoverageKeys(TypedDict):
    claim: bool
    required: int
    judged: int
    failed: int
    skipped: int
    incomplete: list[int]  # indexes into values


class ReportCoverage(_ReportCoverageKeys, total=False):
    """``coverage`` of a host of results.json: CoverageCounts, its reasons and items in ``values``."""

    verified: int
    level: str | None
    label: str | None
    items: list[Row]


class _ReportHostKeys(_Host):
    record: str  # hosts/<host>.json, relative to the results directory
    checks: list[Row]
    benchmarks: list[ReportBenchmark]


class ReportHost(_ReportHostKeys, total=False):
    """``hosts.<host>`` of results.json: its host record without schema, facts, raw index and health re-reads, its
    checks and coverage items as rows (compact.py)."""

    coverage: ReportCoverage | None


class _ResultsDocumentKeys(TypedDict):
    schema: str  # gpufleet.results/v2
    generated: str | None
    run: RunRecord
    fleet: FleetDocument | None  # None: the run has no fleet.json (interrupted or still running)
    fields: dict[str, list[str]]  # the fields of a row, per kind of row
    values: list[Any]
    hosts: dict[str, ReportHost]


class ResultsDocument(_ResultsDocumentKeys, total=False):
    """results.json: the run as one document (gpufleet/report/model.py results_document)."""

    slurm: SlurmDocument
    cost_to_train: dict[str, Any] | None  # gpufleet/report/cost.py cost_document
    gpu_throughput: list[dict[str, Any]]  # gpufleet/report/throughput.py rows


class _RunDocumentKeys(TypedDict):
    schema: str  # gpufleet.results/v1
    generated: str | None
    run: RunRecord
    fleet: FleetDocument | None
    hosts: dict[str, HostRecord]


class RunDocument(_RunDocumentKeys, total=False):
    """The run as the CLI's ``--output json`` prints it: run.json, fleet.json and every host record in full."""

    slurm: SlurmDocument


# -- what a rerun may skip -----------------------------------------------------------------------------------------

class ResumeState(TypedDict):
    """RunDir.resume: which hosts a rerun can skip, which it must gather again, which records were set aside."""

    run_id: str | None
    complete: list[str]
    incomplete: list[str]
    unreachable: list[str]
    damaged: list[str]
    set_aside: list[str]
    missing: list[str]
