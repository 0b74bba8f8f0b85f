# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.ib_counters: read the counters on the node, number them, record.

The node returns the raw counter files (module ``ib_counters``); here they become the snapshot
``{taken, counters, hw_counters}`` (gpufleet/results/bench.py). Given ``before`` (an earlier snapshot),
``run_dir`` and ``benchmark``, the record of kind ``ib_counters`` with both snapshots is written
into ``record_host``'s record. A node without RDMA ports records nothing.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.results.bench import record_counters, snapshot
from gpufleet.results.store import ResultsError, utc_now

# The options of plugins/modules/ib_counters.py (its DOCUMENTATION declares them all) that the node reads; the others
# never reach it.
NODE_OPTIONS = ("sysfs_root", "devices")


class ActionModule(LibraryAction):
    """Run gpufleet.acceptance.ib_counters on the node; return numbers; record before/after."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        before = args["before"]
        if args["run_dir"] and before is not None and not args["benchmark"]:
            return dict(result, failed=True, msg="benchmark is required to record: name what ran between the snapshots")
        node_args = {key: args[key] for key in NODE_OPTIONS if args[key] is not None}
        module_result = self._execute_module(module_name="gpufleet.acceptance.ib_counters", module_args=node_args, task_vars=task_vars)
        result.update(module_result)
        if module_result.get("failed") or module_result.get("unreachable"):
            return result
        result["snapshot"] = snapshot(module_result.get("ports"), utc_now())
        result["record"] = None
        result["changed"] = False
        if not args["run_dir"] or before is None:
            return result
        host = str(args["record_host"] or task_vars.get("inventory_hostname") or "localhost")
        try:
            result["record"] = record_counters(args["run_dir"], host, args["benchmark"], before, result["snapshot"])
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="results directory %s: %s" % (args["run_dir"], exc))
        if result["record"] is None:
            result["msg"] = "no RDMA port on this node: nothing recorded"
        else:
            result["changed"] = True
        return result
