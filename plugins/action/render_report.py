# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.render_report: render a run's results directory into the acceptance report.

Runs on the controller only (it never contacts a node): reads the results directory
(docs/results-schema.md) and writes report.html, report.md, results.json and junit.xml with
gpufleet/report/render.py.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.report.model import ReportError
from gpufleet.report.render import FORMATS, render_report


class ActionModule(LibraryAction):
    """Render the report of one results directory."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
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
