"""What an operator does next about a node that is not accepted: one sentence per verdict, the same in the CLI's
summary (``gpufleet validate``, ``gpufleet report``) and in the report (its folded node details).

- REJECT: the measured fault is the seller's to fix: dispute it with the node's evidence (``gpufleet bundle``), then
  retest it after the fix (``gpufleet validate --retest-failed``).
- UNREACHABLE: nothing was measured; make it reachable (its reason is ssh's), then retest.
- INCOMPLETE, or not judged: what is missing was not measured; the fix of each unverified item's reason
  (gpufleet/checks/fixes.py: provision first where a tool is missing, gather the fact group left out, ...), then
  retest.
"""

from __future__ import annotations

import shlex
from typing import Iterable, Optional

from gpufleet.checks.fixes import distinct_fixes
from gpufleet.checks.model import ACCEPTED


def retest(results_dir: str) -> str:
    """The command that runs the nodes not accepted in ``results_dir`` again, into a new directory."""
    return "gpufleet validate -i INVENTORY --retest-failed %s --out NEW_DIR" % shlex.quote(results_dir)


def next_step(verdict: Optional[str], host: str, results_dir: str, incomplete: Iterable[str] = ()) -> str:
    """The next step for ``host`` judged ``verdict`` in ``results_dir``; "" for an accepted node. ``incomplete``: the
    node's unverified items with why (coverage ``incomplete``)."""
    if verdict in ACCEPTED:
        return ""
    if verdict == "REJECT":
        return "dispute it with its evidence: gpufleet bundle %s %s; after the seller's fix: %s" % (
            shlex.quote(results_dir), shlex.quote(host), retest(results_dir))
    if verdict == "UNREACHABLE":
        return "make it reachable over ssh from the controller (see its reason), then: %s" % retest(results_dir)
    fixes = distinct_fixes(incomplete)
    if not fixes:
        return "measure what is missing: %s (at a level that measures it, e.g. --level standard)" % retest(results_dir)
    return "%s; then: %s" % ("; ".join(fixes), retest(results_dir))
