# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Xid catalog (gpufleet/facts/xid_catalog.yml): buckets of the anchor Xids, and the one judgement of an Xid
that the facts summary, host.xid and the re-read after stress share. Expected values written from the catalog."""

from __future__ import annotations

from gpufleet.facts import xid_catalog

FAIL, WARN = "fail", "warn"


def test_catalog_covers_the_anchor_ids_with_their_buckets():
    catalog = xid_catalog.catalog()
    for xid in (56, 57, 58, 65, 73, 81, 111, 112, 113, 114, 115, 116, 117, 118, 122, 123, 124, 125):
        assert (catalog[xid]["bucket"], catalog[xid]["status"]) == ("CONTACT_SUPPORT", FAIL), xid
    for xid in (110, 119, 120):
        assert (catalog[xid]["bucket"], catalog[xid]["status"]) == ("RESET_GPU", FAIL), xid
    for xid in (68, 69, 80):
        assert (catalog[xid]["bucket"], catalog[xid]["status"]) == ("RESTART_APP", WARN), xid
    assert (catalog[121]["bucket"], catalog[121]["status"]) == ("IGNORE", WARN)
    assert (catalog[154]["bucket"], catalog[154]["status"]) == ("XID_154", "recovery_action")
    # stricter than the bucket, with the anchor named: AzNHC fails 63 and 92
    assert (catalog[63]["status"], catalog[92]["status"]) == (FAIL, FAIL)
    assert "AzNHC" in catalog[63]["why"] and catalog[63]["source"].startswith("Azure azurehpc-health-checks")


def test_xid_status_resolves_154_by_the_recovery_action_and_unlisted_xids_warn():
    assert xid_catalog.xid_status(79) == FAIL and xid_catalog.xid_status(13) == WARN
    assert xid_catalog.xid_status(9999) == WARN and xid_catalog.meaning(9999) is None
    assert xid_catalog.xid_status(154, {"0000:18:00": "None"}) == WARN
    assert xid_catalog.xid_status(154, {"0000:18:00": "GPU Reset Required"}) == FAIL
    assert xid_catalog.xid_status(154, {"0000:18:00": None}) == FAIL  # the line named no action: not known to be fine
    assert xid_catalog.recovery_failures({"b": "None", "a": "Node Reboot Required"}) == [("a", "Node Reboot Required")]
