# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base classes of the collection's action plugins.

:class:`LibraryAction` is a controller action: it validates the task's arguments against the plugin's spec (generated
from the module's DOCUMENTATION: gpufleet/adapter/spec.py) and hands plain values to ``act``, which calls the library.
:class:`FactAction` is a single-group fact action: it runs the node-side collector, then the library function
``build_facts(reader)`` that turns the node's raw results into facts (``gpufleet.facts.*``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ansible.plugins.action import ActionBase

from gpufleet.facts.raw import FactError, RawReader
from gpufleet.results.store import to_plain


class LibraryAction(ActionBase):
    """Base of the controller actions: validated, plain arguments in; the task's result out."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    # set by each plugin: documented_spec(__file__), and Ansible's cross-option rules where it has some
    ARGUMENT_SPEC: ClassVar[dict[str, dict[str, Any]]] = {}
    CONSTRAINTS: ClassVar[dict[str, Any]] = {}

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result: dict[str, Any] = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC, **self.CONSTRAINTS)
        return self.act(to_plain(args), task_vars, result)

    def act(self, args: dict[str, Any], task_vars: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """The task's result from its validated ``args`` (set by each plugin)."""
        raise NotImplementedError


class FactAction(ActionBase):
    """Base for the fact modules' action plugins."""

    MODULE: ClassVar[str | None] = None  # FQCN of the node-side collector
    _supports_check_mode = True
    _supports_async = False

    @staticmethod
    def build_facts(reader: RawReader) -> dict[str, Any]:
        """Return the ``ansible_facts`` dict from a :class:`RawReader` (set by each subclass)."""
        raise NotImplementedError

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result: dict[str, Any] = super().run(tmp, task_vars)
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
