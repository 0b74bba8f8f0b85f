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

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.history.store import (
    HistoryError,
    append_run,
)
from gpufleet.results.store import ResultsError, RunDir


class ActionModule(LibraryAction):
    """Append the run to the history store and return the drift flags."""

    ARGUMENT_SPEC = documented_spec(__file__)

    BYPASS_HOST_LOOP = False

    def act(self, args, task_vars, result):
        share, minimum = args["clock_drop_share"], args["min_previous_runs"]
        points, timeout = args["max_points"], args["timeout"]
        if not 0 <= share < 1 or minimum < 1 or points < 1 or timeout <= 0:
            return dict(result, failed=True,
                        msg="clock_drop_share must be in [0, 1), min_previous_runs and max_points >= 1, timeout > 0")
        hosts = args["hosts"]
        try:
            outcome = append_run(RunDir.open(args["run_dir"]), args["db"], hosts=hosts, run_id=args.get("run_id"), record_name=args.get("record_name"),
                                 clock_drop_share=share, min_previous=minimum, max_points=points, timeout=timeout,
                                 write_history=args["write_history"])
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
