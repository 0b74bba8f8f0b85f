# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.slurm_drain: the run's verdicts as Slurm drains, from the controller.

Reads the verdicts of the results directory, the nodes' states from ``sinfo`` and drains each REJECT node with
``scontrol`` (reason ``gpufleet: <first reason>``), resumes a node gpufleet drained that now passes, and leaves an
administrator's drain alone (gpufleet/results/slurm_drain.py). Writes ``slurm.json`` into the results directory.
Where ``sinfo`` cannot be run or reach the cluster, ``reached`` is false and nothing is changed: the playbook then
writes the verdict file on each node for the health check program (roles/slurm_gate).
"""

from __future__ import annotations

import os
import subprocess

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.results.slurm_drain import (
    SINFO_ARGV, SLURM_FILE, action_record, parse_sinfo, plan_drains, run_verdicts, verdict_file)
from gpufleet.results.store import ResultsError, read_judged_run, utc_now, write_json_atomic


def run_command(argv, env, timeout):
    """``(rc, stdout + stderr)``; rc None when the command could not start or ran past ``timeout`` seconds."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


class ActionModule(LibraryAction):
    """Drain REJECT nodes, resume passing nodes gpufleet drained, keep an administrator's drains."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        env = dict(os.environ)
        if args.get("slurm_conf"):
            env["SLURM_CONF"] = args["slurm_conf"]
        try:
            run, fleet, records = read_judged_run(args["run_dir"])
            verdicts = run_verdicts(fleet, records)
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="slurm_drain: %s" % exc)
        # what each node's health check program acts on where this controller reaches no Slurm (roles/slurm_gate)
        written = utc_now()
        result["verdict_files"] = {host: verdict_file(verdict, reason, fleet.get("run_id"), written)
                                   for host, (verdict, reason) in verdicts.items()}
        sinfo = [args["sinfo_path"]] + list(SINFO_ARGV[1:])
        rc, output = run_command(sinfo, env, args["timeout"])
        if rc != 0:
            why = "%s: %s" % (" ".join(sinfo), output or "exit %s" % rc)
            return dict(result, changed=False, reached=False, actions=[], msg="Slurm not reached (%s)" % why)
        states, foreign = parse_sinfo(output)
        check_mode = self._play_context.check_mode
        records = []
        for action in plan_drains(verdicts, states, args["node_names"]):
            argv = action.argv(args["scontrol_path"])
            if argv and not check_mode:
                done = run_command(argv, env, args["timeout"])
            else:
                done = (None, "check mode: not run" if argv else "")
            records.append(action_record(action, args["scontrol_path"], *done))
        failed = [item for item in records if item["command"] and item["rc"] != 0 and not check_mode]
        document = {"reached": True, "actions": records, "sinfo_foreign_lines": foreign}
        if not check_mode:
            write_json_atomic(os.path.join(run.path, SLURM_FILE), document, root=run.path)
        changed = any(item["command"] and item["rc"] == 0 for item in records)
        words = ", ".join("%s %s" % (item["action"], item["node"]) for item in records if item["command"]) or "nothing"
        return dict(result, changed=changed, reached=True, actions=records, failed=bool(failed),
                    msg="Slurm: %s%s" % (words, "; failed: %s" % "; ".join(
                        "%s: %s" % (" ".join(item["command"]), item["output"]) for item in failed) if failed else ""))
