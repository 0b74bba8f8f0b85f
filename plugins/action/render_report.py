# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.render_report: render a run's results directory into the acceptance report.

Runs on the controller only (it never contacts a node): reads the results directory
(docs/results-schema.md) and writes report.html, report.md, results.json and junit.xml with
gpufleet/report/render.py.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from gpufleet.report.model import ReportError
from gpufleet.report.render import FORMATS, render_report
from gpufleet.results.store import to_plain

# The options of plugins/modules/render_report.py (its DOCUMENTATION says what each means).
ARGUMENT_SPEC = {
    "results_dir": {"type": "path", "required": True},
    "output_dir": {"type": "path"},
    "formats": {"type": "list", "elements": "str", "choices": list(FORMATS), "default": list(FORMATS)},
    "profiles_dir": {"type": "path"},
    "title": {"type": "str", "default": "gpufleet acceptance report"},
}


class ActionModule(ActionBase):
    """Render the report of one results directory."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        args = to_plain(args)
        try:
            outcome = render_report(args["results_dir"], output_dir=args["output_dir"], formats=args["formats"] or list(FORMATS),
                                    profiles_dir=args.get("profiles_dir"), title=args.get("title"))
        except (ReportError, OSError) as exc:
            result.update(failed=True, msg=str(exc))
            return result
        result.update(
            changed=True,
            files=outcome["files"],
            verdict=outcome["verdict"],
            counts=outcome["counts"],
            nodes=outcome["nodes"],
            failing=outcome["failing"],
            msg="fleet %s: report in %s" % (outcome["verdict"], outcome["files"].get("html") or ", ".join(outcome["files"].values())),
        )
        return result
