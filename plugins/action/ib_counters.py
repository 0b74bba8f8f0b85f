# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.ib_counters: read the counters on the node, number them, record.

The node returns the raw counter files (module ``ib_counters``); here they become the snapshot
``{taken, counters, hw_counters}`` (bench/records.py). Given ``before`` (an earlier snapshot),
``run_dir`` and ``benchmark``, the record of kind ``ib_counters`` with both snapshots is written
into ``record_host``'s record. A node without RDMA ports records nothing.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from gpufleet.results.bench import counters_record, snapshot
from gpufleet.results.store import ResultsError, RunDir, to_plain, utc_now

NODE_OPTIONS = ("sysfs_root", "devices")
CONTROLLER_OPTIONS = ("before", "benchmark", "run_dir", "record_host")


class ActionModule(ActionBase):
    """Run gpufleet.acceptance.ib_counters on the node; return numbers; record before/after."""

    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(NODE_OPTIONS + CONTROLLER_OPTIONS)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        before = args.get("before")
        if before is not None and not isinstance(before, dict):
            return dict(result, failed=True, msg="before must be the snapshot an earlier ib_counters call returned")
        if args.get("run_dir") and before is not None and not args.get("benchmark"):
            return dict(result, failed=True, msg="benchmark is required to record: name what ran between the snapshots")
        node_args = {key: args[key] for key in NODE_OPTIONS if args.get(key) is not None}
        module_result = self._execute_module(module_name="gpufleet.acceptance.ib_counters", module_args=node_args, task_vars=task_vars)
        result.update(module_result)
        if module_result.get("failed") or module_result.get("unreachable"):
            return result
        result["snapshot"] = snapshot(module_result.get("ports"), utc_now())
        result["record"] = None
        result["changed"] = False
        if not args.get("run_dir") or before is None:
            return result
        if not result["snapshot"]["counters"] and not (before.get("counters") or {}):
            result["msg"] = "no RDMA port on this node: nothing recorded"
            return result
        host = str(args.get("record_host") or task_vars.get("inventory_hostname") or "localhost")
        record = counters_record(host, args["benchmark"], before, result["snapshot"])
        try:
            RunDir.open(args["run_dir"]).add_benchmark(host, record)
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="results directory %s: %s" % (args["run_dir"], exc))
        result["record"] = record
        result["changed"] = True
        return result
