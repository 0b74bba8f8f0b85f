# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink checks from ``nvidia-smi nvlink -s`` / ``-e`` (the ``nvlink`` block of each GPU).

- ``nvlink.link_active``: every link printed is active and each GPU has the expected number of
  active links (the claim's ``nvlinks_per_pair`` — on NVSwitch and bridge systems a pair's NV#
  is every link of the GPU — else the profile's ``expect.nvlink_links_per_gpu``).
  ``<inactive>`` links and "all links are inactive" fail (docs/baselines.md 6).
- ``nvlink.link_speed``: each active link at the profile's ``expect.nvlink_link_speed``
  (25 / 26.562 / 53.125 GB/s, docs/baselines.md 2 and 6); without one, links slower than the node's
  fastest link warn.
- ``nvlink.errors``: replay / recovery / CRC counters above zero warn with their counts; a counter
  pinned at its maximum (65535, 4294967295, 2^64-1) is SATURATED, not a count: the true count is
  unknown and at least that, so it fails (docs/baselines.md 6).
"""

from __future__ import annotations

from gpufleet.checks.engine import node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, result
from gpufleet.checks.profiles import profile_value

ACTIVE, SPEED, ERRORS = "nvlink.link_active", "nvlink.link_speed", "nvlink.errors"
SATURATED = (2 ** 16 - 1, 2 ** 32 - 1, 2 ** 64 - 1)
SATURATION_SOURCE = "docs/baselines.md 6: a counter pinned at its maximum (65535) is saturated, not a literal count"
_SPEED_TOLERANCE = 0.001  # GB/s: nvidia-smi prints three decimals


def _nvlink_expected(node):
    """``(links per GPU or None, source)``; (0, source) when the node is sold without NVLink."""
    claim = node.claim or {}
    if claim.get("interconnect") == "pcie":
        return 0, "claim"
    if claim.get("nvlinks_per_pair") and claim.get("interconnect") in ("nvswitch", "nvlink_bridge_pairs"):
        return int(claim["nvlinks_per_pair"]), "claim"
    value, source = profile_value(node.profile, "expect.nvlink_links_per_gpu")
    if value is not None:
        return value, source
    interconnect, source = profile_value(node.profile, "expect.interconnect")
    if interconnect == "pcie" and not claim.get("interconnect"):
        return 0, source
    return None, None


def _gpu_label(gpu):
    return "GPU%s" % gpu.get("index")


def _nvlink_blocks(gpus):
    """GPUs with an nvlink block; None when nvlink was not collected at all."""
    with_block = [gpu for gpu in gpus if gpu.get("nvlink") is not None]
    return with_block or None


def _active_for_gpu(gpu, expected, source):
    """Results (non-pass) for one GPU, and its active link count (None when unknown)."""
    label = _gpu_label(gpu)
    nvlink = gpu["nvlink"]
    links = nvlink.get("links") or []
    status_links = [link for link in links if link.get("active") is not None]
    items = []
    if nvlink.get("supported") is False:
        return [result(ACTIVE, SKIP, "%s: NVLink not readable: %s" % (label, nvlink.get("message") or "not supported"), subject=label)], None
    if not status_links:
        message = nvlink.get("message")
        if nvlink.get("supported") is True:
            if expected == 0:
                return [], 0
            status = FAIL if expected else WARN
            want = "expected %d active" % expected if expected else "no NVLink expectation"
            return [result(ACTIVE, status, "%s: no active NVLink (%s), %s" % (label, message or "all links inactive", want),
                           measured=0, expected=expected, threshold_source=source, subject=label)], 0
        return [result(ACTIVE, SKIP, "%s: nvlink -s listed no link (%s)" % (label, message or "not collected"), subject=label)], None
    active = [link for link in status_links if link["active"] is True]
    for link in status_links:
        if link["active"] is False:
            subject = "%s/link%s" % (label, link["link"])
            items.append(result(ACTIVE, FAIL, "%s inactive, expected active" % subject, measured="inactive", expected="active",
                                threshold_source=source or "docs/baselines.md 6: <inactive> or a missing link means FAIL", subject=subject))
    if expected and len(active) < expected and not nvlink.get("elided"):
        items.append(result(ACTIVE, FAIL, "%s: %d of %d NVLinks active" % (label, len(active), expected),
                            measured=len(active), expected=expected, threshold_source=source, subject=label))
    elif expected is not None and len(active) > expected:
        items.append(result(ACTIVE, WARN, "%s: %d NVLinks active, expected %d: not the GPU described" % (label, len(active), expected),
                            measured=len(active), expected=expected, threshold_source=source, subject=label))
    return items, len(active)


@node_check(ACTIVE, requires=("gpu",))
def link_active(node):
    """Links per GPU active, and as many as expected."""
    gpus = node.group("gpu").get("gpus") or []
    blocks = _nvlink_blocks(gpus)
    expected, source = _nvlink_expected(node)
    if blocks is None:
        return [result(ACTIVE, SKIP, "not judged: nvlink status was not collected")]
    items, counts = [], []
    for gpu in blocks:
        found, count = _active_for_gpu(gpu, expected, source)
        items.extend(found)
        if count is not None:
            counts.append(count)
    if expected == 0 and not any(counts):
        return [result(ACTIVE, PASS, "sold without NVLink; no active NVLink on %d GPU(s)" % len(blocks),
                       measured=0, expected=0, threshold_source=source)]
    if not counts and items:
        reasons = sorted({item["message"].split(": ", 1)[-1] for item in items})
        return [result(ACTIVE, SKIP, "not judged: %d GPU(s) without NVLink readings: %s" % (len(items), "; ".join(reasons)))]
    if [item for item in items if item["status"] != SKIP]:
        return items
    total = sum(counts)
    what = "%d GPU(s) x %s" % (len(counts), "/".join(str(c) for c in sorted(set(counts))))
    return items + [result(ACTIVE, PASS, "all NVLinks active: %s links (%d)%s" % (what, total, "" if expected else "; no expected count"),
                           measured=total, expected=expected * len(counts) if expected else None, threshold_source=source)]


@node_check(SPEED, requires=("gpu",))
def link_speed(node):
    """Every active link at the expected speed."""
    gpus = node.group("gpu").get("gpus") or []
    links = []
    for gpu in _nvlink_blocks(gpus) or []:
        for link in gpu["nvlink"].get("links") or []:
            if link.get("active") is True and isinstance(link.get("speed_gbs"), (int, float)):
                links.append(("%s/link%s" % (_gpu_label(gpu), link["link"]), link["speed_gbs"]))
    if not links:
        return [result(SPEED, SKIP, "not judged: no active NVLink with a speed printed")]
    expected, source = profile_value(node.profile, "expect.nvlink_link_speed")
    status = FAIL
    if expected is None:
        expected, source, status = max(speed for _name, speed in links), "the node's fastest link (no profile speed)", WARN
    slow = [result(SPEED, status, "%s runs at %s GB/s, expected %s GB/s" % (name, speed, expected),
                   measured=speed, expected=expected, threshold_source=source, subject=name)
            for name, speed in links if speed < expected - _SPEED_TOLERANCE]
    if slow:
        return slow
    return [result(SPEED, PASS, "%d active NVLinks at %s GB/s or faster" % (len(links), expected),
                   measured=min(speed for _name, speed in links), expected=expected, threshold_source=source)]


def _is_error_counter(name, value):
    return name.endswith("_errors") and not name.startswith("fec") and isinstance(value, int) and not isinstance(value, bool)


@node_check(ERRORS, requires=("gpu",))
def errors(node):
    """Replay / recovery / CRC counters: non-zero warns, saturated fails."""
    gpus = node.group("gpu").get("gpus") or []
    items, counted = [], 0
    for gpu in _nvlink_blocks(gpus) or []:
        for link in gpu["nvlink"].get("links") or []:
            counters = {name: value for name, value in link.items() if _is_error_counter(name, value)}
            if not counters:
                continue
            counted += 1
            subject = "%s/link%s" % (_gpu_label(gpu), link["link"])
            saturated = {name: value for name, value in counters.items() if value in SATURATED}
            nonzero = {name: value for name, value in counters.items() if value and name not in saturated}
            if saturated:
                words = ", ".join("%s SATURATED at %d (true count unknown, at least that)" % (name.replace("_", " "), value)
                                  for name, value in sorted(saturated.items()))
                items.append(result(ERRORS, FAIL, "%s: %s" % (subject, words), measured=dict(sorted(counters.items())), expected=0,
                                    threshold_source=SATURATION_SOURCE, subject=subject))
            elif nonzero:
                words = ", ".join("%d %s" % (value, name.replace("_", " ")) for name, value in sorted(nonzero.items()))
                items.append(result(ERRORS, WARN, "%s: %s since the counters were reset, expected 0" % (subject, words),
                                    measured=dict(sorted(counters.items())), expected=0,
                                    threshold_source="a link without faults counts no errors", subject=subject))
    if not counted:
        return [result(ERRORS, SKIP, "not judged: no NVLink error counters (nvlink -e) collected")]
    return items or [result(ERRORS, PASS, "%d NVLinks, every error counter 0" % counted, measured=0, expected=0,
                            threshold_source="a link without faults counts no errors")]
