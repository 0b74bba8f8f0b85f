# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.gate_baseline: what each accepted node looked like, for its prolog gate.

Reads the judged run's verdicts and host records and returns ``baselines`` (gpufleet/results/gate_baseline.py), one
per ACCEPT node, for the playbook to write onto the node (roles/slurm_gate's gpufleet_prolog_gate.py reads it).
Controller only; writes nothing.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from gpufleet.results.gate_baseline import accepted_baselines
from gpufleet.results.store import ResultsError, read_judged_run, to_plain, utc_now

# The options of plugins/modules/gate_baseline.py (its DOCUMENTATION says what each means).
ARGUMENT_SPEC = {"run_dir": {"type": "path", "required": True}}


class ActionModule(ActionBase):
    """Return the gate baseline of every accepted node of the run."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        args = to_plain(args)
        try:
            _run, fleet, records = read_judged_run(args["run_dir"])
            baselines = accepted_baselines(fleet, records, utc_now())
        except (ResultsError, OSError) as exc:
            return dict(result, failed=True, msg="gate_baseline: %s" % exc)
        return dict(result, changed=False, baselines=baselines,
                    msg="gate baselines of %d accepted node(s)" % len(baselines))
