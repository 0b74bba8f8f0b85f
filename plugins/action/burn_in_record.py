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

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.checks.burn_in_flags import SETTING, ThresholdError, flagged, judge
from gpufleet.results.burn_in import record_burn_in
from gpufleet.facts.nvml_samples import SamplesError
from gpufleet.results.store import ResultsError, RunDir, to_plain


# Samples come from a file or inline, never both; without either the sampler must say why.
MUTUALLY_EXCLUSIVE = [("samples", "sample_records")]
REQUIRED_ONE_OF = [("samples", "sample_records", "sampler_error")]


def finding_lines(findings):
    """One short line per flagged finding: ``fail burn_in.clock_sag: GPU 3 (...): ...``."""
    return ["%s %s: %s" % (item["status"], item["id"], " ".join(str(item["message"]).split())[:300]) for item in flagged(findings)]


class ActionModule(LibraryAction):
    """Write the samples and the burn-in record of one host; return its flags."""

    ARGUMENT_SPEC = documented_spec(__file__)
    CONSTRAINTS = {"mutually_exclusive": MUTUALLY_EXCLUSIVE, "required_one_of": REQUIRED_ONE_OF}

    def act(self, args, task_vars, result):
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
