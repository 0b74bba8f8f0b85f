# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health after stress: the health facts read again after the benchmarks and after the burn-in, held against the
first reading (pure, controller side; docs/baselines.md 10).

The first reading is the node's facts (``NodeContext.facts``); each later one is ``settings["health_after"][phase]``
(gpufleet/results/store.py ``RunDir.record_health_after``), carrying ``before``: the time of the facts reading it
follows. A reading that follows another facts reading than the node's (a resumed run gathered again) is never compared.

Per phase (``benchmarks``, ``burn_in``) two check ids:

- ``after_stress.<phase>``: what changed, each result naming the counter, its value before and after - new Xid and
  NVSwitch SXid lines in the kernel log, ECC and remapped-row counters that grew, a GPU gone from the bus, a PCIe link
  narrower (fail) or at a lower generation (warn: idle power saving lowers it too) than before, PCIe replay counters
  that grew (fail; the message gives the growth per minute between the readings against DCGM's health-watch limit of
  8 per minute, gpu_rules.py ``pcie_replay_growth``), NVLink replay / recovery / CRC counters that grew, IB port error
  counters that grew and ports no
  longer Active. A new Xid is judged by the bucket of NVIDIA's catalog (gpufleet/facts/xid_catalog.yml) as host.xid
  judges it: a repair fails, an application-level one warns.
- ``after_stress.<phase>.reading``: whether the re-read covered every part the first reading had (pass), or why not
  (skip: no reading recorded, the node did not answer it, a group failed, it follows another reading).

New kernel-log lines are found by event identity (the timestamp as printed, the GPU or switch address, the number and
the message), counted as a multiset, not by line number or line count: the collector keeps only the log's last lines
and the ring buffer drops its oldest, so the same event sits on another line in the second reading and a count can
stay equal while old events fall out as new ones come in. The facts keep the last 50 events: when every kept event of
the second reading is new, the difference of the event totals is the count (at least that many).

A required re-read (``settings["required_after_stress"]``, set by the verdict from the node's level) that is missing
leaves the item unverified: the node is INCOMPLETE (checks/evidence.py), never accepted on a silent pass.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeGuard, cast

from gpufleet.checks.registry import node_check
from gpufleet.checks.evidence import REQUIRED_AFTER_STRESS_SETTING
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.gpu_rules import pcie_replay_growth
from gpufleet.facts import xid_catalog
from gpufleet.facts.nic import ERROR_COUNTERS

PHASES = ("benchmarks", "burn_in")
PHASE_WORDS = {"benchmarks": "the benchmarks", "burn_in": "the burn-in"}
# NodeContext.settings keys (gpufleet/results/verdicts.py fills them from the host record)
READINGS_SETTING = "health_after"
FACTS_READ_SETTING = "facts_read"
# The fact groups of a re-read and what each holds for this check
GROUP_WORDS = {"host": "kernel log", "gpu": "GPU ECC, remapped rows, PCIe link and replays, NVLink counters",
               "nic": "IB port counters"}

# Per-GPU ECC counters: growth of an uncorrectable one fails, of a correctable one warns (corrected, but seen
# under load).
ECC_COUNTERS = (
    ("ecc_errors_volatile_uncorrectable", FAIL),
    ("ecc_errors_aggregate_uncorrectable", FAIL),
    ("ecc_errors_volatile_correctable", WARN),
    ("ecc_errors_aggregate_correctable", WARN),
)
# remapped_rows.<key>: counts that grew, flags that turned true
REMAP_COUNTS = (("uncorrectable", FAIL), ("correctable", WARN))
REMAP_FLAGS = ("pending", "failure")
NVLINK_COUNTERS = ("replay_errors", "recovery_errors", "crc_errors")

SOURCE_XID = "docs/baselines.md 10: an Xid NVIDIA's catalog sends to reset/reboot/support, new since the first reading"
SOURCE_ECC = "docs/baselines.md 10: uncorrectable ECC and row-remap failures/pending remaps fail (AzNHC, DCGM)"
SOURCE_PCIE = "docs/baselines.md 10: a link trained narrower under load than idle is a degraded link"
SOURCE_NVLINK = "docs/baselines.md 10: NVLink replay/recovery/CRC counters grow only on a faulty link (GCM, AzNHC)"
SOURCE_IB = "docs/baselines.md 10: IB PortCounters errors grow only on a faulty link (IBTA PortCounters)"
SOURCE_READING = "docs/baselines.md 10: the health facts are read again after each stress phase"


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _block(facts: dict[str, Any], key: str) -> dict[str, Any]:
    """``facts[key]`` where it is a dict (a GPU's ``nvlink``, ``remapped_rows``), else empty."""
    value = facts.get(key)
    return value if isinstance(value, dict) else {}


def _gpu_key(gpu: dict[str, Any]) -> str:
    return str(gpu.get("uuid") or gpu.get("pci_bus_id") or gpu.get("index"))


def _gpu_label(gpu: dict[str, Any]) -> str:
    return "GPU%s" % gpu.get("index")


def _finding(check_id: str, status: str, subject: str, counter: str, before: Any, after: Any, source: str,
             words: str = "") -> CheckResult:
    message = "%s %s: %s before, %s after %s" % (subject, counter, before, after, words)
    item = result(
        check_id, status, message.strip(), measured=after, expected=before, threshold_source=source, subject=subject
    )
    # results.json names the counter and both readings beside the schema's fields, which CheckResult alone declares
    cast("dict[str, Any]", item).update(counter=counter, before=before, after=after)
    return item


# --- kernel log ----------------------------------------------------------------------------------


def _identity(event: dict[str, Any], number_key: str) -> tuple[Any, Any, Any, Any]:
    return (event.get("timestamp"), event.get("pci"), event.get(number_key), event.get("message"))


def new_events(before: dict[str, Any], after: dict[str, Any],
               number_key: str = "xid") -> tuple[list[dict[str, Any]], int]:
    """``(new events, how many)``: the events of ``after`` (a facts ``xid`` or ``xid.sxid`` group) not in ``before``,
    by identity (module docstring). ``how many`` is at least the events listed; more when every kept event is new."""
    seen = Counter(_identity(event, number_key) for event in before.get("events") or [])
    fresh = []
    for event in after.get("events") or []:
        key = _identity(event, number_key)
        if seen[key] > 0:
            seen[key] -= 1
        else:
            fresh.append(event)
    total = len(fresh)
    kept = after.get("events") or []
    total_before, total_after = before.get("events_total"), after.get("events_total")
    if fresh and len(fresh) == len(kept) and _is_count(total_before) and _is_count(total_after):
        total = max(total, total_after - total_before)
    return fresh, total


def _kernel_log(check_id: str, before: dict[str, Any], after: dict[str, Any], phase: str,
                _window_s: float | None = None) -> list[CheckResult]:
    xid_before, xid_after = before.get("xid") or {}, after.get("xid") or {}
    out = _new_xids(check_id, xid_before, xid_after, phase) + _new_sxids(check_id, xid_before, xid_after, phase)
    if not out:
        out.append(result(check_id, PASS, "kernel log: no new Xid or SXid line during %s (%s events before, %s after)"
                          % (PHASE_WORDS[phase], xid_before.get("events_total"), xid_after.get("events_total")),
                          measured=0, expected=0, threshold_source=SOURCE_XID, subject="kernel log"))
    return out


def _new_xids(check_id: str, xid_before: dict[str, Any], xid_after: dict[str, Any], phase: str) -> list[CheckResult]:
    """One result per Xid number new in the second reading, and one more when every kept event is new."""
    fresh, count = new_events(xid_before, xid_after, "xid")
    if not fresh:
        return []
    # judged as host.xid judges them: by the catalog's bucket (gpufleet/facts/xid_catalog.yml); Xid 154 by the
    # recovery action the second reading names
    recovery = xid_after.get("recovery_actions") or {}
    out = [_new_xid(check_id, [event for event in fresh if event["xid"] == number], xid_before, recovery, phase)
           for number in sorted(Counter(event["xid"] for event in fresh))]
    if count > len(fresh):
        out.append(result(check_id, FAIL, "kernel log: at least %d new Xid lines during %s (every kept event is new)"
                          % (count, PHASE_WORDS[phase]), measured=count, expected=0, threshold_source=SOURCE_XID,
                          subject="kernel log"))
    return out


def _new_xid(check_id: str, events: list[dict[str, Any]], xid_before: dict[str, Any],
             recovery: dict[str, str | None], phase: str) -> CheckResult:
    """The finding of one Xid number's new ``events`` (at least one), judged by the catalog's bucket."""
    number = events[0]["xid"]
    gpus = sorted({str(event.get("pci")) for event in events})
    first = events[0]
    words = "new during %s on %s (first: %s %s)" % (PHASE_WORDS[phase], ", ".join(gpus), first.get("timestamp"),
                                                    first.get("message") or "")
    entry = xid_catalog.catalog().get(number)
    if entry:
        words += ": %s (catalog bucket %s)" % (entry["meaning"], entry["bucket"])
    status = FAIL if xid_catalog.xid_status(number, recovery) == xid_catalog.FAIL else WARN
    before_count = int((xid_before.get("counts") or {}).get(str(number), 0))
    item = _finding(check_id, status, "kernel log", "Xid %d" % number, before_count,
                    before_count + len(events), SOURCE_XID, words)
    cast("dict[str, Any]", item)["gpus"] = gpus  # the GPUs that logged it, beside the schema's fields
    return item


def _new_sxids(check_id: str, xid_before: dict[str, Any], xid_after: dict[str, Any], phase: str) -> list[CheckResult]:
    """One result per NVSwitch SXid number new in the second reading: a fatal one fails, a non-fatal one warns."""
    sxid_before, sxid_after = xid_before.get("sxid") or {}, xid_after.get("sxid") or {}
    fresh_sxid, _count = new_events(sxid_before, sxid_after, "sxid")
    out = []
    for number in sorted({event["sxid"] for event in fresh_sxid}):
        events = [event for event in fresh_sxid if event["sxid"] == number]
        fatal = any(event.get("fatal") for event in events)
        switches = sorted({"%s (%s)" % (event.get("switch"), event.get("pci")) for event in events})
        before_count = int((sxid_before.get("counts") or {}).get(str(number), 0))
        out.append(_finding(check_id, FAIL if fatal else WARN, "kernel log", "SXid %d" % number, before_count,
                            before_count + len(events), SOURCE_XID, "new %s during %s on %s"
                            % ("fatal" if fatal else "non-fatal", PHASE_WORDS[phase], ", ".join(switches))))
    return out


# --- GPUs ----------------------------------------------------------------------------------------


def _links(gpu: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(link.get("link")): link for link in _block(gpu, "nvlink").get("links") or [] if isinstance(link, dict)}


def _grew(before: Any, after: Any) -> bool:
    """Both readings are counts and the second is higher."""
    return _is_count(before) and _is_count(after) and after > before


def _gpu_changes(check_id: str, old: dict[str, Any], new: dict[str, Any], phase: str) -> list[CheckResult]:
    label = _gpu_label(new)
    return (_ecc_changes(check_id, label, old, new, phase) + _pcie_changes(check_id, label, old, new)
            + _nvlink_changes(check_id, label, old, new, phase))


def _ecc_changes(check_id: str, label: str, old: dict[str, Any], new: dict[str, Any], phase: str) -> list[CheckResult]:
    """ECC counters and remapped-row counts that grew, remapped-row flags that turned true."""
    grew, out = "(grew during %s)" % PHASE_WORDS[phase], []
    for counter, status in ECC_COUNTERS:
        before, after = old.get(counter), new.get(counter)
        if _grew(before, after):
            out.append(_finding(check_id, status, label, counter, before, after, SOURCE_ECC, grew))
    old_remap, new_remap = _block(old, "remapped_rows"), _block(new, "remapped_rows")
    for key, status in REMAP_COUNTS:
        before, after = old_remap.get(key), new_remap.get(key)
        if _grew(before, after):
            out.append(_finding(check_id, status, label, "remapped_rows.%s" % key, before, after, SOURCE_ECC, grew))
    for key in REMAP_FLAGS:
        if new_remap.get(key) is True and old_remap.get(key) is not True:
            out.append(_finding(check_id, FAIL, label, "remapped_rows.%s" % key, old_remap.get(key), True, SOURCE_ECC,
                                "(set during %s)" % PHASE_WORDS[phase]))
    return out


def _pcie_changes(check_id: str, label: str, old: dict[str, Any], new: dict[str, Any]) -> list[CheckResult]:
    """A PCIe link narrower (fail) or at a lower generation (warn) than in the first reading."""
    out = []
    before, after = old.get("pcie_link_width_current"), new.get("pcie_link_width_current")
    if _is_count(before) and _is_count(after) and after < before:
        out.append(_finding(check_id, FAIL, label, "pcie_link_width_current", before, after, SOURCE_PCIE,
                            "(x%d -> x%d: the link trained narrower)" % (before, after)))
    before, after = old.get("pcie_link_gen_current"), new.get("pcie_link_gen_current")
    if _is_count(before) and _is_count(after) and after < before:
        out.append(_finding(check_id, WARN, label, "pcie_link_gen_current", before, after, SOURCE_PCIE,
                            "(idle power saving also lowers the generation; the facts check holds it against the "
                            "maximum)"))
    return out


def _nvlink_changes(check_id: str, label: str, old: dict[str, Any], new: dict[str, Any],
                    phase: str) -> list[CheckResult]:
    """NVLink replay / recovery / CRC counters that grew, per link."""
    old_links, new_links = _links(old), _links(new)
    out = []
    for name in sorted(new_links, key=lambda text: (len(text), text)):
        for counter in NVLINK_COUNTERS:
            before, after = (old_links.get(name) or {}).get(counter), new_links[name].get(counter)
            if _grew(before, after):
                out.append(_finding(check_id, FAIL, "%s/link%s" % (label, name), "nvlink %s" % counter, before, after,
                                    SOURCE_NVLINK, "(grew during %s)" % PHASE_WORDS[phase]))
    return out


def _gpus(check_id: str, before: dict[str, Any], after: dict[str, Any], phase: str,
          window_s: float | None = None) -> list[CheckResult]:
    old_gpus = {_gpu_key(gpu): gpu for gpu in before.get("gpus") or [] if isinstance(gpu, dict)}
    new_gpus = {_gpu_key(gpu): gpu for gpu in after.get("gpus") or [] if isinstance(gpu, dict)}
    out = []
    for key, gpu in old_gpus.items():
        if key not in new_gpus:
            out.append(_finding(check_id, FAIL, _gpu_label(gpu), "present", True, False, SOURCE_ECC,
                                "(%s %s no longer listed after %s: fallen off the bus?)"
                                % (gpu.get("pci_bus_id"), key, PHASE_WORDS[phase])))
    for key, gpu in new_gpus.items():
        if key in old_gpus:
            out.extend(_gpu_changes(check_id, old_gpus[key], gpu, phase))
    # PCIe replay counters: any growth between the readings fails (gpu_rules.py pcie_replay_growth, also used elsewhere)
    for item in pcie_replay_growth(list(old_gpus.values()), list(new_gpus.values()), check_id, window_s=window_s,
                                   during=PHASE_WORDS[phase]):
        if item["status"] == FAIL:
            out.append(item)
    if not out:
        out.append(result(check_id, PASS, "%d GPUs: no ECC, remapped-row, PCIe link, PCIe replay or NVLink counter "
                          "worse after %s" % (len(new_gpus), PHASE_WORDS[phase]), measured=0, expected=0,
                          threshold_source=SOURCE_ECC, subject="GPUs"))
    return out


# --- IB ports ------------------------------------------------------------------------------------


def _ports(nic: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ports = {}
    for device in nic.get("rdma") or []:
        if not isinstance(device, dict):
            continue
        for port in device.get("ports") or []:
            if isinstance(port, dict):
                ports["%s/%s" % (device.get("device"), port.get("port"))] = port
    return ports


def _ib(check_id: str, before: dict[str, Any], after: dict[str, Any], phase: str,
        _window_s: float | None = None) -> list[CheckResult]:
    old_ports, new_ports = _ports(before), _ports(after)
    out = []
    for name in sorted(old_ports):
        old, new = old_ports[name], new_ports.get(name)
        if new is None:
            out.append(
                _finding(check_id, FAIL, name, "port", "listed", "absent", SOURCE_IB, "(after %s)" % PHASE_WORDS[phase])
            )
            continue
        if old.get("state") == "Active" and new.get("state") != "Active":
            out.append(_finding(check_id, FAIL, name, "state", old.get("state"), new.get("state"), SOURCE_IB,
                                "(the port left Active during %s)" % PHASE_WORDS[phase]))
        for counter in ERROR_COUNTERS:
            before_value = (old.get("counters") or {}).get(counter)
            after_value = (new.get("counters") or {}).get(counter)
            if _grew(before_value, after_value):
                out.append(_finding(check_id, FAIL, name, counter, before_value, after_value, SOURCE_IB,
                                    "(grew during %s)" % PHASE_WORDS[phase]))
    if not out:
        out.append(result(check_id, PASS, "%d IB ports: no error counter grew and none left Active during %s"
                          % (len(new_ports), PHASE_WORDS[phase]), measured=0, expected=0, threshold_source=SOURCE_IB,
                          subject="IB ports"))
    return out


# --- the phase -----------------------------------------------------------------------------------


def _readable(facts: Any, group: str) -> TypeGuard[dict[str, Any]]:
    """Whether ``facts`` of ``group`` hold what this check compares (a kernel log that was read)."""
    if not isinstance(facts, dict):
        return False
    if group == "host":
        return (facts.get("xid") or {}).get("state") == "read"
    return True


# How each fact group's two readings are compared: (check id, first reading, re-read, phase, seconds between)
Compare = Callable[[str, dict[str, Any], dict[str, Any], str, float | None], list[CheckResult]]
COMPARE: dict[str, Compare] = {"host": _kernel_log, "gpu": _gpus, "nic": _ib}


def _seconds_between(first: Any, then: Any) -> float | None:
    """Seconds from the first reading's time to the re-read's (the run record's ``%Y-%m-%dT%H:%M:%SZ``), else None.

    The first time is when the facts phase finished, just after the counters were read: the window is about the
    time between the two readings of the counters.
    """
    try:
        start, end = (datetime.datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ") for value in (first, then))
    except ValueError:
        return None
    seconds = (end - start).total_seconds()
    return seconds if seconds > 0 else None


def judge_phase(node: NodeContext, phase: str) -> list[CheckResult]:
    """Both check ids of ``phase`` for ``node`` (a NodeContext)."""
    reading_id = "after_stress.%s.reading" % phase
    readings = node.settings.get(READINGS_SETTING) or {}
    reading = readings.get(phase) if isinstance(readings, dict) else None
    required = phase in (node.settings.get(REQUIRED_AFTER_STRESS_SETTING) or [])
    if not isinstance(reading, dict):
        if not required:
            return []  # the phase was not asked of this node: nothing to say
        return [result(reading_id, SKIP, "not verified: no health re-read after %s recorded (the phase was skipped or "
                       "failed)" % PHASE_WORDS[phase], threshold_source=SOURCE_READING)]
    why = _not_comparable(reading, node.settings.get(FACTS_READ_SETTING), PHASE_WORDS[phase])
    if why:
        return [result(reading_id, SKIP, why, threshold_source=SOURCE_READING)]
    return _compare_reading(node, phase, reading)


def _not_comparable(reading: dict[str, Any], first: Any, words: str) -> str | None:
    """Why the re-read cannot be held against the first reading (``first``: its time), else None."""
    if reading.get("before") != first:
        return ("not verified: the re-read after %s follows the facts read at %s, not this run's first reading (%s): "
                "readings of different runs are never compared" % (words, reading.get("before"), first))
    if reading.get("unreachable"):
        return "not verified: the node did not answer the re-read after %s: %s" % (words, reading["unreachable"])
    return None


def _compare_reading(node: NodeContext, phase: str, reading: dict[str, Any]) -> list[CheckResult]:
    """What changed per fact group read both times, then whether the re-read covered the first reading."""
    check_id = "after_stress.%s" % phase
    window_s = _seconds_between(node.settings.get(FACTS_READ_SETTING), reading.get("read"))
    after_facts = reading.get("facts") or {}
    errors = reading.get("fact_errors") or {}
    out: list[CheckResult] = []
    compared: list[str] = []
    lost: list[str] = []
    unread: list[str] = []
    for group, compare in COMPARE.items():
        before, after = node.group(group), after_facts.get(group)
        if not _readable(before, group):
            unread.append(group)
        elif not _readable(after, group):
            why = (
                errors.get(group)
                or (((after or {}).get("xid") or {}).get("reason") if group == "host" else None)
                or "not read again"
            )
            lost.append("%s (%s): %s" % (group, GROUP_WORDS[group], why))
        else:
            compared.append(group)
            out.extend(compare(check_id, before, after, phase, window_s))
    out.append(_coverage_result(phase, reading, compared, lost, unread))
    return out


def _coverage_result(phase: str, reading: dict[str, Any], compared: list[str], lost: list[str],
                     unread: list[str]) -> CheckResult:
    """``after_stress.<phase>.reading``: every group of the first reading compared (pass), else why not (skip)."""
    reading_id, words = "after_stress.%s.reading" % phase, PHASE_WORDS[phase]
    if lost:
        return result(reading_id, SKIP, "not verified after %s: %s" % (words, "; ".join(lost)),
                      threshold_source=SOURCE_READING)
    if compared:
        note = "; not in the first reading either: %s" % ", ".join(unread) if unread else ""
        return result(reading_id, PASS, "health read again after %s (%s) and compared with the first reading%s"
                      % (words, reading.get("read"), note), measured=compared, expected=compared,
                      threshold_source=SOURCE_READING)
    return result(reading_id, SKIP, "not verified after %s: the first reading had none of %s to compare"
                  % (words, ", ".join(COMPARE)), threshold_source=SOURCE_READING)


@node_check("after_stress.benchmarks")
def after_benchmarks(node: NodeContext) -> list[CheckResult]:
    """The health facts after the benchmarks against the first reading."""
    return judge_phase(node, "benchmarks")


@node_check("after_stress.burn_in")
def after_burn_in(node: NodeContext) -> list[CheckResult]:
    """The health facts after the burn-in against the first reading."""
    return judge_phase(node, "burn_in")
