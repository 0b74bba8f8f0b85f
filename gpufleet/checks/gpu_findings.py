# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the per-GPU checks of gpufleet/checks/gpu.py find at fault in one GPU (pure), worded as results.

Each function takes one GPU that printed what its check reads and gives that check's findings for it: none when
nothing is at fault, else the fail or warning with its message, figures and source. The checks stay in gpu.py (the
engine runs a family's checks by the module that declares them): they choose the GPUs, count those judged and say
pass or skip (gpu_rules.py :func:`collapse`); gpu.py's module docstring says why each is judged as it is.

Here: ECC mode and uncorrectable ECC errors with AzNHC's SRAM/DRAM limits (``gpu.ecc``, ``gpu.ecc_errors``), the
GPU Recovery Action, retired pages, remapped rows, MIG mode, processes on the GPU, the NVLink fabric registration and
the clock event reasons.
"""

from __future__ import annotations

from typing import Any

from gpufleet.checks.gpu_rules import (AZNHC_ECC_SOURCE, DRAM_COUNT_LIMIT, HW_THROTTLE, NVIDIA_SMI, REASON_WORDS,
                                       RECOVERY_SOURCE, SRAM_CORRECTABLE_LIMIT, SW_THROTTLE, aznhc_ecc_findings, label)
from gpufleet.checks.model import FAIL, SKIP, WARN, CheckResult, result
from gpufleet.facts.shapes import Gpu, RemappedRows, RetiredPages

# --- memory: ECC, retired pages, remapped rows ------------------------------------------------------------------


def ecc_mode_findings(gpu: Gpu, kind: str) -> list[CheckResult]:
    """``gpu.ecc`` of a GPU that prints its ECC mode (``kind``: its brand, not consumer): off fails on a data-center
    GPU and warns on a workstation GPU; on but set to turn off at the next reboot warns."""
    current, pending = gpu.get("ecc_mode_current"), gpu.get("ecc_mode_pending")
    if current is False:
        status = FAIL if kind == "datacenter" else WARN
        return [result("gpu.ecc", status, "%s (%s) has ECC disabled, expected enabled on a %s GPU"
                       % (label(gpu), gpu.get("name"), kind),
                       measured=False, expected=True, threshold_source=NVIDIA_SMI, subject=label(gpu))]
    if pending is False:
        return [result("gpu.ecc", WARN, "%s: ECC is on but set to turn off at the next reboot" % label(gpu),
                       measured={"current": current, "pending": pending}, expected=True,
                       threshold_source=NVIDIA_SMI,
                       subject=label(gpu))]
    return []


def ecc_error_findings(gpu: Gpu, volatile: int | None, aggregate: int | None) -> list[CheckResult]:
    """``gpu.ecc_errors`` of a GPU that prints an uncorrectable count: AzNHC's SRAM/DRAM limits fail, uncorrectable
    errors since boot (``volatile``) fail, over the GPU's life (``aggregate``) warn."""
    aznhc = aznhc_ecc_findings(gpu)
    if aznhc:
        counts = dict((key[len("ecc_errors_"):], gpu.get(key)) for key in sorted(gpu)
                      if key.startswith("ecc_errors_") and ("_sram_" in key or "_dram_" in key))
        return [result("gpu.ecc_errors", FAIL, "%s: %s" % (label(gpu), ", ".join(aznhc)), measured=counts,
                       expected={"sram_uncorrectable": 0, "sram_correctable_max": SRAM_CORRECTABLE_LIMIT,
                                 "dram_max": DRAM_COUNT_LIMIT},
                       threshold_source=AZNHC_ECC_SOURCE, subject=label(gpu))]
    if volatile:
        return [result("gpu.ecc_errors", FAIL, "%s: %d uncorrectable ECC errors since boot, expected 0"
                       % (label(gpu), volatile),
                       measured=volatile, expected=0, threshold_source=NVIDIA_SMI, subject=label(gpu))]
    if aggregate:
        return [result("gpu.ecc_errors", WARN,
                       "%s: %d uncorrectable ECC errors over its life (none since boot)"
                       % (label(gpu), aggregate),
                       measured=aggregate, expected=0, threshold_source=NVIDIA_SMI, subject=label(gpu))]
    return []


def retired_page_findings(gpu: Gpu, pages: RetiredPages) -> list[CheckResult]:
    """``gpu.retired_pages`` of a GPU that reports page retirement: pending fails, pages retired warn."""
    sbe, dbe = pages.get("single_bit_ecc") or 0, pages.get("double_bit_ecc") or 0
    counts = {"single_bit_ecc": sbe, "double_bit_ecc": dbe, "pending": pages.get("pending")}
    if pages.get("pending") is True:
        return [result("gpu.retired_pages", FAIL,
                       "%s: page retirement pending (%d double-bit, %d single-bit pages retired): "
                       "needs a GPU reset, RMA candidate" % (label(gpu), dbe, sbe), measured=counts,
                       expected={"pending": False},
                       threshold_source=NVIDIA_SMI, subject=label(gpu))]
    if sbe or dbe:
        return [result("gpu.retired_pages", WARN, "%s: %d double-bit and %d single-bit ECC pages retired"
                       % (label(gpu), dbe, sbe),
                       measured=counts, expected={"single_bit_ecc": 0, "double_bit_ecc": 0},
                       threshold_source=NVIDIA_SMI,
                       subject=label(gpu))]
    return []


def row_remap_findings(gpu: Gpu, rows: RemappedRows) -> list[CheckResult]:
    """``gpu.row_remap`` of a GPU that reports row remapping: pending or failed fails, rows remapped for uncorrectable
    errors warn."""
    if rows.get("failure") is True or rows.get("pending") is True:
        what = "row remapping FAILED (RMA)" if rows.get("failure") else "row remapping pending (needs a GPU reset)"
        return [result("gpu.row_remap", FAIL, "%s: %s, %s uncorrectable rows remapped"
                       % (label(gpu), what, rows.get("uncorrectable")),
                       measured=rows, expected={"pending": False, "failure": False},
                       threshold_source=NVIDIA_SMI, subject=label(gpu))]
    if uncorrectable := rows.get("uncorrectable"):
        return [result("gpu.row_remap", WARN, "%s: %d rows remapped for uncorrectable errors"
                       % (label(gpu), uncorrectable),
                       measured=rows, expected={"uncorrectable": 0}, threshold_source=NVIDIA_SMI,
                       subject=label(gpu))]
    return []


# --- state: recovery action, MIG, processes, fabric, clock event reasons ----------------------------------------


def recovery_action_findings(gpu: Gpu, action: str) -> list[CheckResult]:
    """``gpu.recovery_action`` of a GPU that prints one: anything but None fails, naming the action."""
    if action.strip().lower() != "none":
        return [result("gpu.recovery_action", FAIL,
                       "%s: the driver asks for a recovery action: %s" % (label(gpu), action),
                       measured=action, expected="None", threshold_source=RECOVERY_SOURCE,
                       subject=label(gpu))]
    return []


def mig_findings(gpu: Gpu, mode: str) -> list[CheckResult]:
    """``gpu.mig`` of a GPU that prints its MIG mode: enabled fails, naming its MIG devices."""
    if mode.lower() == "enabled":
        listed = gpu.get("mig_devices")
        devices = " (%d MIG devices)" % len(listed) if listed else ""
        return [result("gpu.mig", FAIL, "%s has MIG enabled%s, expected whole GPUs" % (label(gpu), devices),
                       measured="Enabled", expected="Disabled",
                       threshold_source=NVIDIA_SMI, subject=label(gpu))]
    return []


def process_findings(gpu: Gpu, procs: list[dict[str, Any]]) -> list[CheckResult]:
    """``gpu.processes`` of a GPU that prints its process list: any compute process fails, naming the first three."""
    if procs:
        used = sum(proc.get("used_memory_mib") or 0 for proc in procs)
        shown = ", ".join("pid %s %s" % (proc.get("pid"), proc.get("name")) for proc in procs[:3])
        return [result("gpu.processes", FAIL, "%s runs %d process(es) using %d MiB (%s%s): the GPU is not free"
                       % (label(gpu), len(procs), used, shown, ", ..." if len(procs) > 3 else ""),
                       measured=len(procs), expected=0, threshold_source="a freshly rented GPU runs nothing",
                       subject=label(gpu))]
    return []


def fabric_not_printed(required: Any, source: str | None, registrar: str) -> list[CheckResult]:
    """``gpu.fabric`` when no GPU prints a Fabric state: not judged, saying why it matters where it does."""
    if required and registrar != "Fabric Manager":
        return [result("gpu.fabric", SKIP, "not judged: NVLink spans nodes but nvidia-smi prints no Fabric state "
                       "(driver too old, or -q not collected)", threshold_source=source)]
    if required:
        return [result("gpu.fabric", SKIP,
                       "not judged: NVSwitch system but nvidia-smi prints no Fabric state (A100 and older "
                       "drivers do not); check nvidia-fabricmanager by hand", threshold_source=source)]
    return [result("gpu.fabric", SKIP, "not judged: not an NVSwitch system and no Fabric state printed")]


def fabric_findings(states: list[tuple[Gpu, str, str | None]], required: Any, source: str | None,
                    registrar: str) -> list[CheckResult]:
    """``gpu.fabric``: a GPU whose registration is not Completed / Success fails (warns where the fabric is known
    not to be required)."""
    items = []
    for gpu, state, status in states:
        if state.lower() != "completed" or (status or "Success").lower() != "success":
            items.append(result("gpu.fabric", FAIL if required is not False else WARN,
                                "%s fabric %s / %s, expected Completed / Success (%s)"
                                % (label(gpu), state, status, registrar),
                                measured={"state": state, "status": status},
                                expected={"state": "Completed", "status": "Success"},
                                threshold_source=source or NVIDIA_SMI, subject=label(gpu)))
    return items


def throttle_findings(gpu: Gpu, reasons: dict[str, bool | None]) -> list[CheckResult]:
    """``gpu.throttle`` of a GPU that reports its clock event reasons: a hardware slowdown active fails, a software
    cap warns."""
    hard = [name for name in HW_THROTTLE if reasons.get(name) is True]
    soft = [name for name in SW_THROTTLE if reasons.get(name) is True]
    if hard or soft:
        words = ", ".join(REASON_WORDS[name] for name in hard + soft)
        return [result("gpu.throttle", FAIL if hard else WARN,
                       "%s clocks held down: %s Active (clocks %s/%s MHz SM)"
                       % (label(gpu), words, gpu.get("clocks_sm_mhz"), gpu.get("clocks_max_sm_mhz")),
                       measured=hard + soft, expected=[],
                       threshold_source=NVIDIA_SMI + " Clocks Event Reasons", subject=label(gpu))]
    return []
