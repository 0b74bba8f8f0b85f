# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attributes shared by gpufleet's modules."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    """Attribute fragments: node-side collectors, controller-side writers."""

    # Fact collectors: they only read the node.
    COLLECTOR = r"""
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Returns no diff.
"""

    # Action-only modules that run on the controller and write the results directory.
    CONTROLLER = r"""
attributes:
  action:
    support: full
    description: All the work is done by the action plugin on the controller.
  diff_mode:
    support: none
    description: Returns no diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
"""
