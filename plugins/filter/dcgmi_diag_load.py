# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dcgmi_diag_load``: the burn-in load's outcome and reason from ``dcgmi diag -j`` output."""

from __future__ import annotations

DOCUMENTATION = r"""
name: dcgmi_diag_load
short_description: The burn-in load's outcome and reason from the JSON of dcgmi diag -j
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - Reads the JSON document C(dcgmi diag -r <level> -j) printed and judges it with bench_run's outcome and reason
    (gpufleet/results/burn_in.py C(dcgmi_load)).
  - Any test C(Fail) gives V(failed), naming the tests and their first warning. Any test C(Skip), no test at all,
    or a C(runtime_error) gives V(not_verified) - the C(burn_in.load) check calls that an error - so a run in which
    every test was skipped is never V(ok). Otherwise bench_run's outcome stays (a hang stays a hang).
options:
  _input:
    description: The stdout of C(dcgmi diag -j).
    type: str
    required: true
  outcome:
    description: bench_run's outcome (V(ok), V(failed), V(crash), V(hang), V(missing_binary)...).
    type: str
    required: true
  reason:
    description: bench_run's reason.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: What the DCGM diagnostic said
  ansible.builtin.set_fact:
    load_verdict: >-
      {{ load_result.stdout | gpufleet.acceptance.dcgmi_diag_load(load_result.outcome, load_result.reason) }}
"""

RETURN = r"""
_value:
  description: C({outcome, reason}).
  type: dict
"""

from ansible.errors import AnsibleFilterError

try:
    from gpufleet.results import burn_in as _burn_in
except ImportError as exc:  # said when the filter is used, not when Ansible loads it
    _burn_in = None
    _LIBRARY_ERROR = exc
else:
    _LIBRARY_ERROR = None


def dcgmi_diag_load(stdout, outcome, reason=""):
    """``{outcome, reason}`` of the load from dcgmi's JSON (gpufleet.results.burn_in.dcgmi_load)."""
    if _burn_in is None:
        raise AnsibleFilterError("the gpufleet Python library is missing on the controller (%s): install it as the "
                                 "collection's requirements.txt says (docs/install.md)" % _LIBRARY_ERROR)
    return _burn_in.dcgmi_load(str(stdout or ""), str(outcome or ""), str(reason or ""))


class FilterModule:
    """gpufleet burn-in filters."""

    def filters(self):
        return {"dcgmi_diag_load": dcgmi_diag_load}
