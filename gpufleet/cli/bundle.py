# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet bundle RESULTS_DIR NODE... [--out FILE.tar.gz]``: the dispute bundle.

Per node, what a seller cannot argue with, taken unaltered from the results directory::

    gpufleet-dispute-<run>/README.txt                  the failing checks in plain words, per node
    gpufleet-dispute-<run>/run.json                    the run: when, which gpufleet, which profiles
    gpufleet-dispute-<run>/<node>/host.json            the node's record: facts (serials, VBIOS, versions), claim, checks, verdict
    gpufleet-dispute-<run>/<node>/failing_checks.json  the failing checks: id, subject, measured, expected, threshold source, message
    gpufleet-dispute-<run>/<node>/commands.txt         every command run on the node: argv, exit code, duration, output file
    gpufleet-dispute-<run>/<node>/raw/**               what each command printed (raw/<host>/** of the run)

A node that is not in the run is refused. Node names become directory names through the results
store's ``safe_name`` (no path can leave the bundle); symbolic links in the results are not followed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import tarfile
import tempfile
import time
from collections.abc import Mapping
from typing import IO, Any

from gpufleet.cli.common import (EXIT_FAILED, EXIT_OK, Subcommands, failing_checks, load_run, node_verdicts, say,
                                 terminal_text)
from gpufleet.results.shapes import HostRecord
from gpufleet.results.store import RAW_DIR, RUN_FILE, ResultsError, RunDir, safe_name, utc_now


# One node of the bundle: (host, its folder in the bundle, its verdict, its record or None)
Entry = tuple[str, str, str | None, HostRecord | None]


def _short(value: object, limit: int = 300) -> str:
    """A measured/expected value in one line (JSON for structures)."""
    if isinstance(value, (dict, list)):
        value = json.dumps(value, sort_keys=True)
    return terminal_text(value, limit)


def _raw_entry_lines(group: str, key: str, entry: Mapping[str, Any]) -> list[str]:
    """commands.txt's paragraph of one collector entry: the command, exit code, duration, error and output files."""
    cmd = entry.get("cmd")
    lines = ["[%s] %s" % (terminal_text(group), terminal_text(key))]
    shown = (terminal_text(shlex.join(str(part) for part in cmd)) if cmd
             else "(not a command: a file or directory read on the node)")
    lines.append("  command:  %s" % shown)
    if entry.get("rc") is not None:
        lines.append("  exit:     %s" % entry.get("rc"))
    elif cmd:
        why = "did not run: " + terminal_text(entry["error"]) if entry.get("error") else "did not finish"
        lines.append("  exit:     none (%s)" % why)
    lines.append("  duration: %s" % ("%s s" % entry["duration_s"] if entry.get("duration_s") is not None else "-"))
    if entry.get("error"):
        lines.append("  error:    %s" % terminal_text(entry["error"]))
    for field, label in (("path", "output:  "), ("stderr_path", "stderr:  ")):
        if entry.get(field):
            lines.append("  %s %s" % (label, _node_relative(entry[field])))
    return lines + [""]


def _benchmark_lines(bench: Mapping[str, Any]) -> list[str]:
    """commands.txt's paragraph of one benchmark run: its command, environment, start, duration and output."""
    environment = " ".join("%s=%s" % (k, v) for k, v in sorted((bench.get("environment") or {}).items()))
    lines = ["[benchmark] %s" % terminal_text(bench.get("name")),
             "  command:     %s" % terminal_text(shlex.join(str(part) for part in bench.get("command") or [])),
             "  environment: %s" % terminal_text(environment or "-"),
             "  started:     %s, duration %s s" % (terminal_text(bench.get("started")), bench.get("duration_s"))]
    if bench.get("raw_output_path"):
        lines.append("  output:      %s" % _node_relative(bench["raw_output_path"]))
    return lines + [""]


def commands_text(record: Mapping[str, Any]) -> str:
    """commands.txt: every collector command of the node (and benchmark), as run."""
    lines = ["# Commands gpufleet ran on %s, as argv (shell-quoted here for reading), with exit code and duration."
             % terminal_text(record.get("host")),
             "# Output files are relative to this node's directory; raw/ holds them unaltered.", ""]
    for group, index in sorted((record.get("raw") or {}).items()):
        for key, entry in sorted((index or {}).items()):
            lines += _raw_entry_lines(group, key, entry or {})
    for bench in record.get("benchmarks") or []:
        lines += _benchmark_lines(bench)
    return "\n".join(lines) + "\n"


def _node_relative(path: object) -> str:
    """``raw/<host>/<group>/<file>`` (run-relative) -> ``raw/<group>/<file>`` (inside the node's directory)."""
    parts = str(path).split("/")
    return "/".join(["raw"] + parts[2:]) if len(parts) > 2 and parts[0] == RAW_DIR else terminal_text(path)


def _gpu_lines(gpu: Mapping[str, Any], record: Mapping[str, Any]) -> list[str]:
    """The GPUs: model, count, driver and CUDA, then each GPU's serial, VBIOS, UUID and PCI address."""
    if not gpu:
        why = (record.get("fact_errors") or {}).get("gpu") or "no GPU facts"
        return ["GPUs: not gathered (%s)" % terminal_text(why, 300)]
    gpus = [item for item in gpu.get("gpus") or [] if isinstance(item, dict)]
    names = sorted({str(item.get("name")) for item in gpus if item.get("name")})
    lines = ["GPUs: %s x %s, driver %s, CUDA %s" % (
        gpu.get("gpu_count"), terminal_text(", ".join(names) or "unknown model"),
        terminal_text(gpu.get("driver_version")), terminal_text(gpu.get("cuda_version")))]
    for item in gpus:
        lines.append("  GPU%s serial %s, VBIOS %s, UUID %s, PCI %s" % tuple(
            [item.get("index")] + [terminal_text(item.get(key)) or "not reported"
                                   for key in ("serial", "vbios_version", "uuid", "pci_bus_id")]))
    return lines


def _software_lines(host: Mapping[str, Any]) -> list[str]:
    """The kernel release and the versions the host facts list; none without host facts."""
    if not host:
        return []
    kernel = (host.get("kernel") or {}).get("release") if isinstance(host.get("kernel"), dict) else None
    versions = host["versions"] if isinstance(host.get("versions"), dict) else {}
    listed = ", ".join("%s %s" % (terminal_text(k), terminal_text(v if v is not None else "not found"))
                       for k, v in sorted(versions.items()))
    return ["Kernel %s; %s" % (terminal_text(kernel or "unknown"), listed or "no versions")]


def identity_lines(record: Mapping[str, Any]) -> list[str]:
    """What identifies the node's hardware and software: GPUs with serials and VBIOS, kernel, versions."""
    facts = record.get("facts") or {}
    return _gpu_lines(facts.get("gpu") or {}, record) + _software_lines(facts.get("host") or {})


def _failing_lines(failing: list[dict[str, Any]]) -> list[str]:
    """Why the node fails acceptance: each failing check in words, with what it measured against what."""
    lines = ["", "Why it fails acceptance (%d failing check%s):" % (len(failing), "" if len(failing) == 1 else "s")]
    for number, item in enumerate(failing, 1):
        lines.append("  %d. %s" % (number, terminal_text(item.get("message") or item.get("id"), 1000)))
        lines.append("     check %s%s: measured %s, expected %s" % (
            terminal_text(item.get("id")), " on %s" % terminal_text(item.get("subject")) if item.get("subject") else "",
            _short(item.get("measured")), _short(item.get("expected"))))
        lines.append("     threshold source: %s" % terminal_text(item.get("threshold_source") or "not stated"))
    return lines


def _node_lines(host: str, folder: str, verdict: str | None, record: Mapping[str, Any]) -> list[str]:
    """README.txt's section of one node: its verdict, profile, claim, identity, failing checks and evidence."""
    profile = record.get("profile") or {}
    title = "Node %s: %s" % (terminal_text(host), verdict or "NOT JUDGED")
    lines = [title, "-" * len(title)]
    if profile:
        lines.append("Judged against profile %s (%s)."
                     % (terminal_text(profile.get("name")), terminal_text(profile.get("reason"))))
    if record.get("claim") is not None:
        lines.append("The seller's claim: %s" % _short(record.get("claim"), 600))
    lines += identity_lines(record)
    if verdict == "UNREACHABLE":
        lines.append("The node could not be reached: %s" % terminal_text(record.get("unreachable") or "no answer", 600))
    failing = failing_checks(record)
    if failing:
        lines += _failing_lines(failing)
    elif verdict != "UNREACHABLE":
        lines += ["", "No check failed on this node."]
    warned = [item for item in record.get("checks") or []
              if isinstance(item, dict) and item.get("status") in ("warn", "error")]
    if warned:
        lines.append("Also noted: %d warning(s), listed with every check in %s/host.json." % (len(warned), folder))
    commands = sum(len(index or {}) for index in (record.get("raw") or {}).values())
    return lines + [
        "",
        "Evidence, in %s/:" % folder,
        "  host.json            the node's full record: facts, claim, every check, the verdict",
        "  failing_checks.json  the failing checks with measured, expected and threshold source",
        "  commands.txt         the %d command(s) and file(s) read on the node, with exit code and duration" % commands,
        "  raw/                 what each command printed, unaltered",
        "",
    ]


def readme_text(run: Mapping[str, Any], entries: list[Entry]) -> str:
    """README.txt: the run, then per node its identity and the failing checks in plain words."""
    lines = [
        "gpufleet dispute bundle",
        "=======================",
        "",
        "Acceptance run %s: started %s, finished %s." % (
            terminal_text(run.get("run_id")), terminal_text(run.get("started")),
            terminal_text(run.get("finished") or "not finished")),
        "Judged by gpufleet %s (ansible-core %s). Bundle made %s." % (
            terminal_text(run.get("gpufleet_version")), terminal_text(run.get("ansible_version")), utc_now()),
        "Every file below is copied unaltered from the run's results directory; run.json says how the run was made.",
        "",
    ]
    for host, folder, verdict, record in entries:
        lines += _node_lines(host, folder, verdict, record or {})
    return "\n".join(lines) + "\n"


class _Tar:
    """A tar.gz written member by member, with names and modes chosen here (never from the results)."""

    def __init__(self, handle: IO[bytes], top: str) -> None:
        self.tar = tarfile.open(fileobj=handle, mode="w:gz")  # pylint: disable=consider-using-with
        self.top = top
        self.names: list[str] = []

    def add_bytes(self, name: str, data: bytes, mtime: float | None = None) -> None:
        info = tarfile.TarInfo("%s/%s" % (self.top, name))
        info.size = len(data)
        info.mode = 0o644
        info.mtime = int(mtime if mtime is not None else time.time())
        self.tar.addfile(info, io.BytesIO(data))
        self.names.append(info.name)

    def add_file(self, name: str, path: str) -> None:
        with open(path, "rb") as handle:
            data = handle.read()
        self.add_bytes(name, data, os.stat(path).st_mtime)

    def add_tree(self, name: str, directory: str) -> None:
        """Every regular file under ``directory`` (links are not followed), sorted."""
        for root, dirs, files in os.walk(directory, followlinks=False):
            dirs[:] = sorted(entry for entry in dirs if not os.path.islink(os.path.join(root, entry)))
            for entry in sorted(files):
                path = os.path.join(root, entry)
                if os.path.islink(path) or not os.path.isfile(path) or (entry.startswith(".") and entry.endswith(".tmp")):
                    continue
                self.add_file("%s/%s" % (name, os.path.relpath(path, directory).replace(os.sep, "/")), path)

    def close(self) -> None:
        self.tar.close()


def build_bundle(results_dir: str, nodes: list[str], out_path: str) -> list[str]:
    """Write the bundle of ``nodes`` of the run in ``results_dir`` to ``out_path``; returns the member names.

    ValueError names the nodes that are not in the run; ResultsError a directory that is no run.
    """
    run, fleet, hosts = load_run(results_dir)
    run_dir = RunDir(results_dir)
    verdicts = node_verdicts(run, fleet, hosts)
    unknown = [node for node in nodes if node not in verdicts]
    if unknown:
        raise ValueError("not in run %s: %s (its nodes: %s)" % (
            run.get("run_id"), ", ".join(terminal_text(node) for node in unknown), ", ".join(terminal_text(node) for node in sorted(verdicts))))
    top = "gpufleet-dispute-%s" % safe_name(run.get("run_id") or "run")
    entries: list[Entry] = [(node, safe_name(node), verdicts[node], hosts.get(node)) for node in nodes]
    directory = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(out_path)[:60], suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            tar = _Tar(stream, top)
            tar.add_bytes("README.txt", readme_text(run, entries).encode("utf-8"))
            tar.add_file(RUN_FILE, os.path.join(run_dir.path, RUN_FILE))
            for node, folder, _verdict, record in entries:
                if record is not None and os.path.isfile(run_dir.host_file(node)):
                    tar.add_file("%s/host.json" % folder, run_dir.host_file(node))
                checks = [{key: item.get(key) for key in ("id", "status", "subject", "measured", "expected", "threshold_source", "message")}
                          for item in failing_checks(record)]
                tar.add_bytes("%s/failing_checks.json" % folder, (json.dumps(checks, indent=1, sort_keys=True) + "\n").encode("utf-8"))
                tar.add_bytes("%s/commands.txt" % folder, commands_text(record or {"host": node}).encode("utf-8"))
                raw = os.path.join(run_dir.path, RAW_DIR, safe_name(node))
                if os.path.isdir(raw) and not os.path.islink(raw):
                    tar.add_tree("%s/raw" % folder, raw)
            tar.close()
        os.chmod(tmp, 0o644)
        os.replace(tmp, out_path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return tar.names


def cmd_bundle(args: argparse.Namespace) -> int:
    nodes = list(dict.fromkeys(args.nodes))
    results_dir = os.path.abspath(args.results_dir)
    try:
        run = RunDir.open(results_dir).read_run()
    except ResultsError as exc:
        say("gpufleet bundle: %s" % exc)
        return EXIT_FAILED
    out = args.out or "gpufleet-dispute-%s%s.tar.gz" % (safe_name(run.get("run_id") or "run"), "-" + safe_name(nodes[0]) if len(nodes) == 1 else "")
    try:
        names = build_bundle(results_dir, nodes, os.path.abspath(out))
    except ValueError as exc:
        say("gpufleet bundle: refused: %s" % exc)
        return EXIT_FAILED
    except (ResultsError, OSError) as exc:
        say("gpufleet bundle: %s" % exc)
        return EXIT_FAILED
    print("bundle: %s (%d files, %d node(s): %s)" % (os.path.abspath(out), len(names), len(nodes), ", ".join(terminal_text(node) for node in nodes)))
    return EXIT_OK


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    """``gpufleet bundle``."""
    parser = commands.add_parser(
        "bundle",
        help="pack the evidence against rejected nodes for the seller",
        description="Pack, per node, its record (serials, VBIOS, versions, facts), the commands run with exit code and duration, "
                    "their raw outputs, the failing checks (measured, expected, source), run.json and a README.txt in plain words.",
    )
    parser.add_argument("results_dir", metavar="RESULTS_DIR", help="the run's results directory")
    parser.add_argument("nodes", nargs="+", metavar="NODE", help="inventory hostname(s) of the run")
    parser.add_argument("--out", metavar="FILE.tar.gz", help="where to write it (default: gpufleet-dispute-<run>[-<node>].tar.gz here)")
    parser.set_defaults(func=cmd_bundle)
    return parser
