# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.bench_record: write a benchmark record that no bench_run produced.

A benchmark skipped on a host (outcome ``skipped`` and the reason), or the side of a pair run
that failed and whose output is not the recorded measurement (outcome, reason, rc and command
copied from its registered bench_run result). Controller only; see gpufleet/results/bench.py.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from gpufleet.results.bench import build_plain_record
from gpufleet.results.store import BENCHMARK_KINDS, BENCHMARK_OUTCOMES, ResultsError, RunDir, to_plain

# The options of plugins/modules/bench_record.py (its DOCUMENTATION says what each means).
ARGUMENT_SPEC = {
    "run_dir": {"type": "path", "required": True},
    "kind": {"type": "str", "required": True, "choices": list(BENCHMARK_KINDS)},
    "name": {"type": "str"},
    "record_host": {"type": "str"},
    "hosts": {"type": "list", "elements": "str"},
    # what is recorded without a result: never "ok" (an ok run is a result)
    "outcome": {"type": "str", "choices": [outcome for outcome in BENCHMARK_OUTCOMES if outcome != "ok"],
                "default": "skipped"},
    "reason": {"type": "str"},
    "result": {"type": "dict"},
    "repeat": {"type": "int", "default": 1},
    "round": {"type": "int"},
    "group": {"type": "str"},
}


class ActionModule(ActionBase):
    """Write one benchmark record into the results directory (controller only)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        args = to_plain(args)
        host = str(args["record_host"] or task_vars.get("inventory_hostname") or "localhost")
        try:
            record = build_plain_record(args, host)
            RunDir.open(args["run_dir"]).add_benchmark(host, record)
        except ValueError as exc:
            return dict(result, failed=True, msg=str(exc))
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="results directory %s: %s" % (args["run_dir"], exc))
        return dict(result, changed=True, record=record)
