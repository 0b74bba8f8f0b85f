# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health history store: one SQLite file on the controller, one row per (run, host, GPU).

Each health check (or burn-in) appends its per-GPU summaries (gpufleet/facts/nvml_samples.py ``summarise``):
temperature mean/min/max/p95, SM clock median, power mean and every error counter's value at the
end of the run. The store answers each GPU's series over runs and flags drift::

    store = HistoryStore("/var/lib/gpufleet/health.sqlite")
    store.append_run("20260131T120000Z", "2026-01-31T12:00:00Z", rows)
    store.series(host="node-a")                 # {(host, uuid): [row, ...] oldest first}
    store.drift("20260131T120000Z")             # [flag, ...]

:func:`append_run` does all of it for a results directory (the action ``health_history``): the
run's burn-in records become rows, the drift flags are computed and ``history.json`` is written.

Schema ``SCHEMA_VERSION`` is kept in the ``meta`` table; a store written by a newer gpufleet is
refused, never half-read. Writers take the database's write lock at the start of their
transaction (``BEGIN IMMEDIATE``) and wait up to ``timeout`` seconds for another writer
(``busy_timeout``); the journal is WAL, so readers never block the writer. Two health runs
appending at once therefore serialise, and each run's rows land whole or not at all.

Drift (:meth:`HistoryStore.drift`), between runs of the same kind (a burn-in's clocks under load
are not comparable with a health check's idle ones):

- ``sm_clock``: the run's SM clock median more than ``clock_drop_share`` (default 0.05) below the
  median of the GPU's previous runs' medians -> warn. The median of the previous runs, not the
  first run: one odd run (a hot day, a different load) then neither hides nor fakes a drift. 5%:
  the same card under the same load holds its median SM clock within a few percent from run to
  run (boost clocks move with temperature and power); a steady fall past 5% is a card, a fan or a
  power supply getting worse.
- ``ecc`` / ``nvlink``: a counter's value at the end of the run against its value at the end of the
  previous run. ECC is read from the aggregate (persistent) counters when known, else the
  volatile ones; growth of uncorrected errors -> fail, of corrected ones -> warn; NVLink counter
  growth -> warn. A value lower than before is a reset (driver reload between runs): the counter
  grew by its new value, never negatively. (A reload can still hide errors when the new count
  happens to reach the old one: volatile and NVLink counters have no persistent twin.)
"""

from __future__ import annotations

import datetime
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, TypedDict

from gpufleet.facts.nvml_samples import median
from gpufleet.results.burn_in import HISTORY_FILE, HISTORY_SCHEMA, records_of
from gpufleet.results.store import RunDir, write_json_atomic

# One row of the store: a dict of ROW_COLUMNS (and, as series() reads it, the run's ``started``)
Row = dict[str, Any]
# What a write transaction's work returns (HistoryStore._write)
Outcome = TypeVar("Outcome")

SCHEMA_VERSION = 1
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CLOCK_DROP_SHARE = 0.05
DEFAULT_MIN_PREVIOUS = 1
KIND_WORDS = {"burn_in": "burn-in", "health_check": "health check"}

SUMMARY_COLUMNS = (
    ("samples", "INTEGER"),
    ("lost", "INTEGER"),
    ("temp_mean_c", "REAL"),
    ("temp_min_c", "REAL"),
    ("temp_max_c", "REAL"),
    ("temp_p95_c", "REAL"),
    ("sm_clock_median_mhz", "REAL"),
    ("power_mean_w", "REAL"),
)
COUNTER_COLUMNS = (
    ("ecc_volatile_corrected", "ecc.volatile_corrected"),
    ("ecc_volatile_uncorrected", "ecc.volatile_uncorrected"),
    ("ecc_aggregate_corrected", "ecc.aggregate_corrected"),
    ("ecc_aggregate_uncorrected", "ecc.aggregate_uncorrected"),
    ("nvlink_replay", "nvlink.replay"),
    ("nvlink_recovery", "nvlink.recovery"),
    ("nvlink_crc_flit", "nvlink.crc_flit"),
    ("nvlink_crc_data", "nvlink.crc_data"),
)
ROW_COLUMNS = ("run_id", "host", "uuid", "gpu_index", "name", "kind", "load_tool") + tuple(name for name, _type in SUMMARY_COLUMNS) + tuple(
    name for name, _key in COUNTER_COLUMNS)

_SCHEMA_V1 = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, started TEXT NOT NULL, recorded TEXT NOT NULL, source TEXT)",
    "CREATE TABLE IF NOT EXISTS gpu_runs (run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL, uuid TEXT NOT NULL, "
    "gpu_index INTEGER, name TEXT, kind TEXT NOT NULL, load_tool TEXT, %s, %s, PRIMARY KEY (run_id, host, uuid))" % (
        ", ".join("%s %s" % column for column in SUMMARY_COLUMNS), ", ".join("%s INTEGER" % name for name, _key in COUNTER_COLUMNS)),
    "CREATE INDEX IF NOT EXISTS gpu_runs_by_gpu ON gpu_runs (host, uuid)",
)


class HistoryError(Exception):
    """A history store that cannot be opened or written; the message names the file."""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_key(summary: Mapping[str, Any]) -> str:
    """The GPU's identity in the store: its UUID, else ``index:<n>`` (a sampler that could not read the UUID)."""
    return summary.get("uuid") or "index:%s" % summary.get("index")


def rows_from_record(host: str, record: Mapping[str, Any]) -> list[Row]:
    """Store rows (dicts of ROW_COLUMNS less run_id) of one burn-in record's per-GPU summaries."""
    load = record["load"] if isinstance(record.get("load"), dict) else {}
    rows = []
    for summary in record.get("gpus") or []:
        if not isinstance(summary, dict):
            continue
        row = {"host": str(host), "uuid": gpu_key(summary), "gpu_index": summary.get("index"), "name": summary.get("name"),
               "kind": record.get("kind") or "health_check", "load_tool": load.get("tool")}
        for name, _type in SUMMARY_COLUMNS:
            value: Any = summary.get(name)
            row[name] = int(value) if name == "lost" else value
        counters = summary.get("counters_end") or {}
        for name, key in COUNTER_COLUMNS:
            row[name] = counters.get(key)
        rows.append(row)
    return rows


class HistoryStore:
    """The SQLite history at ``path`` (created with its parent directory when missing)."""

    def __init__(self, path: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = os.path.abspath(path)
        self.timeout = float(timeout)
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise HistoryError("%s: cannot create its directory: %s" % (self.path, exc.strerror or exc)) from None
        self._migrate()

    def connect(self) -> sqlite3.Connection:
        """A connection in autocommit mode (transactions are explicit), WAL, busy timeout, foreign keys on."""
        try:
            connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA busy_timeout = %d" % int(self.timeout * 1000))
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise HistoryError("%s: cannot open: %s" % (self.path, exc)) from None
        return connection

    def _write(self, work: Callable[[sqlite3.Connection], Outcome]) -> Outcome:
        """Run ``work(connection)`` in one write transaction (BEGIN IMMEDIATE .. COMMIT, rolled back on error)."""
        connection = self.connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                outcome = work(connection)
                connection.execute("COMMIT")
                return outcome
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise HistoryError("%s: %s" % (self.path, exc)) from None
        finally:
            connection.close()

    def _migrate(self) -> None:
        def work(connection: sqlite3.Connection) -> None:
            connection.execute(_SCHEMA_V1[0])
            found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if found is not None and int(found["value"]) > SCHEMA_VERSION:
                raise HistoryError("%s: history schema version %s, this gpufleet reads up to %d" % (self.path, found["value"], SCHEMA_VERSION))
            for statement in _SCHEMA_V1[1:]:
                connection.execute(statement)
            if found is None:
                connection.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

        self._write(work)

    def schema_version(self) -> int:
        """The schema version the store's ``meta`` table names."""
        connection = self.connect()
        try:
            return int(connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()["value"])
        finally:
            connection.close()

    def append_run(self, run_id: object, started: object, rows: Iterable[Row], source: str | None = None) -> int:
        """Add (or replace: a rerun of the same run) the rows of run ``run_id``; returns how many were written.

        Rows of a host present in ``rows`` replace that host's rows of this run; other hosts' rows of
        the same run are kept (hosts recorded by separate calls).
        """
        run_id = str(run_id)
        rows = list(rows)

        def work(connection: sqlite3.Connection) -> int:
            connection.execute("INSERT INTO runs (run_id, started, recorded, source) VALUES (?, ?, ?, ?) "
                               "ON CONFLICT(run_id) DO UPDATE SET started = excluded.started, recorded = excluded.recorded, source = excluded.source",
                               (run_id, str(started), _now(), source))
            for host in sorted({row["host"] for row in rows}):
                connection.execute("DELETE FROM gpu_runs WHERE run_id = ? AND host = ?", (run_id, host))
            statement = "INSERT OR REPLACE INTO gpu_runs (%s) VALUES (%s)" % (", ".join(ROW_COLUMNS), ", ".join("?" * len(ROW_COLUMNS)))
            for row in rows:
                connection.execute(statement, tuple(run_id if column == "run_id" else row.get(column) for column in ROW_COLUMNS))
            return len(rows)

        return self._write(work)

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first: ``[{run_id, started, recorded, source}]``."""
        connection = self.connect()
        try:
            return [dict(row) for row in connection.execute("SELECT * FROM runs ORDER BY started, run_id")]
        finally:
            connection.close()

    def series(self, host: str | None = None, uuid: str | None = None, kind: str | None = None,
               hosts: list[str] | None = None, until_run: str | None = None) -> dict[tuple[str, str], list[Row]]:
        """``{(host, uuid): [row, ...]}``, each GPU's rows oldest first (by the run's start, then id).

        Filters: ``host`` (or a list ``hosts``), ``uuid``, ``kind``; ``until_run``: rows of runs up to
        and including that run only.
        """
        where: list[str] = []
        params: list[Any] = []
        if host is not None:
            where.append("g.host = ?")
            params.append(host)
        if hosts is not None:
            where.append("g.host IN (%s)" % ", ".join("?" * len(hosts)) if hosts else "0")
            params.extend(hosts)
        if uuid is not None:
            where.append("g.uuid = ?")
            params.append(uuid)
        if kind is not None:
            where.append("g.kind = ?")
            params.append(kind)
        if until_run is not None:
            where.append("(r.started, r.run_id) <= (SELECT started, run_id FROM runs WHERE run_id = ?)")
            params.append(until_run)
        query = "SELECT g.*, r.started FROM gpu_runs g JOIN runs r ON r.run_id = g.run_id%s ORDER BY g.host, g.uuid, r.started, r.run_id" % (
            " WHERE " + " AND ".join(where) if where else "")
        connection = self.connect()
        try:
            out: dict[tuple[str, str], list[Row]] = {}
            for row in connection.execute(query, params):
                item = dict(row)
                out.setdefault((item["host"], item["uuid"]), []).append(item)
            return out
        finally:
            connection.close()

    def drift(self, run_id: str, hosts: list[str] | None = None, clock_drop_share: float = DEFAULT_CLOCK_DROP_SHARE,
              min_previous: int = DEFAULT_MIN_PREVIOUS) -> list[DriftFlag]:
        """Drift flags of run ``run_id`` against the runs before it (module docstring)."""
        flags: list[DriftFlag] = []
        for _gpu, rows in sorted(self.series(hosts=hosts, until_run=run_id).items()):
            current = next((row for row in rows if row["run_id"] == run_id), None)
            if current is None:
                continue
            previous = [row for row in rows if row["run_id"] != run_id and row["kind"] == current["kind"]]
            flags.extend(drift_flags(current, previous, clock_drop_share, min_previous))
        return flags


class DriftFlag(TypedDict):
    """One drift flag (``flags`` of history.json; checks/burn_in.py drift_results judges it)."""

    host: str
    uuid: str
    gpu: Any
    name: Any
    run_id: str
    check: str  # burn_in.drift
    status: str  # warn or fail
    metric: str  # sm_clock, or the counter's column
    message: str
    measured: Any
    expected: Any
    source: str


def _flag(current: Row, status: str, metric: str, message: str, measured: Any, expected: Any,
          source: str) -> DriftFlag:
    return {"host": current["host"], "uuid": current["uuid"], "gpu": current["gpu_index"], "name": current["name"],
            "run_id": current["run_id"], "check": "burn_in.drift", "status": status, "metric": metric,
            "message": message, "measured": measured, "expected": expected, "source": source}


def _num(value: object) -> str:
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".")
    return str(value)


def _growth(before: int, after: int) -> int:
    """Growth of a counter from ``before`` to ``after``; a lower value is a reset (grew by ``after``)."""
    return after if after < before else after - before


def _who(current: Row) -> str:
    return "GPU %s (%s)" % (current["gpu_index"], current["uuid"])


def _clock_flags(current: Row, previous: list[Row], clock_drop_share: float, min_previous: int) -> list[DriftFlag]:
    """The SM clock median more than ``clock_drop_share`` below the median of the previous runs' medians: warn."""
    clocks = [row["sm_clock_median_mhz"] for row in previous if row["sm_clock_median_mhz"] is not None]
    now = current["sm_clock_median_mhz"]
    if now is None or len(clocks) < max(1, min_previous):
        return []
    reference = median(clocks)
    if not (reference and now < (1.0 - clock_drop_share) * reference):
        return []
    message = "%s: SM clock median %s MHz in this %s, %s%% below the median %s MHz of its %d previous run(s)" % (
        _who(current), _num(now), KIND_WORDS.get(current["kind"], current["kind"]),
        _num(round((1 - now / reference) * 100, 1)), _num(reference), len(clocks))
    source = "history drift: SM clock more than %s%% below the median of previous runs (clock_drop_share %s)" % (
        _num(clock_drop_share * 100), _num(clock_drop_share))
    return [_flag(current, "warn", "sm_clock", message, now, round((1.0 - clock_drop_share) * reference, 3), source)]


def _before(previous: list[Row], column: str) -> Any:
    """The counter's last known value before this run (None when no previous run knew it)."""
    return next((row[column] for row in reversed(previous) if row[column] is not None), None)


def _ecc_flags(current: Row, previous: list[Row]) -> list[DriftFlag]:
    """ECC errors grown since the previous run: uncorrected fail, corrected warn; the aggregate (persistent) counter
    when both runs know it, else the volatile one."""
    flags = []
    for words, aggregate, volatile, status in (
            ("uncorrected", "ecc_aggregate_uncorrected", "ecc_volatile_uncorrected", "fail"),
            ("corrected", "ecc_aggregate_corrected", "ecc_volatile_corrected", "warn")):
        for column in (aggregate, volatile):
            before = _before(previous, column)
            if before is None or current[column] is None:
                continue
            grown = _growth(before, current[column])
            if grown > 0:
                message = "%s: %d %s ECC error(s) since the previous run (%s %s -> %s)" % (
                    _who(current), grown, words, column, before, current[column])
                source = "history drift: any %s ECC error between runs %s" % (
                    words, "fails" if status == "fail" else "warns")
                flags.append(_flag(current, status, column, message, grown, 0, source))
            break
    return flags


def _nvlink_flags(current: Row, previous: list[Row]) -> list[DriftFlag]:
    """NVLink error counters grown since the previous run: warn."""
    flags = []
    for column, _key in COUNTER_COLUMNS[4:]:
        before = _before(previous, column)
        if before is None or current[column] is None:
            continue
        grown = _growth(before, current[column])
        if grown > 0:
            message = "%s: %s grew by %d since the previous run (%s -> %s)" % (
                _who(current), column.replace("_", " ").replace("nvlink", "NVLink"), grown, before, current[column])
            flags.append(_flag(current, "warn", column, message, grown, 0,
                               "history drift: NVLink error counters growing between runs warn"))
    return flags


def drift_flags(current: Row, previous: list[Row], clock_drop_share: float = DEFAULT_CLOCK_DROP_SHARE,
                min_previous: int = DEFAULT_MIN_PREVIOUS) -> list[DriftFlag]:
    """Drift of one GPU's row ``current`` against its ``previous`` rows (same kind, oldest first)."""
    flags = _clock_flags(current, previous, clock_drop_share, min_previous)
    if not previous:
        return flags
    return flags + _ecc_flags(current, previous) + _nvlink_flags(current, previous)


POINT_FIELDS = ("kind", "load_tool", "samples", "lost", "temp_mean_c", "temp_min_c", "temp_max_c", "temp_p95_c", "sm_clock_median_mhz",
                "power_mean_w") + tuple(name for name, _key in COUNTER_COLUMNS)
DEFAULT_MAX_POINTS = 104


def history_document(store: HistoryStore, run_id: str, hosts: list[str] | None = None,
                     flags: Iterable[DriftFlag] = (), max_points: int = DEFAULT_MAX_POINTS,
                     schema: str = "gpufleet.health-history/v1") -> dict[str, Any]:
    """The trends of ``hosts`` up to run ``run_id`` as one JSON document (``history.json`` of the run directory).

    Per host, per GPU of this run: its last ``max_points`` runs of the same kind as this run's
    (``{"uuid", "index", "name", "points": [{run_id, started, kind, temp_p95_c, ...}]}``), and the drift ``flags``.
    """
    per_host: dict[str, list[dict[str, Any]]] = {}
    run_ids: set[str] = set()
    for (host, uuid), rows in sorted(store.series(hosts=hosts, until_run=run_id).items()):
        current = next((row for row in rows if row["run_id"] == run_id), None)
        if current is None:
            continue
        rows = [row for row in rows if row["kind"] == current["kind"]][-max_points:]
        run_ids.update(row["run_id"] for row in rows)
        per_host.setdefault(host, []).append({
            "uuid": uuid, "index": current["gpu_index"], "name": current["name"],
            "points": [dict({"run_id": row["run_id"], "started": row["started"]}, **{field: row[field] for field in POINT_FIELDS}) for row in rows],
        })
    return {"schema": schema, "db": store.path, "run_id": run_id, "generated": _now(), "runs": len(run_ids), "series": per_host, "flags": list(flags)}


def append_run(run: RunDir, db: str, hosts: Iterable[object] | None = None, run_id: object = None,
               record_name: str | None = None, clock_drop_share: float = DEFAULT_CLOCK_DROP_SHARE,
               min_previous: int = DEFAULT_MIN_PREVIOUS, max_points: int = DEFAULT_MAX_POINTS,
               timeout: float = DEFAULT_TIMEOUT_S, write_history: bool = True) -> dict[str, Any]:
    """Append ``run`` (a RunDir) to the store at ``db``; return ``{run_id, rows, hosts, flags, history_file}``.

    Per host, the burn-in record named ``record_name`` (default: the host's last record) gives its rows.
    """
    run_record = run.read_run()
    run_id = str(run_id or run_record.get("run_id"))
    records = run.host_records()
    chosen = sorted(records) if hosts is None else [str(host) for host in hosts]
    rows, used = [], []
    for host in chosen:
        entries = records_of(records.get(host))
        if record_name is not None:
            entries = [entry for entry in entries if entry.get("name") == record_name]
        if not entries:
            continue
        host_rows = rows_from_record(host, entries[-1])
        if host_rows:
            rows.extend(host_rows)
            used.append(host)
    store = HistoryStore(db, timeout=timeout)
    store.append_run(run_id, run_record.get("started") or "", rows, source=run.path)
    flags = store.drift(run_id, hosts=used, clock_drop_share=clock_drop_share, min_previous=min_previous)
    history_file = None
    if write_history:
        document = history_document(store, run_id, hosts=used, flags=flags, max_points=max_points, schema=HISTORY_SCHEMA)
        history_file = os.path.join(run.path, HISTORY_FILE)
        write_json_atomic(history_file, document)
    return {"run_id": run_id, "rows": len(rows), "hosts": used, "flags": flags, "history_file": history_file, "db": store.path}
