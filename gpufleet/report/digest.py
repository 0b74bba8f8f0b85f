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

A large run is read in shares (:func:`shares_of`): runs of files in a row, the first read by this process and each
other by a forked copy of it (beside.py), which sends what it kept a run of records at a time (_Readers); the shares
are taken in in the files' order, their values numbered into the one table as a single reader would have numbered them
(Digest.compacted, where results.json is written).
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator, Sequence, cast

from gpufleet.report.beside import Beside, BesideError, Frames, can_fork, pack, unpack, usable_cpus
from gpufleet.report.common import Record, View, error_words
from gpufleet.report.gpu_view import GPU_COLUMNS
from gpufleet.report.junit import JUNIT_COUNTS, add_counts, host_suite
from gpufleet.report.nodes import node_row
from gpufleet.report.throughput import FLEET_RULE_PREFIX
from gpufleet.results.compact import ValueTable, compact_host, remap_host
from gpufleet.results.shapes import ReportHost
from gpufleet.results.store import RunDir

# What the fleet-wide views read of a record's facts (model.py lists the views): the GPU table its GPUs' columns and
# the driver (gpu_view.py); the cost to train the model, count, memory and PCIe generation of the GPUs and the
# topology's summary (offers.py); the topology matrices the names, links and summary (topology_view.py).
VIEW_GPU_FIELDS = frozenset(name for name, _label in GPU_COLUMNS) | {"memory_total_mib", "pcie_link_gen_max"}
VIEW_GPU_GROUP = ("gpus", "driver_version", "gpu_count")
VIEW_TOPOLOGY = ("names", "links", "summary")
# the parts of a record cut down for the views (the node's row and the files written in the pass hold them whole)
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
    """The junit.xml testsuites of the pass, in unnamed files of the output directory (one per share of the records),
    read back in order of host when junit.xml is written (a 10,000-node fleet's are 170 MB). A host read twice (two
    files name it) keeps its last testsuite, as a run's records keep the last file's record."""

    def __init__(self, directory: str, parts: int = 1) -> None:
        self.files: list[IO[bytes]] = []
        try:
            for _part in range(parts):
                self.files.append(tempfile.TemporaryFile(prefix=".junit-", dir=directory))
        except OSError:
            self.close()
            raise
        # host -> (file, offset, size, counts)
        self.where: dict[str, tuple[int, int, int, dict[str, int]]] = {}

    def add(self, part: int, host: str, suite: bytes, counts: dict[str, int], where: dict[str, Any]) -> None:
        """Write ``suite`` at the end of file ``part``, and note where in ``where`` (this spool's, or a share's)."""
        stream = self.files[part]
        stream.seek(0, os.SEEK_END)
        where[host] = (part, stream.tell(), len(suite), counts)
        stream.write(suite)

    def totals(self) -> dict[str, int]:
        totals = dict.fromkeys(JUNIT_COUNTS, 0)
        for _part, _offset, _size, counts in self.where.values():
            add_counts(totals, counts)
        return totals

    def suites(self) -> Iterator[bytes]:
        """Each host's testsuite, in order of host."""
        for stream in self.files:
            stream.flush()
        for host in sorted(self.where):
            part, offset, size, _counts = self.where[host]
            self.files[part].seek(offset)
            yield self.files[part].read(size)

    def close(self) -> None:
        for stream in self.files:
            stream.close()


# results.json's part of a share: its hosts' entries and the values they index, as made (``(compact, values)``) or
# packed as they came from a copy (beside.py ``pack``)
CompactPart = Any


@dataclass
class Digest:
    """What the pass kept besides the view records: each host's row, results.json's hosts and value table
    (:meth:`compacted`), the junit.xml testsuites (these two when asked for), and the formats the pass could not make,
    with why."""

    rows: dict[str, View] = field(default_factory=dict)
    spool: SuiteSpool | None = None
    failed: dict[str, str] = field(default_factory=dict)
    # each share's part of results.json, in the files' order, taken in by compacted() (only results.json reads it)
    parts: list[CompactPart] = field(default_factory=list)
    compact: dict[str, ReportHost] = field(default_factory=dict)
    table: ValueTable = field(default_factory=ValueTable)

    def compacted(self) -> tuple[dict[str, ReportHost], list[Any]]:
        """results.json's hosts and values: each share's values numbered into the one table in the files' order (each
        value once, in the order first met, as one reader would have), its entries' indexes made the table's. Done
        where results.json is written (report/writers.py: a copy, while the model is built here)."""
        while self.parts:
            part = self.parts.pop(0)
            compact, values = unpack(part) if isinstance(part, bytes) else part
            mapping = [self.table.ref(value) for value in values]
            same = all(index == place for place, index in enumerate(mapping))
            for host, entry in compact.items():
                self.compact[host] = entry if same else remap_host(entry, mapping)
        return self.compact, self.table.values

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None


@dataclass
class Share:
    """What one reader kept of its share of the host files: as :class:`Digest`, with its own value table (``values``)
    and where its testsuites are (``suites``)."""

    rows: dict[str, View] = field(default_factory=dict)
    views: dict[str, Record] = field(default_factory=dict)
    compact: dict[str, ReportHost] = field(default_factory=dict)
    values: list[Any] = field(default_factory=list)
    suites: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    # ``compact`` and ``values`` packed (beside.py ``pack``) by a copy: unpacked only where results.json is written
    packed: bytes | None = None


# Past this many host records the pass is shared among copies of this process (beside.py), a share each, the first
# read here: at 10,000 nodes reading the records is half the report's time. Below it one process reads them all.
SHARED_PASS_NODES = 1000
MAX_SHARES = 8
# how much more the first share holds than each other. At 10,000 nodes a copy read a record in 1.07 ms with packing its
# rows, this process in 1.0 ms with unpacking them, and the copy's part of results.json took 0.2 s more at its end:
# 1.1 evens them
FIRST_SHARE_WEIGHT = 1.1
# a copy sends the rows and views of each run of this many records as it goes
FRAME_RECORDS = 250


def shares_of(files: list[str], processes: int) -> list[list[str]]:
    """``files`` cut in up to ``processes`` runs of files in a row (the value table's order is the files' order), as
    many as leave each about SHARED_PASS_NODES // 2 files; one share below SHARED_PASS_NODES files or for one process.
    The first, read here, is FIRST_SHARE_WEIGHT times each other: a copy also sends what it kept, and is waited for."""
    count = min(processes, MAX_SHARES, max(1, len(files) // max(1, SHARED_PASS_NODES // 2)))
    if len(files) < SHARED_PASS_NODES or count < 2:
        return [files]
    first = round(len(files) * FIRST_SHARE_WEIGHT / (FIRST_SHARE_WEIGHT + count - 1))
    size = -(-(len(files) - first) // (count - 1))
    return [files[:first]] + [files[start:start + size] for start in range(first, len(files), size)]


def digest_run(results: dict[str, Any], formats: Sequence[str], out: str) -> Digest:
    """Read each host record of ``results["path"]`` once (model.py ``load_run``'s results) and keep what the report
    shows of it (the module docstring): ``results["hosts"]`` gets the view records; results.json's entries when
    ``formats`` has ``json``, junit.xml's testsuites (spooled in ``out``) when it has ``junit``. A format the pass
    cannot make is named in ``failed`` with why, and the pass goes on without it: one file never costs the others.
    A large run is read in shares by copies of this process (:func:`shares_of`); a copy that fails has its share read
    here again."""
    run_dir = RunDir.open(results["path"])
    shares = shares_of(run_dir.host_files(), usable_cpus() if can_fork() else 1)
    digest = Digest()
    wanted = [name for name in ("json", "junit") if name in formats]
    if "junit" in wanted:
        try:
            digest.spool = SuiteSpool(out, len(shares))
        except OSError as exc:
            digest.failed["junit"] = error_words(exc)
            wanted.remove("junit")
    results["hosts"] = {}
    readers = _Readers(_Reader(results, run_dir, wanted, digest.spool), shares, out)
    try:
        for share in readers.shares():
            _merge(digest, results, share)
    except BaseException:
        digest.close()
        raise
    finally:
        readers.close()
    return digest


class _Readers:
    """The shares of the files read: the first here, each other by a copy of this process, which sends its rows and
    views a run of FRAME_RECORDS records at a time (beside.py Frames), taken in here between this process's own
    records: once this process has read its share, a copy's is mostly in."""

    def __init__(self, reader: _Reader, shares: list[list[str]], out: str) -> None:
        self.reader, self.files = reader, shares
        self.frames: list[Frames] = []
        self.copies: list[Beside | None] = []
        try:
            self.frames = [Frames(out) for _copy in shares[1:]]
        except OSError:  # no file for them (a full disk): the shares are read here, one after another
            self.close()
            self.frames = []
            shares = shares[:1]
        try:
            for part in range(1, len(shares)):
                work = functools.partial(reader.read_sent, part, shares[part], self.frames[part - 1])
                self.copies.append(Beside(work))
        except BaseException:
            self.close()
            raise
        self.runs: list[list[Any]] = [[] for _copy in self.copies]

    def shares(self) -> Iterator[Share]:
        """Each share, in the files' order."""
        yield self.reader.read(0, self.files[0], self._take)
        for part in range(1, len(self.files)):
            if part > len(self.copies):  # no copy reads it
                yield self.reader.read(part, self.files[part])
                continue
            try:
                answer = cast(Beside, self.copies[part - 1]).result()
            except BesideError:  # read here again: a copy's end never costs the report
                answer = None
            self.copies[part - 1] = None  # waited for
            if answer is None:
                yield self.reader.read(part, self.files[part])
                continue
            share = Share(**answer)
            for run in self.runs[part - 1] + list(self.frames[part - 1].ready()):
                share.rows.update(run["rows"])
                share.views.update(run["views"])
            yield share

    def close(self) -> None:
        for copy in self.copies:
            if copy is not None:
                copy.stop()
        for frames in self.frames:
            frames.close()

    def _take(self, _share: Share) -> None:
        for part, frames in enumerate(self.frames):
            self.runs[part].extend(frames.ready())


class _Reader:
    """Reads a share of the host files (here or in a copy of this process) into a :class:`Share`."""

    def __init__(self, results: dict[str, Any], run_dir: RunDir, wanted: list[str], spool: SuiteSpool | None) -> None:
        self.results, self.run_dir, self.wanted, self.spool = results, run_dir, wanted, spool

    def read(self, part: int, files: list[str], each_run: Callable[[Share], None] | None = None) -> Share:
        """The share of ``files``; ``each_run(share)`` after each FRAME_RECORDS records."""
        share = Share()
        table = ValueTable()
        records = self.run_dir.each_host_record(files, without=("raw", "health_after"))
        for count, stored in enumerate(records, start=1):
            # read as plain data: a record on disk may have any shape, and the report shows what it holds
            record = cast(Record, stored)
            host = record["host"]
            share.rows[host] = node_row(0, record)
            for name in self.wanted:
                if name not in share.failed:
                    self._keep(name, share, table, part, host, record)
            share.views[host] = view_record(record)
            if each_run is not None and count % FRAME_RECORDS == 0:
                each_run(share)
        share.values = table.values
        if self.spool is not None:
            self.spool.files[part].flush()  # a copy ends with os._exit: nothing left in its buffer
        return share

    def read_sent(self, part: int, files: list[str], frames: Frames) -> dict[str, Any]:
        """In a copy: :meth:`read`, the rows and views sent in ``frames`` a run at a time; the rest of the share
        returned as plain data (its fields by name), its part of results.json packed, for whichever process writes
        that file to unpack."""
        share = self.read(part, files, functools.partial(_send_run, frames))
        _send_run(frames, share)
        share.packed = pack((share.compact, share.values))
        share.compact, share.values = {}, []
        return vars(share)

    def _keep(self, name: str, share: Share, table: ValueTable, part: int, host: str, record: Record) -> None:
        """Keep the host's part of results.json (``json``) or junit.xml (``junit``); when it cannot be made, the
        format is failed and what it kept let go."""
        try:
            if name == "json":
                share.compact[host] = compact_host(host, record, table)
            elif self.spool is not None:
                self.spool.add(part, host, *host_suite(host, record, self.results), where=share.suites)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the other files are still written
            share.failed[name] = error_words(exc)
            if name == "json":
                share.compact = {}
            else:
                share.suites = {}


def _send_run(frames: Frames, share: Share) -> None:
    """The rows and views read since the last run, sent."""
    frames.send({"rows": share.rows, "views": share.views})
    share.rows, share.views = {}, {}


def _merge(digest: Digest, results: dict[str, Any], share: Share) -> None:
    """Add a share to the digest, in the files' order (its part of results.json is taken in by Digest.compacted)."""
    digest.rows.update(share.rows)
    results["hosts"].update(share.views)
    for name, why in share.failed.items():
        digest.failed.setdefault(name, why)
    digest.parts.append(share.packed if share.packed is not None else (share.compact, share.values))
    if digest.spool is not None:
        digest.spool.where.update(share.suites)
    if "json" in digest.failed:
        digest.parts = []
    if "junit" in digest.failed:
        digest.close()
