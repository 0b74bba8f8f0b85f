# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet: measured acceptance of rented multi-GPU servers (the controller library).

The stages of one run, each a sub-package that imports only the stages before it:

- ``parsers``  one pure parser per tool format: text in, data out, or a ParseError naming the line;
- ``facts``    one node's raw collector results -> typed facts per group (GPU, topology, NIC, host);
- ``plan``     what to run across nodes: NCCL environment, the bad-node pair search, network pairs;
- ``checks``   claim + profile + facts (+ benchmark records) -> check results and a verdict per node;
- ``results``  the results directory of one run: host records, raw outputs, benchmark records;
- ``history``  the weekly health history (SQLite) and its Prometheus text;
- ``report``   a results directory -> report.html, report.md, results.json, junit.xml;
- ``cli``      the ``gpufleet`` command.

The Ansible collection ``gpufleet.acceptance`` (node-side modules and their stdlib-only
module_utils, thin action and filter plugins over this library) is found by ``gpufleet.collection``.
"""
