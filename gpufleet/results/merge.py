"""One results directory from the slices of a sliced run (AWX job slicing: each slice a run over part of the
inventory, into its own results directory): ``gpufleet report SLICE1 SLICE2 ... --out MERGED``.

Nothing is judged again: each node keeps the verdict its slice gave it (judged against its slice's nodes, which is
what a sliced run measured: docs/install.md "Job slicing"). The merged directory holds every slice's host records
and raw outputs, a ``run.json`` naming the slices, and a ``fleet.json`` whose node verdicts are the slices' and whose
fleet verdict and counts are those of all the nodes (checks/model.py ``fleet_verdict``). A node in two slices, or a
slice that did not finish, is refused: one verdict per node, from a finished run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.checks.model import fleet_verdict
from gpufleet.results.shapes import FleetDocument, HostRecord, NodeVerdict, RunRecord, RunSlice
from gpufleet.results.store import (FLEET_FILE, HOSTS_DIR, RUN_FILE, SCHEMA, ResultsError, RunDir, read_judged_run,
                                    utc_now, write_json_atomic)


@dataclass
class _Slice:
    """One finished slice: its directory, run.json, fleet.json and host records."""

    dir: RunDir
    run: RunRecord
    fleet: FleetDocument
    hosts: dict[str, HostRecord]


def _slice(path: str) -> _Slice:
    """The finished slice at ``path`` (ResultsError for one that did not finish)."""
    run_dir, fleet, hosts = read_judged_run(path)
    return _Slice(run_dir, run_dir.read_run(), fleet, hosts)


def _copy_host(source: RunDir, out: str, host: str, record: HostRecord) -> None:
    """Copy ``host``'s record and raw outputs from the slice ``source`` into the merged directory ``out``."""
    write_json_atomic(os.path.join(out, HOSTS_DIR, os.path.basename(source.host_file(host))), record, root=out)
    raw = os.path.join(source.path, "raw", host)
    if os.path.isdir(raw):
        shutil.copytree(raw, os.path.join(out, "raw", host), dirs_exist_ok=True)


def merge_slices(paths: Sequence[str], out: str) -> FleetDocument:
    """Write the merged results directory ``out`` of the slices at ``paths``; returns its fleet.json document."""
    slices = [_slice(path) for path in paths]
    owner: dict[str, str] = {}
    for part in slices:
        for host in part.fleet.get("node_verdicts") or {}:
            if host in owner:
                raise ResultsError("%s is in two slices (%s and %s): one verdict per node" % (
                    host, owner[host], part.dir.path))
            owner[host] = part.dir.path
    os.makedirs(os.path.join(out, HOSTS_DIR), exist_ok=True)
    node_verdicts: dict[str, NodeVerdict] = {}
    for part in slices:
        for host, entry in (part.fleet.get("node_verdicts") or {}).items():
            node_verdicts[host] = entry
            if host in part.hosts:
                _copy_host(part.dir, out, host, part.hosts[host])
    first = slices[0].run
    slice_ids: list[Any] = [part.run.get("run_id") for part in slices]
    parts: list[RunSlice] = [{"path": part.dir.path, "run_id": part.run.get("run_id")} for part in slices]
    run: RunRecord = {**first, "run_id": "merged-" + "+".join(str(run_id) for run_id in slice_ids),
                      "hosts": sorted(node_verdicts), "status": "finished", "finished": utc_now(), "slices": parts}
    write_json_atomic(os.path.join(out, RUN_FILE), run, root=out)
    fleet = fleet_verdict({host: entry["verdict"] for host, entry in node_verdicts.items()})
    levels = {part.fleet.get("level") for part in slices}
    labels = {part.fleet.get("label") for part in slices}
    document: FleetDocument = {
        "schema": SCHEMA, "run_id": run["run_id"], "invocation": first.get("invocation"), "generated": utc_now(),
        "verdict": fleet["verdict"], "counts": fleet["counts"], "nodes": fleet["nodes"],
        "level": levels.pop() if len(levels) == 1 else None, "label": labels.pop() if len(labels) == 1 else None,
        "node_verdicts": node_verdicts, "slices": parts}
    write_json_atomic(os.path.join(out, FLEET_FILE), document, root=out)
    return document
