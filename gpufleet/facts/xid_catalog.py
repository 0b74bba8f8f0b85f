# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA's Xid catalog as data (``xid_catalog.yml`` beside this module): the one list of serious Xids.

It lives in the facts stage so that the facts summary (gpufleet/facts/host.py ``xid_summary``) and the checks
(``host.xid``, the health re-read after stress) read the same entries; the checks stage may import facts, never the
other way round. Each Xid's ``status`` is what a check gives when it is in the kernel log: ``fail`` (a repair:
GPU reset, reboot, support case), ``warn`` (the application faulted, or the catalog does not list it) or
``recovery_action`` (Xid 154: judged by the action the driver names, anything but None fails).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, TypedDict

from gpufleet.yamlfile import load_yaml

CATALOG_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xid_catalog.yml")
FAIL, WARN, RECOVERY_ACTION = "fail", "warn", "recovery_action"
RECOVERY_NONE = "none"


class XidEntry(TypedDict):
    """One Xid of the catalog: what it means, its resolution bucket, its status, the source of that status and why."""

    meaning: str
    bucket: str
    status: str
    source: str
    why: str | None


@lru_cache(maxsize=None)
def _data() -> dict[str, Any]:
    with open(CATALOG_PATH, "r", encoding="utf-8") as handle:
        data: dict[str, Any] = load_yaml(handle)
    return data


@lru_cache(maxsize=None)
def catalog() -> dict[int, XidEntry]:
    """``{xid: {meaning, bucket, status, source, why}}`` (status resolved from the bucket unless the entry sets it)."""
    data = _data()
    buckets, sources = data["buckets"], data["sources"]
    out: dict[int, XidEntry] = {}
    for xid, entry in data["xids"].items():
        status = entry.get("status") or buckets[entry["bucket"]]
        source = sources["aznhc"] if entry.get("status") and "AzNHC" in (entry.get("why") or "") else sources["nvidia"]
        out[int(xid)] = {"meaning": entry["meaning"], "bucket": entry["bucket"], "status": status, "source": source,
                         "why": entry.get("why")}
    return out


def nvidia_source() -> str:
    """The catalog's own source line (for an Xid judged by its bucket)."""
    source: str = _data()["sources"]["nvidia"]
    return source


def recovery_failures(recovery_actions: dict[str, str | None] | None) -> list[tuple[str, str | None]]:
    """``[(gpu address, action)]`` whose last Xid 154 asked for something other than None (None: unreadable)."""
    return [(pci, action) for pci, action in sorted((recovery_actions or {}).items())
            if action is None or action.strip().lower() != RECOVERY_NONE]


def xid_status(number: int, recovery_actions: dict[str, str | None] | None = None) -> str:
    """``fail`` or ``warn`` for Xid ``number``: its catalog status, Xid 154 by the actions (an unlisted Xid warns)."""
    entry = catalog().get(int(number))
    status = entry["status"] if entry else WARN
    if status == RECOVERY_ACTION:
        return FAIL if recovery_failures(recovery_actions) else WARN
    return status


def meaning(number: int) -> str | None:
    """What the catalog says Xid ``number`` is (None when it does not list it)."""
    entry = catalog().get(int(number))
    return entry["meaning"] if entry else None
