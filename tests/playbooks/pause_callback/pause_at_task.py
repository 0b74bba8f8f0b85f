# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback: holds the playbook at the start of one task, so a test can interrupt the run there.

Enabled by the test alone (ANSIBLE_CALLBACK_PLUGINS=this directory, ANSIBLE_CALLBACKS_ENABLED=pause_at_task).
When a task whose name contains GPUFLEET_TEST_PAUSE_TASK starts, the file GPUFLEET_TEST_PAUSE_MARKER is
created and ansible-playbook sleeps GPUFLEET_TEST_PAUSE_S seconds (default 60) before running it: a
signal ends the sleep as it would end ansible-playbook's wait for its workers.
"""

from __future__ import annotations

import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: pause_at_task
type: aggregate
short_description: hold the playbook at the start of one task (gpufleet tests only)
description: >-
  Sleeps at the start of the task named by GPUFLEET_TEST_PAUSE_TASK, after creating GPUFLEET_TEST_PAUSE_MARKER.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "pause_at_task"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_task_start(self, task, is_conditional):
        wanted = os.environ.get("GPUFLEET_TEST_PAUSE_TASK")
        marker = os.environ.get("GPUFLEET_TEST_PAUSE_MARKER")
        if not wanted or not marker or wanted not in task.get_name() or os.path.exists(marker):
            return
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write(task.get_name() + "\n")
        time.sleep(float(os.environ.get("GPUFLEET_TEST_PAUSE_S", "60")))
