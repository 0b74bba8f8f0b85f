# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.health_history: append a run's per-GPU summaries to the SQLite history; flag drift.

Runs once, on the controller. Reads the burn-in records of the run's hosts from the results
directory (written by burn_in_record), appends one row per (run, host, GPU) to the history store
(gpufleet/history/store.py), computes the drift flags of this run against the runs
before it, and writes ``history.json`` into the run directory: each GPU's trend and the flags,
which the burn_in check family (fleet_verdict) and the report read. docs/burn-in.md.
"""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from gpufleet.history.store import (
    DEFAULT_CLOCK_DROP_SHARE,
    DEFAULT_MAX_POINTS,
    DEFAULT_MIN_PREVIOUS,
    DEFAULT_TIMEOUT_S,
    HistoryError,
    HistoryStore,
    history_document,
    rows_from_record,
)
from gpufleet.results.burn_in import HISTORY_FILE, HISTORY_SCHEMA, records_of
from gpufleet.results.store import ResultsError, RunDir, to_plain, write_json_atomic


def append_run(run, db, hosts=None, run_id=None, record_name=None, clock_drop_share=DEFAULT_CLOCK_DROP_SHARE, min_previous=DEFAULT_MIN_PREVIOUS,
               max_points=DEFAULT_MAX_POINTS, timeout=DEFAULT_TIMEOUT_S, write_history=True):
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


class ActionModule(ActionBase):
    """Append the run to the history store and return the drift flags."""

    TRANSFERS_FILES = False
    BYPASS_HOST_LOOP = False
    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("db", "run_dir", "run_id", "hosts", "record_name", "clock_drop_share", "min_previous_runs", "max_points", "timeout",
                             "write_history"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        for key in ("db", "run_dir"):
            if not args.get(key) or not isinstance(args[key], str):
                return dict(result, failed=True, msg="%s is required: %s" % (
                    key, "the SQLite history file on the controller" if key == "db" else "the results directory of this run"))
        try:
            share = float(args.get("clock_drop_share", DEFAULT_CLOCK_DROP_SHARE))
            minimum = int(args.get("min_previous_runs", DEFAULT_MIN_PREVIOUS))
            points = int(args.get("max_points", DEFAULT_MAX_POINTS))
            timeout = float(args.get("timeout", DEFAULT_TIMEOUT_S))
        except (TypeError, ValueError) as exc:
            return dict(result, failed=True, msg="clock_drop_share, min_previous_runs, max_points and timeout must be numbers: %s" % exc)
        if not 0 <= share < 1 or minimum < 1 or points < 1 or timeout <= 0:
            return dict(result, failed=True, msg="clock_drop_share must be in [0, 1), min_previous_runs and max_points >= 1, timeout > 0")
        hosts = args.get("hosts")
        if hosts is not None and not isinstance(hosts, list):
            return dict(result, failed=True, msg="hosts must be a list of inventory names")
        try:
            outcome = append_run(RunDir.open(args["run_dir"]), args["db"], hosts=hosts, run_id=args.get("run_id"), record_name=args.get("record_name"),
                                 clock_drop_share=share, min_previous=minimum, max_points=points, timeout=timeout,
                                 write_history=bool(args.get("write_history", True)))
        except (HistoryError, ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="health history %s: %s" % (args["db"], exc))
        by_host = {}
        for flag in outcome["flags"]:
            by_host.setdefault(flag["host"], []).append(flag)
        result.update(
            changed=outcome["rows"] > 0,
            run_id=outcome["run_id"],
            db=outcome["db"],
            rows=outcome["rows"],
            hosts=outcome["hosts"],
            flags=outcome["flags"],
            flags_by_host=by_host,
            history_file=outcome["history_file"],
            msg="history %s: run %s, %d row(s) from %d host(s); %s" % (
                outcome["db"], outcome["run_id"], outcome["rows"], len(outcome["hosts"]),
                "%d drift flag(s): %s" % (len(outcome["flags"]), "; ".join(flag["message"] for flag in outcome["flags"][:4])) if outcome["flags"]
                else "no drift"),
        )
        return result
