# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.bench_record: write a benchmark record that no bench_run produced.

A benchmark skipped on a host (outcome ``skipped`` and the reason), or the side of a pair run
that failed and whose output is not the recorded measurement (outcome, reason, rc and command
copied from its registered bench_run result). Controller only; see gpufleet/results/bench.py.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.results.bench import build_plain_record
from gpufleet.results.store import ResultsError, RunDir


class ActionModule(LibraryAction):
    """Write one benchmark record into the results directory (controller only)."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        host = str(args["record_host"] or task_vars.get("inventory_hostname") or "localhost")
        try:
            record = build_plain_record(args, host)
            RunDir.open(args["run_dir"]).add_benchmark(host, record)
        except ValueError as exc:
            return dict(result, failed=True, msg=str(exc))
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="results directory %s: %s" % (args["run_dir"], exc))
        return dict(result, changed=True, record=record)
