# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.bench_run: run the benchmark on the node, parse, record.

The node runs the command (module ``bench_run``) and returns its raw output and outcome. Here
stdout is parsed with the registry parser named by ``parse_kind`` and, with ``run_dir``, the raw
output and a benchmark record (docs/results-schema.md, docs/benchmarks.md) are written into the
results directory, in the record of ``record_host``. A node that cannot be reached gets a
record with outcome ``unreachable`` before the task reports it unreachable.

``samples_file``: the node path of the JSON Lines file an NVML sampler (``nvml_sample``, started beside
the run) writes. After the run it is read from the node (``slurp``) until it holds a tick at or after
the run's end, or its trailer, for at most ``samples_wait`` seconds; the per-GPU summary of the samples
taken during the run goes into the record's ``samples`` (gpufleet/results/bench.py ``run_samples``).
"""

from __future__ import annotations

import base64
import binascii
import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from gpufleet.facts.nvml_samples import parse_text
from gpufleet.parsers.registry import KINDS
from gpufleet.results.bench import parse_output, record_run, record_unreachable, run_samples, run_window, samples_cover
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
    "samples_file": {"type": "str"},
    "samples_wait": {"type": "float", "default": 10.0},
}
# Seconds between two reads of the samples file while waiting for the tick after the run.
SAMPLES_POLL_S = 1.0
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
        samples = None
        if args["samples_file"] and args["run_dir"]:
            samples, result["samples_error"] = self._run_samples(args, module_result, task_vars)
        if args["run_dir"]:
            try:
                result["record"] = record_run(args, module_result, result["parsed"], samples=samples)
            except (ResultsError, OSError) as exc:
                result["failed"] = True
                result["msg"] = "results directory %s: %s" % (args["run_dir"], exc)
        return result

    def _read_node_file(self, path, task_vars):
        """(text, why not) of a file on the node, read with slurp."""
        read = self._execute_module(module_name="ansible.builtin.slurp", module_args={"src": path}, task_vars=task_vars)
        if read.get("failed") or "content" not in read:
            return None, str(read.get("msg") or "not readable")
        try:
            return base64.b64decode(read["content"]).decode("utf-8", "replace"), None
        except (binascii.Error, ValueError) as exc:
            return None, "not base64: %s" % exc

    def _run_samples(self, args, module_result, task_vars):
        """(per-GPU summary of the samples taken during the run or None, why there is none or None); waits at most
        ``samples_wait`` seconds for the sampler's tick after the run."""
        window = run_window(module_result)
        deadline = time.monotonic() + max(0.0, float(args["samples_wait"]))
        parsed = {}
        while True:
            text, why = self._read_node_file(args["samples_file"], task_vars)
            parsed = parse_text(text) if text is not None else {}
            if text is not None and samples_cover(parsed, window):
                break
            if time.monotonic() + SAMPLES_POLL_S > deadline:
                break
            time.sleep(SAMPLES_POLL_S)
        if text is None:
            return None, "%s: %s" % (args["samples_file"], why)
        end = parsed.get("end") or {}
        if end.get("reason") == "failed":
            return None, "%s: the sampler did not start: %s" % (args["samples_file"], end.get("error"))
        samples = run_samples(text, window)
        return samples, None if samples else "%s: no sample taken while the run went on" % args["samples_file"]

    @staticmethod
    def _record_unreachable(args, message):
        if not args["run_dir"]:
            return
        try:
            record_unreachable(args, message)
        except (ResultsError, OSError):
            pass  # the task reports the host unreachable either way
