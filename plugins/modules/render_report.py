#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: render_report
short_description: Render the fleet acceptance report from a run's results directory
description:
  - Controller-side only; the action plugin of the same name does the work and never contacts a node. Run it once
    (C(run_once=true), C(delegate_to=localhost)); the role C(gpufleet.acceptance.report) wraps it with a preflight.
  - Reads the results directory written by M(gpufleet.acceptance.results_record) and M(gpufleet.acceptance.fleet_verdict)
    (schema C(gpufleet.results/v1)) and writes, atomically, into O(output_dir)
    C(report.html) (one self-contained page - inline CSS and SVG, no script, no external asset - with the fleet verdict,
    nodes failing first, every reason as measured vs expected with the threshold's source, claim vs measured, topology
    matrices grouped by fingerprint, GPU values unlike the majority, NICs, benchmark charts when benchmark records exist,
    and the cost of a training step when claims carry C(price_per_node_hour) and a measured bus bandwidth exists;
    past 500 nodes it holds the per-node tables of the first 500, failing first, and C(report-nodes-002.html), ...
    those of the next 500 each, every page self-contained), C(report.md) (the summary in Markdown), C(results.json)
    (the run, fleet and host records in one document, without the facts, each value of a check said once) and
    C(junit.xml) (one testcase per node and check).
  - Every string that comes from a node is escaped in each format; nothing is run, so a report can be rendered
    again at any time from the directory alone.
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
options:
  results_dir:
    description:
      - The results directory of the run (it holds C(run.json)).
    type: path
    required: true
  output_dir:
    description:
      - Where the report files are written. Defaults to O(results_dir).
    type: path
  formats:
    description:
      - The files to write - V(html) C(report.html), V(md) C(report.md), V(json) C(results.json), V(junit) C(junit.xml).
    type: list
    elements: str
    choices: [html, md, json, junit]
    default: [html, md, json, junit]
  profiles_dir:
    description:
      - A directory of profile YAML files to read benchmark floors from instead of the shipped ones (C(gpufleet/profiles/) in the gpufleet package)
        (used only for the single-node all-reduce chart when no check result carries the floor).
    type: path
  title:
    description:
      - The report's title.
    type: str
    default: gpufleet acceptance report
attributes:
  action:
    support: full
    description: All the work is done by the action plugin on the controller.
  check_mode:
    support: full
    description: Renders and writes the report in check mode too (the results directory is written in check mode as well).
  diff_mode:
    support: none
    description: Returns no diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
seealso:
  - module: gpufleet.acceptance.fleet_verdict
  - module: gpufleet.acceptance.results_record
"""

EXAMPLES = r"""
- name: Render the report of a finished run
  gpufleet.acceptance.render_report:
    results_dir: results/20260131T120000Z
  run_once: true
  delegate_to: localhost
  register: gpufleet_report

- name: Only the JUnit file for CI, elsewhere
  gpufleet.acceptance.render_report:
    results_dir: results/20260131T120000Z
    output_dir: ci-artifacts
    formats: [junit]
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
files:
  description: The path of each file written, by format.
  returned: success
  type: dict
  sample: {"html": "/home/buyer/results/20260131T120000Z/report.html", "junit": "/home/buyer/results/20260131T120000Z/junit.xml"}
verdict:
  description: The fleet verdict as recorded in C(fleet.json); V(NOT JUDGED) when the run has no C(fleet.json) yet.
  returned: success
  type: str
  sample: REJECT
counts:
  description: Nodes per verdict.
  returned: success
  type: dict
  sample: {"ACCEPT": 6, "ACCEPT WITH WARNINGS": 1, "REJECT": 2, "UNREACHABLE": 1}
nodes:
  description: How many nodes the report covers.
  returned: success
  type: int
  sample: 10
failing:
  description: The nodes rejected, unreachable or not judged, in report order.
  returned: success
  type: list
  elements: str
  sample: [node-b, node-c]
"""
