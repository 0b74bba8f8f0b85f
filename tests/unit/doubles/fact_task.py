# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fact task in-process: the node-side module's collector, then what the action plugin builds from its output, as
the tests of each fact module run them on replayed nodes (tests/unit/plugins/module_utils/test_*_replayed.py)."""

from __future__ import annotations

import json

from gpufleet.facts.raw import FactError, RawReader


def fact_task(host, collector, build_facts, args):
    """What a fact task registers for ``host``: the module's run() with ``args`` over its defaults, then what
    the action plugin builds from it.

    The result goes through JSON as it does on its way to the play (the module's output, the dumped hostvars), so a
    value compares as the play sees it.
    """
    params = {key: option.get("default") for key, option in collector.ARGUMENT_SPEC.items()}
    params.update(args)
    raw, failure = collector.run(params)
    if failure:
        result = {"failed": True, "msg": failure, "raw": raw}
    else:
        try:
            result = {"changed": False, "raw": raw, "ansible_facts": build_facts(RawReader(host, raw))}
        except FactError as exc:
            result = {"failed": True, "msg": str(exc), "raw": raw}
    return json.loads(json.dumps(result))
