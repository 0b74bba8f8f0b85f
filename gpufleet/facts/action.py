# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ansible side shared by the single-group fact actions: run the collector, build the facts, set them.

An action plugin subclasses :class:`FactAction`, names its module and the library function
``build_facts(reader)`` that turns the node's raw results into facts (``gpufleet.facts.*``).
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from gpufleet.facts.raw import FactError, RawReader


class FactAction(ActionBase):

    """Base for the fact modules' action plugins."""

    MODULE = None  # FQCN of the node-side collector
    _supports_check_mode = True
    _supports_async = False

    @staticmethod
    def build_facts(reader):
        """Return the ``ansible_facts`` dict from a :class:`RawReader` (set by each subclass)."""
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        module_result = self._execute_module(module_name=self.MODULE, module_args=self._task.args, task_vars=task_vars)
        result.update(module_result)
        if module_result.get("failed"):
            return result
        host = task_vars.get("inventory_hostname", "node")
        reader = RawReader(host, module_result.get("raw") or {})
        try:
            facts = reader.attach_notes(self.build_facts(reader))
        except FactError as exc:
            result["failed"] = True
            result["msg"] = str(exc)
            return result
        result["changed"] = False
        result["ansible_facts"] = facts
        return result
