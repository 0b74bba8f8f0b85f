# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's one pass over a run's host records: each record is read once, and only what the report shows of it is
kept.

Of each host record, as it is read (:func:`digest_run`):

- its row of the report (nodes.py ``node_row``: reasons, coverage, claim and NIC rows);
- its entry of results.json, its checks and coverage items as rows of the run's one value table (results/compact.py);
- its junit.xml testsuite, written to a spool file in the output directory (junit.py ``host_suite``), put in order of
  host when junit.xml is written;
- the record cut down to what the fleet-wide views read (:func:`view_record`): the GPU table, the topology matrices,
  the cost to train, the benchmark charts, the throughput table and the burn-in section.

The rest of the record (most of its facts, its checks and coverage) is let go before the next is read: at 10,000 nodes
the records whole were 1.4 GB in memory, and what is kept of them is a fraction. The files are the same as those made
from the whole records (report/model.py ``load_results`` and ``build_model``, junit.py ``junit_pieces``,
model.py ``results_document``), which the tests hold them to.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from typing import IO, Any, Iterator, Sequence, cast

from gpufleet.report.common import Record, View, error_words
from gpufleet.report.gpu_view import GPU_COLUMNS
from gpufleet.report.junit import JUNIT_COUNTS, add_counts, host_suite
from gpufleet.report.nodes import node_row
from gpufleet.report.throughput import FLEET_RULE_PREFIX
from gpufleet.results.compact import ValueTable, compact_host
from gpufleet.results.shapes import ReportHost
from gpufleet.results.store import RunDir

# What the fleet-wide views read of a record's facts (model.py lists the views): the GPU table its GPUs' columns and
# the driver (gpu_view.py); the cost to train the model, count, memory and PCIe generation of the GPUs and the
# topology's summary (offers.py); the topology matrices the names, links and summary (topology_view.py).
VIEW_GPU_FIELDS = frozenset(name for name, _label in GPU_COLUMNS) | {"memory_total_mib", "pcie_link_gen_max"}
VIEW_GPU_GROUP = ("gpus", "driver_version", "gpu_count")
VIEW_TOPOLOGY = ("names", "links", "summary")
# the parts of a record the views never read (the node's row and the files written in the pass hold them)
NOT_VIEWED = ("facts", "checks", "coverage")


def viewed_check(item: Any) -> bool:
    """Whether a fleet-wide view reads the check result ``item``: a failed or errored one (the first is why a priced
    node is no offer: cost.py ``first_reason``), an all-reduce one (its floor: benchmark_view.py), a fleet-relative
    compute finding (throughput.py) or a burn-in one (charts_series.py). What is no mapping is kept as it is, for the
    views to find it as they would."""
    if not isinstance(item, dict):
        return True
    check_id = str(item.get("id"))
    return (item.get("status") in ("fail", "error") or "allreduce" in check_id
            or check_id.startswith((FLEET_RULE_PREFIX, "burn_in")))


def _fields(value: Any, names: Any) -> Any:
    """A mapping's ``names`` (those it has); anything else as it is."""
    if not isinstance(value, dict):
        return value
    return {name: value[name] for name in names if name in value}


def _view_facts(facts: Any) -> Any:
    if not isinstance(facts, dict):
        return facts
    viewed = {}
    if "gpu" in facts:
        gpu = viewed["gpu"] = _fields(facts["gpu"], VIEW_GPU_GROUP)
        if isinstance(gpu, dict) and isinstance(gpu.get("gpus"), list):
            gpu["gpus"] = [_fields(item, VIEW_GPU_FIELDS) for item in gpu["gpus"]]
    if "topology" in facts:
        viewed["topology"] = _fields(facts["topology"], VIEW_TOPOLOGY)
    return viewed


def view_record(record: Record) -> Record:
    """``record`` cut down to what the fleet-wide views read: its facts' VIEW_ fields, the checks :func:`viewed_check`
    keeps, of its coverage the incomplete items; every other key as it is."""
    viewed = {key: value for key, value in record.items() if key not in NOT_VIEWED}
    if "facts" in record:
        viewed["facts"] = _view_facts(record["facts"])
    checks = record.get("checks")
    if "checks" in record:
        viewed["checks"] = [item for item in checks if viewed_check(item)] if isinstance(checks, list) else checks
    if "coverage" in record:
        viewed["coverage"] = _fields(record["coverage"], ("incomplete",))
    return viewed


class SuiteSpool:
    """The junit.xml testsuites of the pass, in an unnamed file of the output directory, read back in order of host
    when junit.xml is written (a 10,000-node fleet's are 170 MB). A host read twice (two files name it) keeps its last
    testsuite, as a run's records keep the last file's record."""

    def __init__(self, directory: str) -> None:
        self.file: IO[bytes] = tempfile.TemporaryFile(prefix=".junit-", dir=directory)
        self.where: dict[str, tuple[int, int, dict[str, int]]] = {}

    def add(self, host: str, suite: bytes, counts: dict[str, int]) -> None:
        self.where[host] = (self.file.tell(), len(suite), counts)
        self.file.write(suite)

    def totals(self) -> dict[str, int]:
        totals = dict.fromkeys(JUNIT_COUNTS, 0)
        for _offset, _size, counts in self.where.values():
            add_counts(totals, counts)
        return totals

    def suites(self) -> Iterator[bytes]:
        """Each host's testsuite, in order of host."""
        self.file.flush()
        for host in sorted(self.where):
            offset, size, _counts = self.where[host]
            self.file.seek(offset)
            yield self.file.read(size)

    def close(self) -> None:
        self.file.close()


@dataclass
class Digest:
    """What the pass kept besides the view records: each host's row, results.json's hosts and value table, the
    junit.xml testsuites (these two when asked for), and the formats the pass could not make, with why."""

    rows: dict[str, View] = field(default_factory=dict)
    compact: dict[str, ReportHost] = field(default_factory=dict)
    table: ValueTable = field(default_factory=ValueTable)
    spool: SuiteSpool | None = None
    failed: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()


def digest_run(results: dict[str, Any], formats: Sequence[str], out: str) -> Digest:
    """Read each host record of ``results["path"]`` once (model.py ``load_run``'s results) and keep what the report
    shows of it (the module docstring): ``results["hosts"]`` gets the view records; results.json's entries when
    ``formats`` has ``json``, junit.xml's testsuites (spooled in ``out``) when it has ``junit``. A format the pass
    cannot make is named in ``failed`` with why, and the pass goes on without it: one file never costs the others."""
    digest = Digest()
    results["hosts"] = {}
    wanted = [name for name in ("json", "junit") if name in formats]
    if "junit" in wanted:
        try:
            digest.spool = SuiteSpool(out)
        except OSError as exc:
            digest.failed["junit"] = error_words(exc)
    run_dir = RunDir.open(results["path"])
    for stored in run_dir.each_host_record(run_dir.host_files(), without=("raw", "health_after")):
        # read as plain data: a record on disk may have any shape, and the report shows what it holds
        record = cast(Record, stored)
        host = record["host"]
        digest.rows[host] = node_row(0, record)
        for name in wanted:
            if name not in digest.failed:
                _keep(name, digest, host, record, results)
        results["hosts"][host] = view_record(record)
    return digest


def _keep(name: str, digest: Digest, host: str, record: Record, results: dict[str, Any]) -> None:
    """Keep the host's part of results.json (``json``) or junit.xml (``junit``); when it cannot be made, the format
    is failed and what it kept let go."""
    try:
        if name == "json":
            digest.compact[host] = compact_host(host, record, digest.table)
        elif digest.spool is not None:
            digest.spool.add(host, *host_suite(host, record, results))
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the other files are still written
        digest.failed[name] = error_words(exc)
        if name == "json":
            digest.compact = {}
        else:
            digest.close()
            digest.spool = None
