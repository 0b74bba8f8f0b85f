# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.results_record: start a results directory, or write one host's facts into it.

Runs on the controller only (it never contacts the node): ``phase: start`` creates or reopens
the run directory and says which hosts a rerun may skip; ``phase: facts`` writes a host's
facts, fact errors and raw outputs the moment they arrive. See docs/results-schema.md.

A file it cannot write (a full, read-only or unwritable results directory) fails the task with the store's message
naming the file, the errno and what is on disk, also as ``results_write_error`` (the controller's failure, which
``gpufleet validate`` reports as such).
"""

from __future__ import annotations

import os

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.facts import FACT_GROUPS
from gpufleet.results.store import ResultsError, ResultsWriteError, RunDir, record_host_facts, to_plain

# The collection this plugin belongs to (an installed copy or the checkout): run.json records which one judged.
THIS_COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PHASES = ("start", "facts")


def _invocation() -> str:
    """Which ansible-playbook run this is: its process (the parent of the worker that runs this action) and the time
    that process started (a later run may get the same pid). The free strategy runs a run_once task once per host:
    the run is opened once per invocation, and only another invocation resumes it (RunDir.create)."""
    parent = os.getppid()
    try:
        with open("/proc/%d/stat" % parent, "r", encoding="ascii") as handle:
            started = handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        started = "unknown"
    return "%d:%s" % (parent, started)


def _requested_profiles(hostvars, hosts):
    """Per host that asks for one: its ``gpufleet_profile`` and ``gpufleet_profile_overrides``."""
    requested = {}
    for host in hosts:
        if hostvars is None or host not in hostvars:
            continue
        view = hostvars[host]
        asked = {name: to_plain(view[var]) for name, var in (("profile", "gpufleet_profile"), ("overrides", "gpufleet_profile_overrides"))
                 if var in view}
        if asked:
            requested[str(host)] = asked
    return requested


class ActionModule(LibraryAction):
    """Write the results directory's run.json (phase start) or hosts/<host>.json + raw/ (phase facts)."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        run_dir, phase = args["run_dir"], args["phase"]
        try:
            if phase == "start":
                result.update(self._start(run_dir, args, task_vars))
            else:
                result.update(self._facts(run_dir, args, task_vars))
        except ResultsWriteError as exc:
            result.update(failed=True, msg=str(exc), results_write_error=str(exc))
        except (ResultsError, OSError) as exc:
            result["failed"] = True
            result["msg"] = "results directory %s: %s" % (run_dir, exc)
        return result

    @staticmethod
    def _start(run_dir, args, task_vars):
        hosts = args.get("hosts") or task_vars.get("ansible_play_hosts_all") or []
        inventory = args.get("inventory") or task_vars.get("ansible_inventory_sources") or []
        if isinstance(inventory, str):
            inventory = [inventory]
        run = RunDir.create(
            run_dir,
            inventory=[str(item) for item in inventory],
            playbook=args.get("playbook"),
            hosts=[str(host) for host in hosts],
            profile_choices=args.get("profile") or {"requested": _requested_profiles(task_vars.get("hostvars"), hosts)},
            extra=dict({"ansible_version": (task_vars.get("ansible_version") or {}).get("full")},
                       # the run's settings (the validation level, the benchmarks asked for): the verdict and report read them
                       **({"settings": args["settings"]} if args.get("settings") else {})),
            collection=THIS_COLLECTION,
            invocation=_invocation(),
        )
        resume = run.resume(hosts=[str(host) for host in hosts])
        skip = resume["complete"] if args["resume"] else []
        return {
            "changed": True,
            "run_dir": run.path,
            "run_id": resume["run_id"],
            "resume": resume,
            "complete_hosts": skip,
            # for playbooks/benchmark.yml: the run's start (its job tag, the same when resumed) and what it recorded
            "started": run.read_run().get("started"),
            "recorded_jobs": run.recorded_benchmark_jobs(),
            "msg": "results in %s%s" % (run.path, "; %d host(s) already complete, not gathered again" % len(skip) if skip else ""),
        }

    @staticmethod
    def _facts(run_dir, args, task_vars):
        host = args.get("host") or task_vars.get("inventory_hostname")
        results = args.get("results")
        if not isinstance(results, dict):
            raise ResultsError("results must map fact groups (%s) to the fact tasks' registered results" % ", ".join(FACT_GROUPS))
        unknown = sorted(set(results) - set(FACT_GROUPS))
        if unknown:
            raise ResultsError("results has unknown fact group(s) %s; known: %s" % (", ".join(unknown), ", ".join(FACT_GROUPS)))
        run, record = record_host_facts(host, results, dict(args, run_dir=run_dir))
        return {
            "changed": True,
            "host": host,
            "record": record and run.host_file(host),
            "unreachable_reason": record["unreachable"],
            "fact_errors": record["fact_errors"],
            "facts_complete": record["phases"]["facts"]["complete"],
            "raw_files": sum(len(index) for index in record["raw"].values()),
        }
