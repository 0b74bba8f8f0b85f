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

import os

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from gpufleet.parsers.common import ParseError
from gpufleet.parsers.registry import KINDS, parse
from gpufleet.results.store import BENCHMARK_KINDS, ResultsError, RunDir, to_plain, utc_now

NODE_OPTIONS = ("argv", "env", "timeout", "grace", "job_id", "cwd", "max_output")
CONTROLLER_OPTIONS = ("parse_kind", "run_dir", "record_host", "name", "kind", "hosts", "message_size_bytes", "algorithm", "repeat", "round", "group")
# The record name the report expects for each kind (report/model.py classify_benchmark reads the name's start).
KIND_NAMES = {
    "allreduce_single": "all_reduce_perf",
    "allreduce_multi": "all_reduce_perf",
    "allreduce_pair": "all_reduce_perf",
    "iperf3": "iperf3",
    "iperf3_concurrent": "iperf3 concurrent",
    "ib_write_bw": "ib_write_bw",
    "ib_write_lat": "ib_write_lat",
    "nvbandwidth": "nvbandwidth",
}
LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "srun")


def record_name(args):
    """The record's name: ``name``, else the kind's, else the program's basename (a launcher is not guessed past)."""
    if args.get("name"):
        return str(args["name"])
    if args.get("kind") in KIND_NAMES:
        return KIND_NAMES[args["kind"]]
    argv = args.get("argv") or ["benchmark"]
    return os.path.basename(str(argv[0])) or "benchmark"


def parse_output(kind, stdout):
    """(parsed, error): the registry parser's result for ``stdout``, or why there is none."""
    if not kind:
        return None, None
    if not (stdout or "").strip():
        return None, "no output to parse"
    try:
        return parse(kind, stdout), None
    except ParseError as exc:
        where = " line %d:" % exc.line if exc.line is not None else ""
        return None, "cannot read the output as %s:%s %s" % (kind, where, exc.message)


def build_record(args, result, name, raw_path, stderr_path, parsed):
    """The benchmark record (results_store.BENCHMARK_FIELDS) of one run."""
    env = {str(key): str(value) for key, value in (args.get("env") or {}).items()}
    host = args["record_host"]
    algorithm = args.get("algorithm") or env.get("NCCL_ALGO")
    return {
        "name": name,
        "command": [str(part) for part in (result.get("cmd") or args.get("argv") or [])],
        "environment": env,
        "message_size_bytes": args.get("message_size_bytes"),
        "algorithm": str(algorithm) if algorithm else None,
        "raw_output_path": raw_path,
        "stderr_path": stderr_path,
        "parsed": parsed,
        "started": result.get("started") or utc_now(),
        "duration_s": result.get("duration_s"),
        "kind": args.get("kind"),
        "hosts": [str(item) for item in (args.get("hosts") or [host])],
        "outcome": result.get("outcome"),
        "reason": result.get("reason") or "",
        "rc": result.get("rc"),
        "repeat": int(args.get("repeat") or 1),
        "round": args.get("round"),
        "group": args.get("group"),
        "job_id": args.get("job_id"),
    }


class ActionModule(ActionBase):
    """Run gpufleet.acceptance.bench_run on the node; parse and record its output on the controller."""

    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(NODE_OPTIONS + CONTROLLER_OPTIONS)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        args["record_host"] = str(args.get("record_host") or task_vars.get("inventory_hostname") or "localhost")
        problem = self._check_args(args)
        if problem:
            return dict(result, failed=True, msg=problem)
        node_args = {key: args[key] for key in NODE_OPTIONS if key in args}
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
        result["parsed"], result["parse_error"] = parse_output(args.get("parse_kind"), module_result.get("stdout"))
        result["record"] = None
        if args.get("run_dir"):
            try:
                result["record"] = self._record(args, module_result, result["parsed"])
            except (ResultsError, OSError) as exc:
                result["failed"] = True
                result["msg"] = "results directory %s: %s" % (args["run_dir"], exc)
        return result

    @staticmethod
    def _check_args(args):
        kind = args.get("parse_kind")
        if kind and kind not in KINDS:
            return "parse_kind %r is not a parser; known: %s" % (kind, ", ".join(sorted(KINDS)))
        if args.get("kind") is not None and args["kind"] not in BENCHMARK_KINDS:
            return "kind must be one of %s, got %r" % (", ".join(BENCHMARK_KINDS), args["kind"])
        if args.get("run_dir") is not None and not isinstance(args["run_dir"], str):
            return "run_dir must be a path"
        for key in ("repeat", "round", "message_size_bytes"):
            value = args.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                try:
                    args[key] = int(value)
                except (TypeError, ValueError):
                    return "%s must be an integer, got %r" % (key, value)
        if args.get("hosts") is not None and not isinstance(args["hosts"], list):
            return "hosts must be a list of inventory names"
        return None

    @staticmethod
    def _record(args, module_result, parsed):
        run = RunDir.open(args["run_dir"])
        host = args["record_host"]
        name = record_name(args)
        key = "%s.%s" % (name, args.get("job_id") or "run")
        raw_path = run.write_benchmark_raw(host, key, module_result.get("stdout") or "")
        stderr_path = run.write_benchmark_raw(host, key + ".stderr", module_result["stderr"]) if module_result.get("stderr") else None
        record = build_record(args, module_result, name, raw_path, stderr_path, parsed)
        run.add_benchmark(host, record)
        return record

    @staticmethod
    def _record_unreachable(args, message):
        if not args.get("run_dir"):
            return
        record = build_record(args, {"outcome": "unreachable", "reason": message.strip().splitlines()[-1][:300] if message.strip() else "unreachable",
                                     "rc": None, "duration_s": None}, record_name(args), None, None, None)
        try:
            RunDir.open(args["run_dir"]).add_benchmark(args["record_host"], record)
        except (ResultsError, OSError):
            pass
