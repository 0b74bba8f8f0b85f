"""What an accepted node looked like, for the quick gate a Slurm prolog runs before each job (roles/slurm_gate).

The gate (roles/slurm_gate/files/gpufleet_prolog_gate.py) runs on the node itself, as root, with the OS Python and no
controller library, in about a second. It compares the node's quick facts now with this baseline, which
``gpufleet validate`` writes on each ACCEPT node (``gpufleet_gate_baseline``, playbooks/validate_cluster.yml):

- ``gpus``: each GPU's PCI bus ID (as nvidia-smi prints it) and, where NVLink was read, how many of its links were
  active: a GPU gone, a new one, a link down fail the gate;
- ``interfaces``: the node's physical network interfaces that were up, with their speed: one down or slower fails;
- ``rdma_ports``: the RDMA ports that were Active, with their rate: one not Active or slower fails;
- ``uptime_s``: the node's uptime when its facts were read, so an Xid or SXid in the kernel log after it fails (every
  one of this boot when the node has rebooted since);
- each GPU's uncorrectable ECC errors (volatile, since the driver loaded): any more fail.

A group the validation did not measure is left out (null) and the gate says so instead of passing it silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.checks.model import ACCEPTED

SCHEMA = "gpufleet.gate-baseline/v1"


def _gpus(gpu_facts: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    if not isinstance(gpu_facts, Mapping) or not gpu_facts.get("gpus"):
        return None
    out = []
    for gpu in gpu_facts["gpus"]:
        nvlink = gpu.get("nvlink") if isinstance(gpu.get("nvlink"), Mapping) else {}
        links = [link for link in nvlink.get("links") or [] if isinstance(link, Mapping)]
        out.append({"bus_id": gpu.get("pci_bus_id"),
                    "nvlinks_active": sum(1 for link in links if link.get("active")) if links else None,
                    "ecc_volatile_uncorrectable": gpu.get("ecc_errors_volatile_uncorrectable")})
    return out


def _interfaces(nic_facts: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    if not isinstance(nic_facts, Mapping) or nic_facts.get("interfaces") is None:
        return None
    return [{"name": item.get("name"), "speed_mbps": item.get("speed_mbps")}
            for item in nic_facts["interfaces"]
            if isinstance(item, Mapping) and not item.get("virtual") and item.get("operstate") == "up"
            and item.get("name") != "lo"]


def _rdma_ports(nic_facts: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    if not isinstance(nic_facts, Mapping) or nic_facts.get("rdma") is None:
        return None
    return [{"device": device.get("device"), "port": port.get("port"), "rate_gbps": port.get("rate_gbps")}
            for device in nic_facts["rdma"] if isinstance(device, Mapping)
            for port in device.get("ports") or [] if isinstance(port, Mapping) and port.get("state") == "Active"]


def gate_baseline(record: Mapping[str, Any], run_id: str | None, written: str) -> dict[str, Any]:
    """The baseline of one host record (its facts as this run gathered them)."""
    facts: Mapping[str, Any] = record["facts"] if isinstance(record.get("facts"), Mapping) else {}
    host_facts: Mapping[str, Any] = facts["host"] if isinstance(facts.get("host"), Mapping) else {}
    return {"schema": SCHEMA, "host": record.get("host"), "run_id": run_id, "written": written,
            "gpus": _gpus(facts.get("gpu")), "interfaces": _interfaces(facts.get("nic")),
            "rdma_ports": _rdma_ports(facts.get("nic")),
            "uptime_s": host_facts.get("uptime_s")}


def accepted_baselines(fleet: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]],
                       written: str) -> dict[str, dict[str, Any]]:
    """``{host: baseline}`` of each accepted host of a judged run (fleet.json's verdicts, the host records)."""
    out = {}
    for host, entry in (fleet.get("node_verdicts") or {}).items():
        if (entry or {}).get("verdict") in ACCEPTED and host in records:
            out[str(host)] = gate_baseline(records[host], fleet.get("run_id"), written)
    return out
