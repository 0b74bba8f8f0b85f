# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.bench_run: run the benchmark on the node, parse, record.

The node runs the command (module ``bench_run``) and returns its raw output and outcome. Here
stdout is parsed with the registry parser named by ``parse_kind`` and, with ``run_dir``, the raw
output and a benchmark record (docs/results-schema.md, docs/benchmarks.md) are written into the
results directory, in the record of ``record_host``. A node that cannot be reached gets a
record with outcome ``unreachable`` before the task reports it unreachable. A connection that ended mid-run while
the node still answers (the controller's ssh connection master killed) gets one reconnect first
(gpufleet/adapter/connection.py): the second attempt ends what the first left on the node (``end_earlier``: the
processes tagged with the job id and this node), runs the benchmark again, and its record says so (``reconnected``).

``parse_kind: nccl``, ``ib-bw``, ``ib-lat`` (:data:`JSON_RUNS`): the tool's binary in the argv (``json_binary``, else
the first element named like one: ``<name>_perf`` for nccl-tests, ``ib_write_bw``... for perftest) is handed to the
node with the document's format (``json_format``), which asks whether it writes a JSON document (nccl-tests' ``-J``,
perftest's ``--out_json``) and, where it does, reads the document back; it is parsed first (``nccl-json``,
``perftest-json``), with the text for what only the text has (gpufleet/results/bench.py ``parse_run``). The caller
may say whether the binary writes one (``json_supported``: playbooks/benchmark_tasks/perftest.yml reads perftest's
``--help`` itself); else the node probes the usage, and its answer is kept in a fact (``bench_run_nccl_json_probes``,
``bench_run_perftest_json_probes``: ``{host: {binary: {identity, supported}}}``) and handed back on the next run of
that binary on that host, so the probe runs once per host and binary (again when the file changed). A run of any other
kind (a perftest server: no ``parse_kind``) is never asked for a document, whatever ``json_binary`` says.

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

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.connection import with_one_reconnect
from gpufleet.adapter.spec import documented_spec
from gpufleet.facts.nvml_samples import parse_text
from gpufleet.parsers.registry import KINDS
from gpufleet.results.bench import (nccl_tests_binary, parse_output, parse_run, perftest_binary, reconnected_words,
                                    record_run, record_unreachable, run_samples, run_window, samples_cover)
from gpufleet.results.store import ResultsError

# The options of plugins/modules/bench_run.py (its DOCUMENTATION declares them all) that stay on the controller: the
# others go to the node. parse_kind is one of the parser registry's kinds (checked in act(): the registry is the one
# list, not repeated in the docs).
CONTROLLER_OPTIONS = ("parse_kind", "run_dir", "record_host", "name", "kind", "hosts", "message_size_bytes",
                      "algorithm", "repeat", "round", "group", "samples_file", "samples_wait", "nccl_json",
                      "perftest_json")
JSON_NODE_OPTIONS = ("json_binary", "json_format", "json_supported", "json_cached")
# Seconds between two reads of the samples file while waiting for the tick after the run.
SAMPLES_POLL_S = 1.0
# The fact that keeps the answers of the nccl-tests -h probe: {host: {binary: {identity, supported}}}. Not gpufleet_*:
# validate_cluster.yml refuses a gpufleet_ host variable it does not know, and a fact cache keeps facts across runs.
PROBES_FACT = "bench_run_nccl_json_probes"
# parse_kind -> the JSON document its tool can write: the node's format, the option that asks for it, how its binary
# is found in argv (and what that looks for), the fact of the probe's answers, and the node result's key
JSON_RUNS = {
    "nccl": {"format": "nccl-tests", "option": "nccl_json", "find": nccl_tests_binary,
             "binary": "nccl-tests binary (a program named <name>_perf)", "fact": PROBES_FACT, "result": "nccl_json"},
    "ib-bw": {"format": "perftest", "option": "perftest_json", "find": perftest_binary,
              "binary": "perftest binary (ib_write_bw, ib_read_lat...)", "fact": "bench_run_perftest_json_probes",
              "result": "perftest_json"},
}
JSON_RUNS["ib-lat"] = JSON_RUNS["ib-bw"]


def known_probes(task_vars: dict, fact: str = PROBES_FACT) -> dict:
    """``{host: {binary: {identity, supported}}}`` of the probes' ``fact``. Within a loop Ansible files an earlier
    item's facts one level down (``ansible_facts.ansible_facts``): read there too, so the second repeat of a run takes
    the first's answer."""
    facts = task_vars.get("ansible_facts") or {}
    probes = {}
    for source in (facts, facts.get("ansible_facts") or {}):
        known = source.get(fact) if isinstance(source, dict) else None
        for host, binaries in (known.items() if isinstance(known, dict) else ()):
            if isinstance(binaries, dict):
                probes.setdefault(str(host), {}).update(binaries)
    return probes


class ActionModule(LibraryAction):
    """Run gpufleet.acceptance.bench_run on the node; parse and record its output on the controller."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        if args["parse_kind"] is not None and args["parse_kind"] not in KINDS:
            return dict(result, failed=True, msg="parse_kind %r is no parser kind; one of: %s" % (
                args["parse_kind"], ", ".join(sorted(KINDS))))
        args["record_host"] = str(args["record_host"] or task_vars.get("inventory_hostname") or "localhost")
        probe_host = str(self._task.delegate_to or args["record_host"])
        asked_json = self._ask_for_json(args, task_vars, probe_host)
        node_args = {key: value for key, value in args.items() if key not in CONTROLLER_OPTIONS and value is not None}
        node_args["node"] = args["node"] or probe_host

        def attempt(retry: bool) -> dict:
            # the second attempt first ends what the first left on the node (its benchmark may still run there)
            module_args = dict(node_args, end_earlier=True) if retry else node_args
            return self._execute_module(module_name="gpufleet.acceptance.bench_run", module_args=module_args,
                                        task_vars=task_vars)

        try:
            module_result, lost = with_one_reconnect(attempt, self._connection)
        except AnsibleConnectionFailure as exc:
            self._record_unreachable(args, str(exc))
            raise
        if lost:
            module_result["reconnected"] = reconnected_words(lost, module_result.get("earlier_ended"))
        result.update(module_result)
        if module_result.get("unreachable"):
            self._record_unreachable(args, module_result.get("msg") or "unreachable")
            return result
        if module_result.get("failed") or module_result.get("skipped"):
            return result
        # a benchmark that failed is an outcome to record and judge, not a failed task (rc != 0 alone would fail it)
        result["failed"] = False
        json_run = JSON_RUNS.get(args["parse_kind"])
        if json_run is not None:
            node_json = module_result.get(json_run["result"]) or asked_json
            result["parsed"], result["parse_error"] = parse_run(args["parse_kind"], module_result.get("stdout"),
                                                                node_json)
            self._keep_probe(result, task_vars, probe_host, module_result.get(json_run["result"]), json_run)
        else:
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

    @staticmethod
    def _ask_for_json(args: dict, task_vars: dict, probe_host: str) -> dict | None:
        """Set ``json_binary``, ``json_format`` (and the cached probe) in ``args`` for a run whose tool can write a
        JSON document (:data:`JSON_RUNS`); else clear them, and return ``{document: None, reason}`` where one was
        expected."""
        json_run = JSON_RUNS.get(args["parse_kind"])
        why = None
        if json_run is None:
            why = "no JSON document for parse_kind %s" % args["parse_kind"]
        elif not args[json_run["option"]]:
            why = "%s is false: the text was asked for" % json_run["option"]
        elif not (args["json_binary"] or json_run["find"](args["argv"])):
            why = "no %s in argv" % json_run["binary"]
        if why is not None:
            for key in JSON_NODE_OPTIONS:
                args[key] = None
            return None if json_run is None else {"document": None, "reason": why}
        args["json_binary"] = args["json_binary"] or json_run["find"](args["argv"])
        args["json_format"] = json_run["format"]
        probes = known_probes(task_vars, json_run["fact"]).get(probe_host) or {}
        binary = args["json_binary"]
        if isinstance(probes.get(binary), dict) and args["json_cached"] is None and args["json_supported"] is None:
            args["json_cached"] = {key: probes[binary].get(key) for key in ("identity", "supported")}
        return None

    @staticmethod
    def _keep_probe(result: dict, task_vars: dict, probe_host: str, node_json: dict | None, json_run: dict) -> None:
        """A new answer of the usage probe goes into the fact, for this host's next run of the binary; the task result
        keeps the document's length, not its text (``parsed`` holds what it says)."""
        if not node_json:
            return
        document = node_json.get("document")
        length = len(document) if document is not None else None
        result[json_run["result"]] = dict(node_json, document=None, document_bytes=length)
        if node_json.get("probe") != "probed" or node_json.get("supported") not in (True, False):
            return
        probes = known_probes(task_vars, json_run["fact"])
        answer = {"identity": node_json.get("identity"), "supported": node_json["supported"]}
        probes.setdefault(probe_host, {})[node_json["binary"]] = answer
        result["ansible_facts"] = {json_run["fact"]: probes}

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
