# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.health_prometheus: a host's latest NVML metrics as Prometheus text.

Runs on the controller only and writes nothing: reads the host's burn-in record and samples from
the results directory and returns the exposition text (gpufleet/history/prometheus.py)
in ``content``, for the playbook to write into node_exporter's textfile-collector directory with
``ansible.builtin.copy`` (which writes atomically). docs/burn-in.md.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.checks.burn_in_flags import SETTING, ThresholdError
from gpufleet.history.prometheus import FILE_NAME, prometheus_text
from gpufleet.results.store import ResultsError, RunDir, to_plain


class ActionModule(LibraryAction):
    """Render one host's Prometheus text; the playbook copies it to the node."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        host = str(args.get("host") or task_vars.get("inventory_hostname") or "localhost")
        thresholds = args.get("thresholds")
        if thresholds is None and SETTING in task_vars:
            thresholds = to_plain(self._templar.template(task_vars[SETTING]))
        try:
            content, gpus = prometheus_text(RunDir.open(args["run_dir"]), host, record_name=args.get("record_name"), thresholds=thresholds)
        except (ResultsError, ThresholdError, OSError) as exc:
            return dict(result, failed=True, msg="Prometheus text of %s: %s" % (host, exc))
        result.update(changed=False, host=host, content=content, gpus=gpus, file_name=FILE_NAME,
                      msg="%s: %d GPU(s), %d metric line(s)" % (host, gpus, sum(1 for line in content.splitlines() if line and not line.startswith("#"))))
        return result
