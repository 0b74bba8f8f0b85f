# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet's quick gate before a job (slurm.conf ``Prolog=``, or ``HealthCheckProgram=``): is this node still the one
gpufleet accepted?

It runs on the node as root with the OS Python (3.8+, standard library only) and reads the node's quick facts:

- GPUs: ``nvidia-smi --query-gpu=index,pci.bus_id,ecc.errors.uncorrected.volatile.total --format=csv`` (read by its
  header): every bus ID the baseline has, no other, and no more uncorrectable ECC errors than it had;
- NVLink, where the baseline counted active links: ``nvidia-smi nvlink -s``, no GPU with fewer active links;
- network: each interface up in the baseline still up (``/sys/class/net/IF/operstate``) at its speed, each RDMA
  port Active in the baseline still ``ACTIVE`` at its rate (``/sys/class/infiniband/DEV/ports/N/state``, ``rate``);
- the kernel log (``dmesg``), where the validation read the node's uptime: no ``Xid``/``SXid`` line after the
  validation (its timestamp past the baseline's uptime when the node has not rebooted since; every one of this boot
  when it has).

It compares them with the baseline the last accepted validation wrote (/var/lib/gpufleet/gate-baseline.json;
gpufleet/results/gate_baseline.py). A group the baseline did not measure is not checked, and said so with --verbose.
Settings come from /etc/gpufleet/gate.json (slurm.conf gives Prolog no arguments): ``nvidia_smi``, ``dmesg``,
``scontrol``, ``sysfs_root``, ``procfs_root``, ``timeout`` (seconds per command, default 5), ``drain`` (default
true). Exit 0 when the node matches; else one line ``gpufleet gate: ...`` on stderr, the node drained with the reason
``gpufleet: gate: ...`` (so sinfo shows why, and the drain rules of gpufleet-slurm-health resume it after a passing
validation), and exit 1: Slurm then does not start the job here. No baseline: exit 0 (nothing accepted to compare).
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys

BASELINE = "/var/lib/gpufleet/gate-baseline.json"
SETTINGS = "/etc/gpufleet/gate.json"
SCHEMA = "gpufleet.gate-baseline/v1"
QUERY = ["--query-gpu=index,pci.bus_id,ecc.errors.uncorrected.volatile.total", "--format=csv"]
REASON_MAX = 200
KMSG_LINE = re.compile(r"^\[\s*(?P<ts>[0-9]+\.[0-9]+)\]\s.*\b(?P<kind>S?Xid) \((?P<pci>[^)]*)\): (?P<code>\d+)")
LINK_LINE = re.compile(r"^\s*Link \d+: (?P<value>.*)$")


class GateError(Exception):
    """A command or file the gate could not read: the node cannot be shown to match."""


def run(argv, timeout):
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise GateError("`%s` ran past %s s" % (" ".join(argv), timeout)) from None
    except OSError as exc:
        raise GateError("`%s`: %s" % (" ".join(argv), exc)) from None
    if proc.returncode != 0:
        words = " ".join((proc.stderr or proc.stdout).split())[:120]
        raise GateError("`%s` exited %d%s" % (" ".join(argv), proc.returncode, ": " + words if words else ""))
    return proc.stdout


def read_text(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def parse_gpus(text):
    """{bus_id: uncorrectable or None} of the CSV, found by its header (other columns are ignored)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = next((index for index, line in enumerate(lines)
                   if "pci.bus_id" in line and not line.startswith("#")), None)
    if header is None:
        raise GateError("nvidia-smi printed no pci.bus_id header")
    names = [name.strip() for name in lines[header].split(",")]
    bus, ecc = names.index("pci.bus_id"), names.index("ecc.errors.uncorrected.volatile.total")
    gpus = {}
    for line in lines[header + 1:]:
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) == len(names):
            gpus[cells[bus].upper()] = int(cells[ecc]) if cells[ecc].isdigit() else None
    return gpus


def parse_active_links(text):
    """[active link count] per GPU of ``nvidia-smi nvlink -s``, in GPU order."""
    counts = []
    for line in text.splitlines():
        if line.startswith("GPU "):
            counts.append(0)
        elif counts and LINK_LINE.match(line) and "inactive" not in line.lower():
            counts[-1] += 1
    return counts


def xid_lines(text, since_s):
    """``Xid 79 (PCI:...)`` of each kernel log line with an Xid or SXid after ``since_s`` seconds of uptime."""
    found = []
    for line in text.splitlines():
        match = KMSG_LINE.match(line)
        if match and float(match.group("ts")) > since_s:
            found.append("%s %s (%s)" % (match.group("kind"), match.group("code"), match.group("pci")))
    return found


def gpu_problems(baseline, settings, timeout):
    problems = []
    wanted = baseline.get("gpus")
    if wanted is None:
        return problems
    found = parse_gpus(run([settings.get("nvidia_smi", "nvidia-smi")] + QUERY, timeout))
    for gpu in wanted:
        bus = str(gpu.get("bus_id") or "").upper()
        if bus not in found:
            problems.append("GPU %s gone" % bus)
        elif found[bus] is not None and found[bus] > int(gpu.get("ecc_volatile_uncorrectable") or 0):
            problems.append("GPU %s uncorrectable ECC %d (was %d)" % (
                bus, found[bus], gpu.get("ecc_volatile_uncorrectable") or 0))
    extra = sorted(set(found) - {str(gpu.get("bus_id") or "").upper() for gpu in wanted})
    problems += ["GPU %s new" % bus for bus in extra]
    links = [gpu.get("nvlinks_active") for gpu in wanted]
    if any(count for count in links):
        active = parse_active_links(run([settings.get("nvidia_smi", "nvidia-smi"), "nvlink", "-s"], timeout))
        for index, count in enumerate(links):
            now = active[index] if index < len(active) else 0
            if count and now < count:
                problems.append("GPU%d NVLink %d of %d active" % (index, now, count))
    return problems


def network_problems(baseline, settings):
    problems = []
    root = settings.get("sysfs_root", "/sys")
    for item in baseline.get("interfaces") or []:
        base = os.path.join(root, "class", "net", str(item.get("name")))
        state, speed = read_text(os.path.join(base, "operstate")), read_text(os.path.join(base, "speed"))
        if state != "up":
            problems.append("%s is %s" % (item.get("name"), state or "gone"))
        elif item.get("speed_mbps") and speed and speed.lstrip("-").isdigit() and int(speed) < int(item["speed_mbps"]):
            problems.append("%s at %s Mb/s (was %s)" % (item.get("name"), speed, item["speed_mbps"]))
    for port in baseline.get("rdma_ports") or []:
        base = os.path.join(root, "class", "infiniband", str(port.get("device")), "ports", str(port.get("port")))
        state, rate = read_text(os.path.join(base, "state")) or "", read_text(os.path.join(base, "rate")) or ""
        name = "%s/%s" % (port.get("device"), port.get("port"))
        gbps = re.match(r"\s*([0-9.]+) Gb/sec", rate)
        if "ACTIVE" not in state:
            problems.append("%s is %s" % (name, state.split(":")[-1].strip() or "gone"))
        elif gbps and port.get("rate_gbps") and float(gbps.group(1)) < float(port["rate_gbps"]):
            problems.append("%s at %s Gb/s (was %s)" % (name, gbps.group(1), port["rate_gbps"]))
    return problems


def kernel_problems(baseline, settings, timeout):
    if baseline.get("uptime_s") is None:
        return []  # the validation read no kernel log of this node: nothing to compare with
    uptime = read_text(os.path.join(settings.get("procfs_root", "/proc"), "uptime"))
    now_s = float(uptime.split()[0]) if uptime else None
    then_s = baseline.get("uptime_s")
    # rebooted since the validation (uptime smaller now): every Xid of this boot is new
    since = float(then_s) if then_s is not None and now_s is not None and now_s >= float(then_s) else 0.0
    found = xid_lines(run([settings.get("dmesg", "dmesg")], timeout), since)
    return ["%s since the validation" % ", ".join(sorted(set(found)))] if found else []


def check(baseline, settings):
    timeout = float(settings.get("timeout", 5))
    problems = []
    for part in (lambda: gpu_problems(baseline, settings, timeout), lambda: network_problems(baseline, settings),
                 lambda: kernel_problems(baseline, settings, timeout)):
        try:
            problems += part()
        except GateError as exc:
            problems.append(str(exc))
    return problems


def load_json(path):
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def drain(settings, reason, timeout):
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    try:
        run([settings.get("scontrol", "scontrol"), "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason],
            timeout)
    except GateError as exc:
        sys.stderr.write("gpufleet gate: could not drain %s: %s\n" % (node, exc))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--settings", default=SETTINGS)
    args = parser.parse_args(argv)
    settings = load_json(args.settings) or {}
    if not os.environ.get("SLURM_CONF") and os.path.exists("/etc/slurm/slurm.conf"):
        os.environ["SLURM_CONF"] = "/etc/slurm/slurm.conf"
    baseline = load_json(args.baseline)
    if not isinstance(baseline, dict) or baseline.get("schema") != SCHEMA:
        return 0
    problems = check(baseline, settings)
    if not problems:
        return 0
    reason = "gpufleet: gate: " + "; ".join(problems)
    reason = reason if len(reason) <= REASON_MAX else reason[:REASON_MAX - 3] + "..."
    sys.stderr.write(reason.replace("gpufleet: gate:", "gpufleet gate:", 1) + "\n")
    if settings.get("drain", True):
        drain(settings, reason, float(settings.get("timeout", 5)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
