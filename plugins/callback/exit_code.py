# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: exit_code
type: aggregate
short_description: ansible-playbook exits with gpufleet's code for a validation run
description:
  - At the end of a run of C(playbooks/validate_cluster.yml), makes ansible-playbook exit with the code the run recorded
    with C(ansible.builtin.set_stats) under C(acceptance_exit_code) instead of Ansible's own, so that the playbook and
    C(gpufleet validate) exit with the same code for the same outcome (the table is C(gpufleet/results/exit_codes.py),
    shown by C(gpufleet validate --help) and in C(docs/cli.md)).
  - The playbook records 1 when it starts (a run that ends before its verdict failed), 64 when its preflight refuses an
    input, and the verdicts' code once the report is written (0 every node accepted, 3 some REJECT, 4 some UNREACHABLE,
    6 some INCOMPLETE).
  - A run that recorded no code (any other playbook) keeps Ansible's exit code.
  - It ends the run once the statistics are in, after the recap is printed. List it last in C(callbacks_enabled), or a
    callback listed after it gets no statistics.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
requirements:
  - enabled in C(callbacks_enabled) (the collection's C(ansible.cfg) enables it)
"""

from ansible.plugins.callback import CallbackBase

from gpufleet.results.exit_codes import STATS_KEY, recorded_exit_code


class CallbackModule(CallbackBase):
    """Exit with the run's recorded code once its statistics are in (v2_playbook_on_stats, the run's last event)."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufleet.acceptance.exit_code"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_stats(self, stats):
        recorded = (getattr(stats, "custom", None) or {}).get("_run", {}).get(STATS_KEY)
        if recorded is None:
            return
        # SystemExit is no Exception: Ansible passes it on (its callbacks' errors are only warned about), and
        # ansible-playbook exits with it after its clean-up
        raise SystemExit(recorded_exit_code(recorded))
