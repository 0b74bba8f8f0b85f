# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.bench_run: run the benchmark on the node, parse, record.

The node runs the command (module ``bench_run``) and returns its raw output and outcome. Here
stdout is parsed with the registry parser named by ``parse_kind`` and, with ``run_dir``, the raw
output and a benchmark record (docs/results-schema.md, docs/benchmarks.md) are written into the
results directory, in the record of ``record_host``. A node that cannot be reached gets a
record with outcome ``unreachable`` before the task reports it unreachable.
"""

from __future__ import annotations

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from gpufleet.parsers.registry import KINDS
from gpufleet.results.bench import parse_output, record_run, record_unreachable
from gpufleet.results.store import BENCHMARK_KINDS, ResultsError, to_plain

# The options of plugins/modules/bench_run.py: the node's (defaults left to the module), then the controller's.
NODE_SPEC = {
    "argv": {"type": "list", "elements": "str", "required": True},
    "env": {"type": "dict"},
    "timeout": {"type": "float"},
    "grace": {"type": "float"},
    "job_id": {"type": "str", "required": True},
    "cwd": {"type": "path"},
    "max_output": {"type": "int"},
}
CONTROLLER_SPEC = {
    "parse_kind": {"type": "str", "choices": sorted(KINDS)},
    "run_dir": {"type": "path"},
    "record_host": {"type": "str"},
    "name": {"type": "str"},
    "kind": {"type": "str", "choices": list(BENCHMARK_KINDS)},
    "hosts": {"type": "list", "elements": "str"},
    "message_size_bytes": {"type": "int"},
    "algorithm": {"type": "str"},
    "repeat": {"type": "int", "default": 1},
    "round": {"type": "int"},
    "group": {"type": "str"},
}
ARGUMENT_SPEC = dict(NODE_SPEC, **CONTROLLER_SPEC)


class ActionModule(ActionBase):
    """Run gpufleet.acceptance.bench_run on the node; parse and record its output on the controller."""

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        args = to_plain(args)
        args["record_host"] = str(args["record_host"] or task_vars.get("inventory_hostname") or "localhost")
        node_args = {key: args[key] for key in NODE_SPEC if args[key] is not None}
        try:
            module_result = self._execute_module(module_name="gpufleet.acceptance.bench_run", module_args=node_args, task_vars=task_vars)
        except AnsibleConnectionFailure as exc:
            self._record_unreachable(args, str(exc))
            raise
        result.update(module_result)
        if module_result.get("unreachable"):
            self._record_unreachable(args, module_result.get("msg") or "unreachable")
            return result
        if module_result.get("failed") or module_result.get("skipped"):
            return result
        # a benchmark that failed is an outcome to record and judge, not a failed task (rc != 0 alone would fail it)
        result["failed"] = False
        result["parsed"], result["parse_error"] = parse_output(args["parse_kind"], module_result.get("stdout"))
        result["record"] = None
        if args["run_dir"]:
            try:
                result["record"] = record_run(args, module_result, result["parsed"])
            except (ResultsError, OSError) as exc:
                result["failed"] = True
                result["msg"] = "results directory %s: %s" % (args["run_dir"], exc)
        return result

    @staticmethod
    def _record_unreachable(args, message):
        if not args["run_dir"]:
            return
        try:
            record_unreachable(args, message)
        except (ResultsError, OSError):
            pass  # the task reports the host unreachable either way
