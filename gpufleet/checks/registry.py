# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a check family declares its checks: :func:`node_check` and :func:`fleet_check`.

This module imports no family and no engine, so a family imports it and the engine imports the families
(``checks/families.py`` lists them) without an import cycle.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple, TypeVar

from gpufleet.checks.model import CheckResult

# A node check judges one NodeContext; a fleet check every judged node at once, by node name.
NodeCheck = Callable[[Any], Sequence[CheckResult]]
FleetCheck = Callable[[List[Any]], Mapping[str, Sequence[CheckResult]]]
CheckFunc = TypeVar("CheckFunc", bound=Callable[..., Any])

NODE_CHECKS: Dict[str, Tuple[Tuple[str, ...], NodeCheck]] = {}
FLEET_CHECKS: Dict[str, Tuple[Tuple[str, ...], FleetCheck]] = {}


def node_check(check_id: str, requires: Sequence[str] = ()) -> Callable[[CheckFunc], CheckFunc]:
    """Register ``func(node) -> [result, ...]`` as check ``check_id`` needing fact groups ``requires``."""

    def register(func: CheckFunc) -> CheckFunc:
        NODE_CHECKS[check_id] = (tuple(requires), func)
        return func

    return register


def fleet_check(check_id: str, requires: Sequence[str] = ()) -> Callable[[CheckFunc], CheckFunc]:
    """Register ``func(nodes) -> {node_name: [result, ...]}`` as fleet-wide check ``check_id``."""

    def register(func: CheckFunc) -> CheckFunc:
        FLEET_CHECKS[check_id] = (tuple(requires), func)
        return func

    return register
