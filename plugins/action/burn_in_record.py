# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.burn_in_record: record one host's burn-in (or health-check) samples in the results directory.

Runs on the controller only. Copies the NVML samples (a JSON Lines file already fetched from the
node, or the sampler's records returned inline) to ``raw/<host>/burn_in/<name>.jsonl``, adds the
burn-in record (what the load tool did, per-GPU summaries) to ``hosts/<host>.json`` and returns
the burn-in flags at once (the same judging as the ``burn_in`` check family, which fleet_verdict
runs again over the directory). docs/burn-in.md.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from gpufleet.checks.burn_in_flags import SETTING, ThresholdError, flagged, judge
from gpufleet.results.burn_in import KINDS, record_burn_in
from gpufleet.facts.nvml_samples import SamplesError
from gpufleet.results.store import ResultsError, RunDir, to_plain


def finding_lines(findings):
    """One short line per flagged finding: ``fail burn_in.clock_sag: GPU 3 (...): ...``."""
    return ["%s %s: %s" % (item["status"], item["id"], " ".join(str(item["message"]).split())[:300]) for item in flagged(findings)]


class ActionModule(ActionBase):
    """Write the samples and the burn-in record of one host; return its flags."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("run_dir", "host", "name", "kind", "samples", "sample_records", "sampler_error", "load", "started", "duration_s",
                             "thresholds"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = to_plain(self._task.args)
        problem = self._check_args(args)
        if problem:
            return dict(result, failed=True, msg=problem)
        host = str(args.get("host") or task_vars.get("inventory_hostname") or "localhost")
        thresholds = args.get("thresholds")
        if thresholds is None and SETTING in task_vars:
            thresholds = to_plain(self._templar.template(task_vars[SETTING]))
        try:
            run = RunDir.open(args["run_dir"])
            record, parsed = record_burn_in(run, host, name=args.get("name") or "burn_in", samples_source=args.get("samples"),
                                            sample_records=args.get("sample_records"), load=args.get("load"), kind=args.get("kind"),
                                            started=args.get("started"), duration_s=args.get("duration_s"), sampler_error=args.get("sampler_error"))
            findings = judge(parsed or {"samples": []}, load=record["load"], settings=thresholds, where=record["samples_path"] or record["name"])
        except (ResultsError, SamplesError, ThresholdError, ValueError, OSError) as exc:
            return dict(result, failed=True, msg="burn-in record of %s in %s: %s" % (host, args.get("run_dir"), exc))
        lines = finding_lines(findings)
        result.update(
            changed=True,
            host=host,
            record=dict((key, value) for key, value in record.items() if key != "gpus"),
            gpus=record["gpus"],
            samples_path=record["samples_path"],
            findings=findings,
            flagged=lines,
            msg="%s: burn-in %s recorded (%s sample(s), %d GPU(s)); %s" % (
                host, record["name"], (record.get("sampler") or {}).get("samples", 0), len(record["gpus"]),
                "%d finding(s): %s" % (len(lines), "; ".join(lines[:4])) if lines else "nothing flagged"),
        )
        return result

    @staticmethod
    def _check_args(args):
        if not args.get("run_dir") or not isinstance(args["run_dir"], str):
            return "run_dir is required: the results directory of this run"
        given = [key for key in ("samples", "sample_records") if args.get(key) is not None]
        if len(given) > 1:
            return "give samples (a file on the controller) or sample_records, not both"
        if not given and not args.get("sampler_error"):
            return "no samples: give samples (a file on the controller), sample_records, or sampler_error saying why there are none"
        if args.get("kind") is not None and args["kind"] not in KINDS:
            return "kind must be one of %s, got %r" % (", ".join(KINDS), args["kind"])
        if args.get("duration_s") is not None:
            try:
                args["duration_s"] = float(args["duration_s"])
            except (TypeError, ValueError):
                return "duration_s must be a number of seconds, got %r" % (args["duration_s"],)
        return None
