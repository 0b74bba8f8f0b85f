# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.bench_record: write a benchmark record that no bench_run produced.

A benchmark skipped on a host (outcome ``skipped`` and the reason), or the side of a pair run
that failed and whose output is not the recorded measurement (outcome, reason, rc and command
copied from its registered bench_run result). Controller only; see bench/records.py.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from gpufleet.results.bench import plain_record
from gpufleet.results.store import BENCHMARK_KINDS, BENCHMARK_OUTCOMES, ResultsError, RunDir, to_plain, utc_now

OPTIONS = ("run_dir", "kind", "name", "record_host", "hosts", "outcome", "reason", "result", "repeat", "round", "group")
NAMES = {"iperf3_concurrent": "iperf3 concurrent", "allreduce_single": "all_reduce_perf", "allreduce_multi": "all_reduce_perf",
         "allreduce_pair": "all_reduce_perf"}


def _int_or_none(value, key):
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be an integer, got %r" % (key, value)) from None


def build(args, host):
    """The record for the task's ``args`` (ValueError naming the bad option)."""
    kind = args.get("kind")
    if kind not in BENCHMARK_KINDS:
        raise ValueError("kind must be one of %s, got %r" % (", ".join(BENCHMARK_KINDS), kind))
    hosts = args.get("hosts") or [host]
    if not isinstance(hosts, list):
        raise ValueError("hosts must be a list of inventory names")
    fields = {"repeat": _int_or_none(args.get("repeat"), "repeat") or 1, "round": _int_or_none(args.get("round"), "round"),
              "group": str(args["group"]) if args.get("group") else None}
    run = args.get("result")
    if run is not None:
        if not isinstance(run, dict) or "outcome" not in run:
            raise ValueError("result must be a registered bench_run result (it has no outcome)")
        outcome = run.get("outcome")
        reason = args.get("reason") or run.get("reason") or ""
        fields.update({"command": [str(part) for part in run.get("cmd") or []], "rc": run.get("rc"), "duration_s": run.get("duration_s"),
                       "job_id": run.get("job_id")})
        started = run.get("started") or utc_now()
    else:
        outcome = args.get("outcome") or "skipped"
        reason = args.get("reason") or ""
        started = utc_now()
    if outcome not in BENCHMARK_OUTCOMES:
        raise ValueError("outcome must be one of %s, got %r" % (", ".join(BENCHMARK_OUTCOMES), outcome))
    if outcome == "skipped" and not str(reason).strip():
        raise ValueError("reason is required for a skipped benchmark: say why it does not apply")
    name = args.get("name") or NAMES.get(kind, kind)
    return plain_record(name, kind, hosts, started, outcome=outcome, reason=str(reason).strip().splitlines()[0][:300] if reason else "", **fields)


class ActionModule(ActionBase):
    """Write one benchmark record into the results directory (controller only)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(OPTIONS)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        if not args.get("run_dir") or not isinstance(args["run_dir"], str):
            return dict(result, failed=True, msg="run_dir is required: the results directory of this run")
        host = str(args.get("record_host") or task_vars.get("inventory_hostname") or "localhost")
        try:
            record = build(args, host)
            RunDir.open(args["run_dir"]).add_benchmark(host, record)
        except ValueError as exc:
            return dict(result, failed=True, msg=str(exc))
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="results directory %s: %s" % (args["run_dir"], exc))
        return dict(result, changed=True, record=record)
