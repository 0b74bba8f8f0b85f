# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-GPU schema shared by the three nvidia-smi query parsers, as data: one row per field.

``nvidia-smi -q -x`` (:mod:`~gpufleet.parsers.nvidia_smi_xml`), ``nvidia-smi -q``
(:mod:`~gpufleet.parsers.nvidia_smi_query_text`) and ``nvidia-smi --query-gpu=... --format=csv``
(:mod:`~gpufleet.parsers.nvidia_smi_csv`) return the same per-GPU keys. Each key is one
:class:`GpuField` row of :data:`GPU_FIELDS` (in the order of the parsers' dicts), naming where each
format prints it and how its value is read; each parser walks the table with its own reader
(:func:`read_record`), so a new field is one row here (plus its line in the parsers' docstrings).

Where a format prints a field (each a tuple of alternatives; ``()`` when the format has no such field,
which then reads None):

- ``xml``: element paths under ``<gpu>`` (``"fb_memory_usage/total"``); the first alternative
  that reads a value wins.
- ``text``: ``-q`` key paths under the ``GPU <bus id>`` section, as the text prints them (case and
  spacing are ignored): ``"FB Memory Usage/Total"``; the first alternative that reads a value wins.
- ``csv``: ``--query-gpu`` field names; the first the header has is read (nvidia-smi prints each
  field under the name it was queried by, so at most one is there). Its unit is the header's
  (``memory.total [MiB]``), not the table's.

In ``xml`` and ``text`` paths one step may name alternatives, ``a|b``: the first child present is
taken (``"gpu_power_readings|power_readings/power_draw"``: whichever container the DTD has).

Converters (:data:`Convert`), the ones the parsers had before the table, each format reading them
its own way:

- ``text``: the value as printed (None for an N/A spelling or a pasted placeholder).
- ``int``: a whole number (the ``-q`` reader refuses a decimal one; XML and CSV read what
  common's ``parse_number`` gives); ``unit`` is the suffix the value carries (``-q`` requires it).
- ``number``: an int or a float (power readings: ``"700.00 W"``).
- ``link_width``: a PCIe link width, ``"16x"`` -> 16.
- ``enabled_disabled``, ``yes_no``: a bool; ``-q`` takes only the words its field prints
  (``Enabled``/``Disabled``, ``Yes``/``No``), XML and CSV any yes/no spelling.
- ``code``: structural; each parser computes it (lists of processes, MIG devices, ECC sums over
  memory types, records of several fields): the row keeps its place in the dict, says which outputs
  carry it, and its paths name the block it is read from.

``outputs`` names the parsers whose dicts carry the key: the CSV parser has no
``gpu_recovery_action`` nor per-memory-kind ECC counts, ``replays_since_reset``,
``pcie_link_gen_device_max`` and ``errors`` are the ``-q`` text's alone, ``mig_devices`` is not in it.

Smaller tables of the same rows: :data:`FABRIC_FIELDS`, :data:`REMAPPED_ROWS_FIELDS` and
:data:`RETIRED_PAGES_FIELDS` (paths relative to their block; CSV names whole), and
:data:`CLOCK_EVENT_REASONS` (one row per reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping, Sequence

Output = Literal["xml", "text", "csv"]
Convert = Literal["text", "int", "number", "link_width", "enabled_disabled", "yes_no", "code"]

ALL_OUTPUTS: frozenset[Output] = frozenset(("xml", "text", "csv"))
_XML_TEXT: frozenset[Output] = frozenset(("xml", "text"))
_XML_CSV: frozenset[Output] = frozenset(("xml", "csv"))
_TEXT: frozenset[Output] = frozenset(("text",))


@dataclass(frozen=True)
class GpuField:
    """One field of the schema: its key, how it is read, and where each format prints it (module docstring)."""

    key: str
    convert: Convert
    unit: str | None
    xml: tuple[str, ...]
    text: tuple[str, ...]
    csv: tuple[str, ...]
    outputs: frozenset[Output] = ALL_OUTPUTS

    def where(self, output: Output) -> tuple[str, ...]:
        """The alternatives ``output`` prints this field under (``()``: none)."""
        if output == "xml":
            return self.xml
        if output == "text":
            return self.text
        return self.csv


def _alternatives(where: str | tuple[str, ...]) -> tuple[str, ...]:
    return (where,) if isinstance(where, str) else where


def _row(key: str, convert: Convert, unit: str | None = None, *, xml: str | tuple[str, ...] = (),
         text: str | tuple[str, ...] = (), csv: str | tuple[str, ...] = (),
         outputs: frozenset[Output] = ALL_OUTPUTS) -> GpuField:
    """A row, each place given as one path or a tuple of alternatives."""
    return GpuField(key, convert, unit, _alternatives(xml), _alternatives(text), _alternatives(csv), outputs)


def _ecc_rows() -> list[GpuField]:
    """``ecc_errors_{volatile,aggregate}_{sram,dram}_{correctable,uncorrectable}``: each parser sums the lines of one
    memory kind (``sram_uncorrectable`` or its parity and SEC-DED parts); not --query-gpu fields."""
    return [
        _row("ecc_errors_%s_%s_%s" % (scope, memory, count), "code", xml="ecc_errors/%s" % scope,
             text="ECC Errors/%s" % scope.title(), outputs=_XML_TEXT)
        for memory in ("sram", "dram")
        for scope in ("volatile", "aggregate")
        for count in ("correctable", "uncorrectable")
    ]


def _ecc_total_rows() -> list[GpuField]:
    """``ecc_errors_{volatile,aggregate}_{correctable,uncorrectable}``: summed over memory types (or the old layout's
    Single/Double Bit totals); CSV reads ``ecc.errors.{corrected,uncorrected}.{scope}.total`` or sums the types."""
    return [
        _row("ecc_errors_%s_%s" % (scope, count), "code", xml="ecc_errors/%s" % scope,
             text="ECC Errors/%s" % scope.title(),
             csv="ecc.errors.%s.%s.*" % ("corrected" if count == "correctable" else "uncorrected", scope))
        for scope in ("volatile", "aggregate") for count in ("correctable", "uncorrectable")
    ]


# The per-GPU keys, in the order of the parsers' dicts.
GPU_FIELDS: tuple[GpuField, ...] = (
    # the XML and -q text number GPUs by position (nvidia-smi lists them in index order)
    _row("index", "int", csv="index"),
    # -q prints it in the section header ("GPU 00000000:53:00.0"); the XML falls back to <gpu id="...">
    _row("pci_bus_id", "text", xml="pci/pci_bus_id", csv=("pci.bus_id", "gpu_bus_id")),
    _row("name", "text", xml="product_name", text="Product Name", csv=("name", "gpu_name")),
    _row("product_brand", "text", xml="product_brand", text="Product Brand"),
    _row("product_architecture", "text", xml="product_architecture", text="Product Architecture"),
    _row("uuid", "text", xml="uuid", text="GPU UUID", csv=("uuid", "gpu_uuid")),
    _row("serial", "text", xml="serial", text="Serial Number", csv=("serial", "gpu_serial")),
    _row("minor_number", "int", xml="minor_number", text="Minor Number"),
    _row("board_part_number", "text", xml="board_part_number", text="Board Part Number"),
    _row("vbios_version", "text", xml="vbios_version", text="VBIOS Version", csv=("vbios_version", "vbios")),
    _row("persistence_mode", "enabled_disabled", xml="persistence_mode", text="Persistence Mode",
         csv="persistence_mode"),
    _row("mig_mode_current", "text", xml="mig_mode/current_mig", text="MIG Mode/Current", csv="mig.mode.current"),
    _row("memory_total_mib", "int", "MiB", xml="fb_memory_usage/total", text="FB Memory Usage/Total",
         csv="memory.total"),
    _row("memory_used_mib", "int", "MiB", xml="fb_memory_usage/used", text="FB Memory Usage/Used", csv="memory.used"),
    _row("ecc_mode_current", "enabled_disabled", xml="ecc_mode/current_ecc", text="ECC Mode/Current",
         csv="ecc.mode.current"),
    _row("ecc_mode_pending", "enabled_disabled", xml="ecc_mode/pending_ecc", text="ECC Mode/Pending",
         csv="ecc.mode.pending"),
    *_ecc_total_rows(),
    *_ecc_rows(),
    # nested records: RETIRED_PAGES_FIELDS and REMAPPED_ROWS_FIELDS, None when every field is N/A
    _row("retired_pages", "code", xml="retired_pages", text="Retired Pages", csv="retired_pages.*"),
    _row("remapped_rows", "code", xml="remapped_rows", text="Remapped Rows", csv="remapped_rows.*"),
    _row("gpu_recovery_action", "text", xml="gpu_recovery_action", text="GPU Recovery Action", outputs=_XML_TEXT),
    _row("temperature_c", "int", "C", xml="temperature/gpu_temp", text="Temperature/GPU Current Temp",
         csv="temperature.gpu"),
    # absolute temperatures only: the relative "... T.Limit Temp" rows of R535+ stay in raw
    _row("temperature_slowdown_c", "int", "C", xml="temperature/gpu_temp_slow_threshold",
         text="Temperature/GPU Slowdown Temp"),
    _row("temperature_shutdown_c", "int", "C", xml="temperature/gpu_temp_max_threshold",
         text="Temperature/GPU Shutdown Temp"),
    _row("power_draw_w", "number", "W",
         xml=("gpu_power_readings|power_readings/power_draw", "gpu_power_readings|power_readings/average_power_draw",
              "gpu_power_readings|power_readings/instant_power_draw"),
         text=("GPU Power Readings|Power Readings/Power Draw", "GPU Power Readings|Power Readings/Average Power Draw",
               "GPU Power Readings|Power Readings/Instantaneous Power Draw"),
         csv=("power.draw", "power.draw.average", "power.draw.instant")),
    _row("power_limit_w", "number", "W",
         xml=("gpu_power_readings|power_readings/enforced_power_limit",
              "gpu_power_readings|power_readings/current_power_limit"),
         text=("GPU Power Readings|Power Readings/Current Power Limit",
               "GPU Power Readings|Power Readings/Enforced Power Limit"),
         csv=("enforced.power.limit", "power.limit")),
    _row("power_max_limit_w", "number", "W", xml="gpu_power_readings|power_readings/max_power_limit",
         text="GPU Power Readings|Power Readings/Max Power Limit", csv="power.max_limit"),
    _row("clocks_graphics_mhz", "int", "MHz", xml="clocks/graphics_clock", text="Clocks/Graphics",
         csv=("clocks.current.graphics", "clocks.gr")),
    _row("clocks_sm_mhz", "int", "MHz", xml="clocks/sm_clock", text="Clocks/SM",
         csv=("clocks.current.sm", "clocks.sm")),
    _row("clocks_mem_mhz", "int", "MHz", xml="clocks/mem_clock", text="Clocks/Memory",
         csv=("clocks.current.memory", "clocks.mem")),
    _row("clocks_max_graphics_mhz", "int", "MHz", xml="max_clocks/graphics_clock", text="Max Clocks/Graphics",
         csv=("clocks.max.graphics", "clocks.max.gr")),
    _row("clocks_max_sm_mhz", "int", "MHz", xml="max_clocks/sm_clock", text="Max Clocks/SM", csv="clocks.max.sm"),
    _row("clocks_max_mem_mhz", "int", "MHz", xml="max_clocks/mem_clock", text="Max Clocks/Memory",
         csv=("clocks.max.memory", "clocks.max.mem")),
    _row("clocks_applications_graphics_mhz", "int", "MHz", xml="applications_clocks/graphics_clock",
         text="Applications Clocks/Graphics", csv="clocks.applications.graphics"),
    _row("clocks_applications_mem_mhz", "int", "MHz", xml="applications_clocks/mem_clock",
         text="Applications Clocks/Memory", csv="clocks.applications.memory"),
    # one flag per CLOCK_EVENT_REASONS row; CSV also reads the .active/.supported bitmasks
    _row("clock_event_reasons", "code", xml="clocks_event_reasons|clocks_throttle_reasons",
         text="Clocks Event Reasons|Clocks Throttle Reasons", csv="clocks_event_reasons.*"),
    _row("pcie_link_gen_current", "int", xml="pci/pci_gpu_link_info/pcie_gen/current_link_gen",
         text="PCI/GPU Link Info/PCIe Generation/Current", csv=("pcie.link.gen.current", "pcie.link.gen.gpucurrent")),
    # "Max": what GPU and host allow together (the GPU's own maximum is pcie_link_gen_device_max)
    _row("pcie_link_gen_max", "int", xml="pci/pci_gpu_link_info/pcie_gen/max_link_gen",
         text="PCI/GPU Link Info/PCIe Generation/Max", csv=("pcie.link.gen.max", "pcie.link.gen.gpumax")),
    _row("pcie_link_gen_device_max", "int", text="PCI/GPU Link Info/PCIe Generation/Device Max", outputs=_TEXT),
    _row("pcie_link_width_current", "link_width", "x", xml="pci/pci_gpu_link_info/link_widths/current_link_width",
         text="PCI/GPU Link Info/Link Width/Current", csv="pcie.link.width.current"),
    _row("pcie_link_width_max", "link_width", "x", xml="pci/pci_gpu_link_info/link_widths/max_link_width",
         text="PCI/GPU Link Info/Link Width/Max", csv="pcie.link.width.max"),
    _row("replays_since_reset", "int", text="PCI/Replays Since Reset", outputs=_TEXT),
    # a nested record: FABRIC_FIELDS, None when every field is N/A (no NVSwitch fabric)
    _row("fabric", "code", xml="fabric", text="Fabric", csv="fabric.*"),
    # lists: one record per process / MIG device (not in the CSV format)
    _row("processes", "code", xml="processes", text="Processes"),
    _row("mig_devices", "code", xml="mig_devices", outputs=_XML_CSV),
    # error text nvidia-smi printed inside the GPU's section instead of data
    _row("errors", "code", outputs=_TEXT),
    # the GPU's element, section or CSV row as a dict
    _row("raw", "code"),
)

GPU_FIELD_BY_KEY: dict[str, GpuField] = {field.key: field for field in GPU_FIELDS}

# <fabric>, the "Fabric" block, the fabric.* fields.
FABRIC_FIELDS: tuple[GpuField, ...] = (
    _row("state", "text", xml="state", text="State", csv="fabric.state"),
    _row("status", "text", xml="status", text="Status", csv="fabric.status"),
    _row("clique_id", "int", xml=("cliqueId", "clique_id"), text="CliqueId|Clique Id|Clique ID",
         csv=("fabric.cliqueId", "fabric.clique_id")),
    _row("cluster_uuid", "text", xml=("clusterUuid", "cluster_uuid"), text="ClusterUUID|Cluster UUID",
         csv=("fabric.clusterUuid", "fabric.cluster_uuid")),
)

# <remapped_rows>, the "Remapped Rows" block, the remapped_rows.* fields.
REMAPPED_ROWS_FIELDS: tuple[GpuField, ...] = (
    _row("correctable", "int", xml="remapped_row_corr", text="Correctable Error", csv="remapped_rows.correctable"),
    _row("uncorrectable", "int", xml="remapped_row_unc", text="Uncorrectable Error", csv="remapped_rows.uncorrectable"),
    _row("pending", "yes_no", xml="remapped_row_pending", text="Pending", csv="remapped_rows.pending"),
    _row("failure", "yes_no", xml="remapped_row_failure", text="Remapping Failure Occurred",
         csv="remapped_rows.failure"),
)

# <retired_pages>, the "Retired Pages" block, the retired_pages.* fields. The XML parser reads ``pending`` itself:
# True when either <pending_blacklist> or <pending_retirement> says so (not the first that reads a value).
RETIRED_PAGES_FIELDS: tuple[GpuField, ...] = (
    _row("single_bit_ecc", "int", xml="multiple_single_bit_retirement/retired_count", text="Single Bit ECC",
         csv=("retired_pages.single_bit_ecc.count", "retired_pages.sbe")),
    _row("double_bit_ecc", "int", xml="double_bit_retirement/retired_count", text="Double Bit ECC",
         csv=("retired_pages.double_bit.count", "retired_pages.dbe")),
    _row("pending", "yes_no", xml=("pending_blacklist", "pending_retirement"),
         text="Pending Page Blacklist|Pending Page Retirement|Pending", csv="retired_pages.pending"),
)


@dataclass(frozen=True)
class ClockEventReason:
    """One clock event (throttle) reason: its key in ``clock_event_reasons`` and where each format prints it.

    ``xml``: element names after ``clocks_event_reason_`` / ``clocks_throttle_reason_`` (the first that reads a
    value); ``text``: the key in the "Clocks Event Reasons" / "Clocks Throttle Reasons" block (an
    ``Active``/``Not Active`` flag); ``csv``: field names after ``clocks_event_reasons.`` /
    ``clocks_throttle_reasons.`` (the first the header has); ``bit``: NVML's bit in the ``.active`` and
    ``.supported`` bitmasks.
    """

    key: str
    xml: tuple[str, ...]
    text: str
    csv: tuple[str, ...]
    bit: int


# In the order of the clock_event_reasons dict of the XML and -q parsers (the CSV parser's is bit order).
CLOCK_EVENT_REASONS: tuple[ClockEventReason, ...] = (
    ClockEventReason("idle", ("gpu_idle",), "Idle", ("gpu_idle", "idle"), 0x1),
    ClockEventReason("applications_clocks_setting", ("applications_clocks_setting",), "Applications Clocks Setting",
                     ("applications_clocks_setting",), 0x2),
    ClockEventReason("sw_power_cap", ("sw_power_cap",), "SW Power Cap", ("sw_power_cap",), 0x4),
    ClockEventReason("hw_slowdown", ("hw_slowdown",), "HW Slowdown", ("hw_slowdown",), 0x8),
    ClockEventReason("hw_thermal_slowdown", ("hw_thermal_slowdown",), "HW Thermal Slowdown", ("hw_thermal_slowdown",),
                     0x40),
    ClockEventReason("hw_power_brake_slowdown", ("hw_power_brake_slowdown",), "HW Power Brake Slowdown",
                     ("hw_power_brake_slowdown",), 0x80),
    ClockEventReason("sync_boost", ("sync_boost",), "Sync Boost", ("sync_boost",), 0x10),
    ClockEventReason("sw_thermal_slowdown", ("sw_thermal_slowdown",), "SW Thermal Slowdown", ("sw_thermal_slowdown",),
                     0x20),
    ClockEventReason("display_clock_setting", ("display_clocks_setting", "display_clock_setting"),
                     "Display Clock Setting", ("display_clock_setting", "display_clocks_setting"), 0x100),
)

# The containers of the reasons in each format, newest spelling first (R535 renamed "throttle" to "event").
XML_REASON_CONTAINERS = (("clocks_event_reasons", "clocks_event_reason_"),
                         ("clocks_throttle_reasons", "clocks_throttle_reason_"))
TEXT_REASON_BLOCKS = ("Clocks Event Reasons", "Clocks Throttle Reasons")
CSV_REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")


def read_record(fields: Sequence[GpuField], output: Output, read: Callable[[GpuField], Any],
                computed: Mapping[str, Callable[[], Any]]) -> dict[str, Any]:
    """The record of ``fields`` that ``output``'s parser returns, in table order.

    ``read(field)`` reads a table field from the parser's input (called only for fields ``output`` prints);
    ``computed`` holds the parser's own readers: every ``code`` field of ``output``, and any field whose
    format prints it outside the fields (a GPU's position, the ``-q`` section header's bus id). Each value is
    read in table order, so that of two damaged fields the first in the dict is the one named.
    """
    record: dict[str, Any] = {}
    for field in fields:
        if output not in field.outputs:
            continue
        if field.key in computed:
            record[field.key] = computed[field.key]()
        elif field.convert == "code":
            raise KeyError("%s: a structural field the %s parser must compute" % (field.key, output))
        else:
            record[field.key] = read(field) if field.where(output) else None
    return record
