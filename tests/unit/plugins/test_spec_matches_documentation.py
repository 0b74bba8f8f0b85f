# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each option is declared once: an action plugin's argument spec is generated from its module's DOCUMENTATION
(gpufleet/adapter/spec.py), so what ``ansible-doc`` shows a user is what the plugin accepts.

The generator is held to hand-written specs; every controller action of the collection is held to take its spec from
there and to write none of its own; the options an action splits between the controller and the node are documented
ones. (A module that also runs on the node keeps an argument spec in code: ansible-test's validate-modules holds that
one to the same DOCUMENTATION.)
"""

from __future__ import annotations

import importlib
import os
import re

import pytest
import yaml

from gpufleet.adapter.action import FactAction, LibraryAction
from gpufleet.adapter.spec import DocumentationError, argument_spec, documentation_of, documented_spec, module_file

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ACTIONS = os.path.join(REPO, "plugins", "action")
PACKAGE = "ansible_collections.gpufleet.acceptance.plugins.action."
# the one action that validates nothing itself: it hands each fact module only that module's own options
ORCHESTRATORS = ("node_facts",)

DOCUMENTED = """
options:
  run_dir:
    description: [Where the results go.]
    type: path
    required: true
  formats:
    description: [Which.]
    type: list
    elements: str
    choices: [html, json]
    default: [html]
  json_binary:
    description: [A renamed option.]
    aliases: [nccl_json_binary]
  token:
    description: [A secret.]
    type: str
    no_log: true
  limits:
    description: [A nested option.]
    type: dict
    suboptions:
      max_s:
        description: [Seconds.]
        type: float
        default: 10
"""


def _plugins():
    names = sorted(entry[:-3] for entry in os.listdir(ACTIONS) if entry.endswith(".py"))
    return [(name, importlib.import_module(PACKAGE + name).ActionModule) for name in names]


def test_the_spec_is_what_the_documentation_says():
    options = yaml.safe_load(DOCUMENTED)["options"]
    assert argument_spec(options) == {
        "run_dir": {"type": "path", "required": True},
        "formats": {"type": "list", "elements": "str", "choices": ["html", "json"], "default": ["html"]},
        "json_binary": {"aliases": ["nccl_json_binary"]},
        "token": {"type": "str", "no_log": True},
        "limits": {"type": "dict", "options": {"max_s": {"type": "float", "default": 10}}},
    }


def test_a_module_without_documentation_is_named(tmp_path):
    (tmp_path / "modules").mkdir()
    (tmp_path / "action").mkdir()
    (tmp_path / "modules" / "odd.py").write_text("EXAMPLES = 'x'\n")
    with pytest.raises(DocumentationError, match=r"modules/odd.py: no DOCUMENTATION"):
        documented_spec(str(tmp_path / "action" / "odd.py"))


@pytest.mark.parametrize("plugin, action", _plugins(), ids=[name for name, _action in _plugins()])
def test_every_action_takes_its_options_from_its_module_documentation(plugin, action):
    path = os.path.join(ACTIONS, plugin + ".py")
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    assert not re.search(r"^\s*[A-Z_]*SPEC = \{", source, re.M), "%s declares a spec of its own" % plugin
    if issubclass(action, FactAction) or plugin in ORCHESTRATORS:
        return
    assert issubclass(action, LibraryAction), plugin
    documented = documentation_of(module_file(path))["options"]
    assert action.ARGUMENT_SPEC == argument_spec(documented)
    assert sorted(action.ARGUMENT_SPEC) == sorted(documented)


def test_the_options_split_between_controller_and_node_are_documented():
    bench_run = importlib.import_module(PACKAGE + "bench_run")
    ib_counters = importlib.import_module(PACKAGE + "ib_counters")
    assert set(bench_run.CONTROLLER_OPTIONS) < set(bench_run.ActionModule.ARGUMENT_SPEC)
    node_options = set(bench_run.ActionModule.ARGUMENT_SPEC) - set(bench_run.CONTROLLER_OPTIONS)
    assert set(bench_run.JSON_NODE_OPTIONS) <= node_options
    assert set(ib_counters.NODE_OPTIONS) < set(ib_counters.ActionModule.ARGUMENT_SPEC)


def _library_values():
    """(plugin, option, key, the library's value): the documented choice lists and defaults that copy a constant of
    the library, which stays their one source."""
    # pylint: disable=import-outside-toplevel
    from gpufleet.history import store as history
    from gpufleet.plan import pair_search
    from gpufleet.results import burn_in, store
    return [
        ("bench_record", "kind", "choices", list(store.BENCHMARK_KINDS)),
        ("bench_record", "outcome", "choices", [outcome for outcome in store.BENCHMARK_OUTCOMES if outcome != "ok"]),
        ("bench_run", "kind", "choices", list(store.BENCHMARK_KINDS)),
        ("burn_in_record", "kind", "choices", list(burn_in.KINDS)),
        ("health_history", "clock_drop_share", "default", history.DEFAULT_CLOCK_DROP_SHARE),
        ("health_history", "min_previous_runs", "default", history.DEFAULT_MIN_PREVIOUS),
        ("health_history", "max_points", "default", history.DEFAULT_MAX_POINTS),
        ("health_history", "timeout", "default", history.DEFAULT_TIMEOUT_S),
        ("pair_search_plan", "mode", "choices", list(pair_search.MODES)),
        ("pair_search_plan", "tolerance", "default", pair_search.DEFAULT_TOLERANCE),
    ]


@pytest.mark.parametrize("plugin, option, key, value", _library_values(),
                         ids=["%s.%s.%s" % row[:3] for row in _library_values()])
def test_documented_values_that_copy_a_library_constant_equal_it(plugin, option, key, value):
    documented = documentation_of(module_file(os.path.join(ACTIONS, plugin + ".py")))["options"][option][key]
    assert (sorted(map(str, documented)) if key == "choices" else documented) == (
        sorted(map(str, value)) if key == "choices" else value)
