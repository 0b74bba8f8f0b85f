# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hand-built results directories (schema gpufleet.results/v1) for the CLI's unit tests. SYNTHETIC:
the values are written by hand to exercise the CLI, they are not recordings of any machine."""

from __future__ import annotations

import json
import os

SCHEMA = "gpufleet.results/v1"


def check(check_id, status, subject=None, measured=None, expected=None, source=None, message=None):
    return {"id": check_id, "status": status, "subject": subject, "measured": measured, "expected": expected,
            "threshold_source": source, "message": message or "%s %s" % (check_id, status)}


def host_record(host, verdict, checks=(), unreachable=None, raw=None, facts=None, claim=None):
    checks = list(checks)
    return {
        "schema": SCHEMA, "host": host, "updated": "2026-01-31T12:00:05Z", "unreachable": unreachable,
        "phases": {"facts": {"complete": unreachable is None, "finished": "2026-01-31T12:00:03Z"}},
        "facts": facts or {"topology": None, "gpu": None, "nic": None, "host": None}, "fact_errors": {},
        "raw": raw or {}, "claim": claim, "settings": {}, "profile_request": None,
        "profile": {"name": "hgx-h100-8", "reason": "matched 8 x NVIDIA H100 80GB HBM3 (from GPU facts)"},
        "checks": checks, "failed": [item["id"] for item in checks if item["status"] == "fail"], "verdict": verdict, "benchmarks": [],
    }


def _write(path, document):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)


# run.json's ``invocation``: the ansible-playbook run (pid:start ticks) that opened the directory last, which fleet.json
# names too when that run wrote it. A process started 10 s after boot (1000 ticks): none of the test's.
INVOCATION = "4242:1000"


def write_run(directory, records, finished=True, run_id=None, file_names=None, invocation=INVOCATION):
    """Write run.json, hosts/<host>.json (file name from file_names, default the host) and, when
    ``finished``, fleet.json (written by the opening ``invocation``). Returns the directory as a string."""
    directory = str(directory)
    run_id = run_id or os.path.basename(directory)
    hosts = [record["host"] for record in records]
    _write(os.path.join(directory, "run.json"), {
        "schema": SCHEMA, "run_id": run_id, "started": "2026-01-31T12:00:00Z", "resumed": [],
        "finished": "2026-01-31T12:00:09Z" if finished else None, "status": "finished" if finished else "running",
        "inventory": ["/inv/hosts.yml"], "playbook": "/c/playbooks/validate_cluster.yml", "hosts": hosts,
        "profile_choices": {"requested": {}}, "gpufleet_version": "0.1.0", "gpufleet_path": "/c",
        "ansible_version": "2.19.14", "invocation": invocation})
    for record in records:
        name = (file_names or {}).get(record["host"], record["host"])
        _write(os.path.join(directory, "hosts", name + ".json"), record)
    if finished:
        _write(os.path.join(directory, "fleet.json"), {
            "schema": SCHEMA, "run_id": run_id, "invocation": invocation, "generated": "2026-01-31T12:00:09Z",
            "verdict": "REJECT", "counts": {}, "nodes": len(records),
            "node_verdicts": {record["host"]: {"verdict": record["verdict"], "failed": record["failed"], "unreachable": record["unreachable"],
                                               "profile": "hgx-h100-8", "record": "hosts/%s.json" % record["host"]} for record in records}})
    return directory
