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

from ansible.plugins.action import ActionBase

from gpufleet.checks.burn_in_flags import SETTING, ThresholdError, judge
from gpufleet.history.prometheus import FILE_NAME, latest, render_samples
from gpufleet.results.burn_in import load_samples, read_history, records_of
from gpufleet.checks.burn_in import drift_results
from gpufleet.results.store import ResultsError, RunDir, to_plain


def host_findings(host_record, parsed, load, thresholds, drift):
    """The GPU findings to count: the host's judged burn_in checks when it has been judged, else a fresh judging."""
    judged = [item for item in host_record.get("checks") or [] if isinstance(item, dict) and str(item.get("id", "")).startswith("burn_in")]
    if judged:
        return judged
    return judge(parsed, load=load, settings=thresholds) + drift_results(drift)


def prometheus_text(run, host, record_name=None, thresholds=None):
    """``(content, gpus)`` for ``host`` of ``run`` (a RunDir). ResultsError when it has no readable samples."""
    host_record = run.read_host(host)
    entries = records_of(host_record)
    if record_name is not None:
        entries = [entry for entry in entries if entry.get("name") == record_name]
    if not entries:
        raise ResultsError("host %s has no burn-in record%s in %s" % (host, " named %s" % record_name if record_name else "", run.path))
    entry = entries[-1]
    parsed, problem = load_samples(run.path, entry)
    if parsed is None:
        raise ResultsError("host %s, burn-in record %s: %s" % (host, entry.get("name"), problem))
    drift = [flag for flag in (read_history(run.path) or {}).get("flags") or [] if isinstance(flag, dict) and flag.get("host") == host]
    findings = host_findings(host_record, parsed, entry.get("load"), thresholds, drift)
    return render_samples(parsed, findings=findings), len(latest(parsed))


class ActionModule(ActionBase):
    """Render one host's Prometheus text; the playbook copies it to the node."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("run_dir", "host", "record_name", "thresholds"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        if not args.get("run_dir") or not isinstance(args["run_dir"], str):
            return dict(result, failed=True, msg="run_dir is required: the results directory of this run")
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
