# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn-in thresholds (pure): their defaults, the inventory's overrides, and how a finding cites one.

``gpufleet_burn_in_thresholds`` (:data:`SETTING`) overrides any of :data:`DEFAULTS`; :func:`thresholds` lays it over
them and refuses what cannot be used with a :class:`ThresholdError` naming the key. docs/burn-in.md and the module
docstring of gpufleet/checks/burn_in_flags.py say what each threshold judges; burn_in_flags.py, which judges the
samples, re-exports these names for the modules, plugins and tests that import them from there.
"""

from __future__ import annotations

from typing import Any

from gpufleet.checks.burn_in_run import num

SETTING = "gpufleet_burn_in_thresholds"

DEFAULTS: dict[str, float] = {
    "clock_sag_share": 0.20,
    "clock_sag_time_share": 0.10,
    "hot_margin_c": 10.0,
    "throttle_time_share": 0.05,
    "power_cap_excess_share": 0.25,
    "nvlink_fail_count": 1,
    "nvlink_crc_fail_per_s": 100.0,
}
# Keys that are shares of something: 0..1.
_SHARES = ("clock_sag_share", "clock_sag_time_share", "throttle_time_share", "power_cap_excess_share")


class ThresholdError(ValueError):
    """A ``gpufleet_burn_in_thresholds`` that cannot be used; the message names the key."""


def thresholds(settings: Any = None) -> dict[str, float]:
    """The thresholds: DEFAULTS with ``settings`` (a mapping, or None) laid over them, validated."""
    out = dict(DEFAULTS)
    if settings is None:
        return out
    if not isinstance(settings, dict):
        raise ThresholdError("%s must be a mapping, got %s" % (SETTING, type(settings).__name__))
    for key, value in settings.items():
        if key not in DEFAULTS:
            raise ThresholdError("%s.%s: unknown key (known: %s)" % (SETTING, key, ", ".join(sorted(DEFAULTS))))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ThresholdError("%s.%s: must be a number >= 0, got %r" % (SETTING, key, value))
        if key in _SHARES and value > 1:
            raise ThresholdError("%s.%s: a share of 0..1, got %r" % (SETTING, key, value))
        out[key] = value
    return out


def limit_source(limits: dict[str, float], key: str, overridden: set[str]) -> str:
    """The source a finding cites for threshold ``key``: the inventory's override, else gpufleet's default."""
    where = "inventory %s.%s" % (SETTING, key) if key in overridden else "gpufleet default burn-in %s" % key
    return "%s = %s (docs/burn-in.md)" % (where, num(limits[key]))
