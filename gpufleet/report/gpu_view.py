# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's GPU table: every GPU's fields, values unlike the fleet's majority (same GPU model) or the node's
majority flagged."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from gpufleet.report.common import NodeErrors, Record, cell_text, facts_group, gpus_of, majority, note_error

# GPU fields compared with the fleet's majority among GPUs of the same model, and with the node's majority.
GPU_FLEET_FIELDS = ("vbios_version", "board_part_number", "memory_total_mib", "power_limit_w", "clocks_max_sm_mhz",
                    "driver_version")
GPU_NODE_FIELDS = ("name", "pcie_link_gen_current", "pcie_link_width_current", "ecc_mode_current", "mig_mode_current")
GPU_COLUMNS = (
    ("index", "#"), ("name", "model"), ("driver_version", "driver"), ("vbios_version", "VBIOS"),
    ("board_part_number", "board part"), ("memory_total_mib", "memory MiB"), ("power_limit_w", "power limit W"),
    ("clocks_max_sm_mhz", "max SM MHz"), ("pcie_link_gen_current", "PCIe gen"),
    ("pcie_link_width_current", "PCIe width"), ("ecc_mode_current", "ECC"), ("mig_mode_current", "MIG"),
    ("temperature_c", "temp C"), ("pci_bus_id", "bus id"), ("serial", "serial"),
)

# a field's majority: (value or "no majority: ..." text, tie) (common.majority)
Majority = tuple[str | None, bool]
# field -> GPU model (as text) -> the majority of the fleet's GPUs of that model
FleetMajority = dict[str, dict[str, Majority]]
GpuValues = dict[str, Any]


class GpuCell(NamedTuple):
    """A cell of the GPU table: its text, and for a flagged value the majority it is unlike and whose (``fleet`` or
    ``node``). A tuple, not a dict: a 10,000-node report holds 1.2 million of them (110 MB as dicts)."""

    text: str
    flag: bool
    majority: str | None
    scope: str | None


def _gpu_values(record: Record) -> list[GpuValues]:
    gpu = facts_group(record, "gpu") or {}
    rows = []
    for item in gpus_of(record):
        values = {field: item.get(field) for field, _label in GPU_COLUMNS}
        values["driver_version"] = gpu.get("driver_version")
        rows.append(values)
    return rows


def gpu_table(records: list[Record],
              errors: NodeErrors | None = None) -> tuple[dict[str, list[list[GpuCell]]], list[dict[str, Any]]]:
    """``(rows by host, flagged)``: every GPU's fields, with values unlike the fleet's or the node's majority flagged.

    A field of GPU_FLEET_FIELDS is held against the majority of the fleet's GPUs of the same
    model (a mixed fleet is not flagged for being mixed); a field of GPU_NODE_FIELDS against the
    majority of the GPUs of its own node. ``flagged`` lists ``{host, gpu, field, value, majority, scope}``.
    A node whose GPU rows cannot be built has none, the reason in ``errors`` (host -> [text]).
    """
    per_host = {}
    for record in records:
        try:
            per_host[str(record.get("host"))] = _gpu_values(record)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's GPUs, not the table
            note_error(errors, record.get("host"), "its GPU rows", exc)
    fleet_majority = _fleet_majority(per_host)
    flagged: list[dict[str, Any]] = []
    table = {}
    for host, rows in per_host.items():
        try:
            table[host], found = _gpu_cells(host, rows, fleet_majority)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's GPUs, not the table
            note_error(errors, host, "its GPU rows", exc)
            continue
        flagged += found
    return table, flagged


def _fleet_majority(per_host: dict[str, list[GpuValues]]) -> FleetMajority:
    """Per field of GPU_FLEET_FIELDS, the majority value among the fleet's GPUs of each model."""
    fleet_majority = {}
    for field in GPU_FLEET_FIELDS:
        by_model: dict[str, list[str]] = {}
        for rows in per_host.values():
            for values in rows:
                if values.get(field) is not None:
                    # keyed by the name as text: a name of another type (a forged record) is a model like any other
                    by_model.setdefault(cell_text(values.get("name")), []).append(cell_text(values[field]))
        fleet_majority[field] = {model: majority(seen) for model, seen in by_model.items()}
    return fleet_majority


# each column's field and what its values are held against: the fleet's majority, the node's, or nothing
_COLUMN_SCOPES = tuple((field, "fleet" if field in GPU_FLEET_FIELDS else "node" if field in GPU_NODE_FIELDS else None)
                       for field, _label in GPU_COLUMNS)
_NO_MAJORITY: Majority = (None, False)


@functools.lru_cache(maxsize=65536)
def _plain_cell(text: str) -> GpuCell:
    """A cell not flagged, one per text: a fleet's GPUs share most of their values (a 10,000-node report has 1.2
    million cells, a tenth of them distinct)."""
    return GpuCell(text, False, None, None)


def _gpu_cells(host: str, rows: list[GpuValues],
               fleet_majority: FleetMajority) -> tuple[list[list[GpuCell]], list[dict[str, Any]]]:
    """``(cells per GPU, flagged)`` of one node's GPU rows (:func:`gpu_table`): a value of a field held against a
    majority (the fleet's GPUs of the same model, or the node's) is flagged when it differs from it, or when there is
    none (a tie); no value is never flagged."""
    node_majority = {field: majority([cell_text(values[field]) for values in rows if values.get(field) is not None])
                     for field in GPU_NODE_FIELDS}
    out, flagged = [], []
    for values in rows:
        model = cell_text(values.get("name"))
        cells = []
        for field, scope in _COLUMN_SCOPES:
            value = values.get(field)
            text = cell_text(value)
            held, tie = _NO_MAJORITY if value is None or scope is None else (
                fleet_majority[field].get(model, _NO_MAJORITY) if scope == "fleet" else node_majority[field])
            if held is None or not (tie or text != held):
                cells.append(_plain_cell(text))
                continue
            flagged.append({"host": host, "gpu": cell_text(values.get("index")), "field": field, "value": text,
                            "majority": held, "scope": scope})
            cells.append(GpuCell(text, True, held, scope))
        out.append(cells)
    return out, flagged
