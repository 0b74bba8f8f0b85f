# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_facts' ``collector: separate``: the four fact modules run one by one through Ansible, each group's facts built
by the library as the combined collector's are (gpufleet/facts/node.py)."""

from __future__ import annotations

from typing import Any, Callable

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_text

from gpufleet.facts.node import BUILDERS, build_group
from gpufleet.facts.raw import FactError


def separate_results(host: str, requested: list[str], args: dict[str, Any],
                     execute: Callable[[str, dict[str, Any]], dict[str, Any]],
                     module_options: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{group: registered-result-like dict}`` from the four fact modules run one by one.

    ``execute(module, module_args)`` runs a module on the node; ``module_options[group]`` names the options
    that group's own module takes; facts built as in group_results.
    Mirrors the four tasks of a playbook: each module gets only its own options, a group's failure
    does not stop the next, and once the node drops its connection the groups after it are skipped
    (when it answered nothing at all, the connection error is raised as Ansible would report it).
    """
    out: dict[str, dict[str, Any]] = {}
    answered, lost = False, False
    for name, (module, build) in BUILDERS:
        if name not in requested:
            out[name] = {"changed": False, "skipped": True, "skip_reason": "%s is not in groups" % name}
            continue
        if lost:
            out[name] = {"changed": False, "skipped": True, "skip_reason": "the host became unreachable"}
            continue
        module_args = dict((key, value) for key, value in args.items() if key in module_options[name])
        try:
            module_result = execute(module, module_args)
        except AnsibleConnectionFailure as exc:
            if not answered:
                raise
            out[name], lost = {"changed": False, "unreachable": True, "msg": to_text(exc)}, True
            continue
        answered = True
        outcome = {key: value for key, value in module_result.items() if key in ("changed", "failed", "msg", "raw")}
        outcome["changed"] = False
        if not module_result.get("failed"):
            try:
                outcome["ansible_facts"] = build_group(host, name, build, module_result.get("raw") or {})
            except FactError as exc:
                outcome.update(failed=True, msg=str(exc))
        out[name] = outcome
    return out
