# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.gate_baseline: what each accepted node looked like, for its prolog gate.

Reads the judged run's verdicts and host records and returns ``baselines`` (gpufleet/results/gate_baseline.py), one
per ACCEPT node, for the playbook to write onto the node (roles/slurm_gate's gpufleet_prolog_gate.py reads it).
Controller only; writes nothing.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.results.gate_baseline import accepted_baselines
from gpufleet.results.store import ResultsError, read_judged_run, utc_now


class ActionModule(LibraryAction):
    """Return the gate baseline of every accepted node of the run."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        try:
            _run, fleet, records = read_judged_run(args["run_dir"])
            baselines = accepted_baselines(fleet, records, utc_now())
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="gate_baseline: %s" % exc)
        return dict(result, changed=False, baselines=baselines,
                    msg="gate baselines of %d accepted node(s)" % len(baselines))
