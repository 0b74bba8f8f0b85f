# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judging: claim + profile + facts -> check results (id, status, measured, expected, source), per node and fleet-wide."""
