# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plausibility ceilings: the one table of figures no healthy or broken node can report (pure, controller side).

A figure above its ceiling is not a measurement to judge against a floor: it is a broken sensor, a damaged
capture or a forged one. The check that reads the figure fails it as ``implausible: ...``, naming the node's
subject and the figure, and judges nothing else from it; the other nodes and the node's other figures are
judged as usual. The parsers bound every number first (parsers/common.py ``MAX_NUMBER``, 2^64-1), so what
reaches a check is finite; these ceilings are far tighter and per figure (docs/parsers.md).

| figure | ceiling | why |
|---|---|---|
| ``gpu_count`` | 32 GPUs per node | NV_MAX_DEVICES, the most GPUs one system holds |
| ``gpu_temperature_c`` | 150 C | above any GPU's shutdown temperature |
| ``gpu_memory_mib`` | 1,048,576 MiB (1 TiB) | 3.5 x the most memory a GPU is sold with |
| ``allreduce_busbw_gbs`` | the profile's NVLink both ways, else 1,800 GB/s | no more than the GPU's links carry |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from gpufleet.checks.profiles import profile_value
from gpufleet.parsers.common import MAX_GPUS_PER_NODE


@dataclass(frozen=True)
class Ceiling:
    """The most a figure can be, its unit and why."""

    limit: float
    unit: str
    source: str


CEILINGS = {
    "gpu_count": Ceiling(MAX_GPUS_PER_NODE, "GPUs", "NV_MAX_DEVICES = 32, the maximum number of GPUs supported in a "
                         "single system (NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/nvlimits.h)"),
    "gpu_temperature_c": Ceiling(150, "C", "a GPU shuts down before it gets this hot (nvidia-smi -q 'GPU Shutdown "
                                 "Temp': 100-101 C in the recordings of tests/fixtures/smi)"),
    "gpu_memory_mib": Ceiling(1 << 20, "MiB", "1 TiB per GPU, about 3.5 x the 288 GB of HBM3e of the largest part "
                              "sold (B300)"),
    "allreduce_busbw_gbs": Ceiling(1800.0, "GB/s", "docs/baselines.md 2: NVLink5, 1,800 GB/s both ways per GPU, the "
                                   "most of any generation; an all-reduce moves no more than a GPU's links carry"),
}


def _number_text(value: float) -> str:
    """``400`` not ``400.0``; a long figure cut to its first digits and its length."""
    text = str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e16 else str(value)
    return text if len(text) <= 24 else "%s... (%d digits)" % (text[:16], len(text))


def implausible(figure: str, value: Any, subject: str, limit: Optional[float] = None,
                source: Optional[str] = None) -> Optional[str]:
    """``implausible: <subject> reads <value> <unit>, above the <limit> <unit> ...`` when ``value`` is above the
    ceiling of ``figure`` (``limit``/``source`` replace the table's, e.g. a profile's own), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    ceiling = CEILINGS[figure]
    limit = ceiling.limit if limit is None else limit
    if value <= limit:
        return None
    return "implausible: %s reads %s %s, above the ceiling of %s %s (%s)" % (
        subject, _number_text(value), ceiling.unit, _number_text(limit), ceiling.unit, source or ceiling.source)


def busbw_ceiling(profile: dict[str, Any] | None) -> Tuple[float, str]:
    """``(GB/s, source)``: a GPU's NVLink bandwidth both ways from the profile (links x link speed x 2), else the
    table's NVLink5 figure. With NVLS the switch reduces, and busbw reaches about 2(n-1)/n x one direction: still
    under both ways (docs/baselines.md 1 and 2)."""
    links, _links_source = profile_value(profile, "expect.nvlink_links_per_gpu")
    speed, _speed_source = profile_value(profile, "expect.nvlink_link_speed")
    if isinstance(links, int) and isinstance(speed, (int, float)) and links > 0 and speed > 0:
        both_ways = round(2 * links * speed, 1)
        return both_ways, "profile %s: %d NVLink links x %s GB/s x 2 directions, all a GPU's links carry" % (
            (profile or {}).get("name"), links, _number_text(speed))
    ceiling = CEILINGS["allreduce_busbw_gbs"]
    return ceiling.limit, ceiling.source
