# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fact phase's budgets, options of every single-group fact module (node_facts words them for its groups)."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """``phase_timeout`` and ``phase_output_budget`` (plugins/module_utils/node_collect.py fact_phase)."""

    DOCUMENTATION = r"""
options:
  phase_timeout:
    description:
      - Seconds this run's tools may take all together (the fact phase's budget). Each tool gets the smaller of
        O(timeout) and what is left of it; once it is spent the tools left are not run (their raw entry says
        C(skipped) with the reason, naming the tool that took the budget) and the module answers with what it
        gathered. The facts that output allows are built, and the verdict says INCOMPLETE naming the tools.
      - When not given, twice O(timeout) plus 30 seconds.
    type: int
  phase_output_budget:
    description:
      - Bytes of output this run may keep all together (the fact phase's output budget) - every tool's stdout and
        stderr and every file read; each tool stream is also capped at 8 MiB on its own. Once it is spent each later
        tool still runs, but its output is read and dropped, and its raw entry says C(truncated) with
        C(truncated_reason) (C(the fact phase's output budget of 64 MiB was spent)); a file read then keeps nothing.
        The facts the rest allows are built (a cut output is read as a skipped tool's, never parsed), a group lists
        the cut tools in its C(overran) fact, and the verdict says INCOMPLETE naming them, never REJECT for it.
      - A size such as C(64M) or C(1G) (units of 1024) or a number of bytes. When not given, 64 MiB.
    type: bytes
"""
