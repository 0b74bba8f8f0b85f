# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.node_facts: one module run, then each group parsed as its own action would.

The module run: with pipelining, the module's work (module_utils/node_run.py) as one program on the node
interpreter's stdin, without Ansible's module wrapper (``_collect``, gpufleet/adapter/node_program.py,
docs/facts/node_facts.md "How it runs on the node"); without it, under Mitogen or async, the module itself.

The groups are built by the library (``gpufleet.facts.node``): each group's raw output goes through
that group's builder, so the facts and the failure messages are the ones the four single-group
tasks would have produced. ``groups`` in the result holds, per group, what that group's own task
would have registered.

Two options are the controller's and never reach the node:

- ``collector: separate`` runs the four fact modules one by one (four round trips) instead of
  node_facts once; the groups come out the same (tests/playbooks/test_node_facts.py).
- ``record`` writes the host's record and raw outputs into the results directory here, the moment
  they are parsed (gpufleet.results.store.record_host_facts, as results_record does), and the raw outputs are then left
  out of the task's result. At fleet scale that matters: every byte of a result is pickled to
  Ansible's main process, walked and copied there, and templated again by any task that passes it
  on (docs/performance.md). A node that cannot be reached is recorded unreachable before the
  connection error goes on to Ansible (after one reconnect where the connection ended while the node still answered,
gpufleet/adapter/connection.py: the gathering runs again within what is left of the phase's budget, and the record's
``phases.facts.reconnected`` says why); one whose task ran past Ansible's task timeout is recorded with
  the groups asked for not gathered for that reason (the verdict says INCOMPLETE), then the timeout goes on.

A record the controller cannot write (a full, read-only or unwritable results directory: store.ResultsWriteError) is
the controller's failure, never the node's: the task fails with the store's message, also as ``results_write_error``
(the role's next task stops the run on it, roles/facts/tasks/gather.yml; ``gpufleet validate`` says the run failed
on the controller), the raw outputs stay in the result, and a node lost or past its task timeout meanwhile is told
in the message instead of being reported so to Ansible (the run stops: it is never judged for either).

The node bounds its fact phase (option ``phase_timeout``, plugins/module_utils/node_collect.py); with
``collector: separate`` each of the four module runs gets what is left of that one budget, so the four
together take no longer than the one combined run may.
"""

from __future__ import annotations

import os
import time

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.vars.clean import remove_internal_keys

from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import phase_budget
from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_run import COLLECTORS as NODE_COLLECTORS
from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_run import argument_spec
from gpufleet.adapter.connection import with_one_reconnect
from gpufleet.adapter.node_facts import separate_results
from gpufleet.adapter.node_program import program
from gpufleet.facts.node import COLLECTORS, CONTROLLER_OPTIONS, GROUPS, MODULE, group_results
from gpufleet.facts.raw import TASK_TIMED_OUT
from gpufleet.results.store import (
    STRESS_PHASES,
    ResultsError,
    ResultsWriteError,
    record_host_facts,
    record_host_health_after,
    to_plain,
)

# after: the stress phase this reading follows (the health re-read): recorded beside the first reading, not over it
RECORD_KEYS = ("run_dir", "claim", "profile", "profile_overrides", "settings", "after")
# group -> the options its own module takes (collector: separate passes each module only its own)
MODULE_OPTIONS = dict((name, collector.ARGUMENT_SPEC) for name, collector in NODE_COLLECTORS)
# node_run.py and the collectors, sent to the node by _collect
MODULE_UTILS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
# the module's options as the controller checks them: a path is expanded on the node (node_run.expand_paths), where
# ~ and $HOME are the node's
CONTROLLER_CHECKED_SPEC = dict((key, dict(option, type="str") if option.get("type") == "path" else option)
                               for key, option in argument_spec().items())


def check_record(record):
    """``record`` as a plain dict, or a message saying what is wrong with it."""
    record = to_plain(record)
    if not isinstance(record, dict):
        return None, "record must be a mapping with run_dir (the results directory), got %r" % type(record).__name__
    unknown = sorted(set(record) - set(RECORD_KEYS))
    if unknown:
        return None, "record has unknown key(s) %s; known: %s" % (", ".join(unknown), ", ".join(RECORD_KEYS))
    if not isinstance(record.get("run_dir"), str) or not record["run_dir"]:
        return None, "record.run_dir is required: the results directory of this run"
    if record.get("after") is not None and record["after"] not in STRESS_PHASES:
        return None, "record.after must be one of %s, got %r" % (", ".join(STRESS_PHASES), record["after"])
    return record, None


def _whole_seconds(value):
    """An option's seconds as an int; None when absent or not a number (the module then says what is wrong)."""
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def separate_budget(args, requested):
    """The fact phase's budget the four module runs of ``collector: separate`` share (node_collect.phase_budget); None
    when an option is not a number (each module then refuses it itself)."""
    timeout = _whole_seconds(args.get("timeout"))
    if args.get("timeout") is not None and timeout is None:
        return None
    timeouts = [MODULE_OPTIONS[name]["timeout"]["default"] if timeout is None else timeout for name in requested]
    phase_timeout = _whole_seconds(args.get("phase_timeout"))
    if args.get("phase_timeout") is not None and phase_timeout is None:
        return None
    return phase_budget(timeouts or [0], phase_timeout)


def _under_mitogen(action):
    """Whether Mitogen's strategy runs this action: it mixes its own module execution into the action's class and
    connection (and refuses some of ActionBase's methods)."""
    classes = type(action).__mro__ + type(action._connection).__mro__  # pylint: disable=protected-access
    return any(kind.__module__.startswith("ansible_mitogen") for kind in classes)


def task_timeout_of(exc):
    """The seconds of Ansible's task timeout when ``exc`` is it, else None.

    ansible-core raises its task timeout (TaskTimeoutError, a BaseException carrying ``timeout``) inside the action
    while the module runs; it has no public name to catch it by.
    """
    timeout = getattr(exc, "timeout", None)
    if not any(kind.__name__ == "TaskTimeoutError" for kind in type(exc).__mro__) or not isinstance(timeout, int):
        return None
    return timeout


def record_timed_out(host, requested, record, seconds):
    """Record the groups asked for as not gathered: the fact task ran past its timeout of ``seconds``.

    Only those groups: the verdict must not name a group nobody asked for, and says INCOMPLETE for these
    (gpufleet/facts/raw.py is_overrun), not REJECT. Returns the controller's failure to write it (ResultsWriteError),
    else None; another problem with the record is left: the timeout goes on.
    """
    timed_out = {"changed": False, "failed": True, "msg": TASK_TIMED_OUT % seconds}
    return record_lost(host, dict((name, timed_out) for name in requested), record)


def record_lost(host: str, groups: dict, record: dict) -> ResultsWriteError | None:
    """Write the record of a node that gave nothing (lost, timed out); the ResultsWriteError of a failed write, else
    None (a record that cannot be read is left: the node's own error goes on to Ansible)."""
    try:
        write_record(host, groups, record)
    except ResultsWriteError as exc:
        return exc
    except (ResultsError, OSError):
        pass
    return None


def write_failed(error: ResultsWriteError, before: str | None = None) -> dict:
    """The task's failure when the controller could not write the results directory: the store's message (also
    ``results_write_error``, which roles/facts stops the run on and ``gpufleet validate`` reports), and what had
    happened to the node ``before`` it, when anything had."""
    message = str(error)
    return {"changed": False, "failed": True, "results_write_error": message,
            "msg": message + ("; before that %s" % before if before else "")}


def write_record(host, groups, record):
    """The first reading (record_host_facts), or with ``after`` the health re-read after that stress phase."""
    if record.get("after") is not None:
        return record_host_health_after(host, groups, record)
    return record_host_facts(host, groups, record)


class ActionModule(ActionBase):
    """Run gpufleet.acceptance.node_facts once; set each group's facts as its own action plugin would."""

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = dict((key, value) for key, value in self._task.args.items() if key not in CONTROLLER_OPTIONS)
        requested = args.get("groups")
        if requested is None:
            requested = list(GROUPS)
        elif isinstance(requested, str):
            requested = [part.strip() for part in requested.split(",") if part.strip()]
        if not isinstance(requested, (list, tuple)) or any(name not in GROUPS for name in requested):
            return dict(result, failed=True, msg="groups must be a list of %s, got %r" % (", ".join(GROUPS), requested))
        requested = [str(name) for name in requested]
        collector = self._task.args.get("collector") or "combined"
        if collector not in COLLECTORS:
            return dict(result, failed=True, msg="collector must be one of %s, got %r" % (", ".join(COLLECTORS), collector))
        record = self._task.args.get("record")
        if record is not None:
            record, problem = check_record(record)
            if problem:
                return dict(result, failed=True, msg=problem)
        host = task_vars.get("inventory_hostname", "node")

        budget = separate_budget(args, requested)
        deadline = None if budget is None else time.monotonic() + budget

        def within_budget(module_args):
            # what is left of the one budget: the four runs together (and a second attempt) stay within it
            if deadline is None:
                return module_args
            return dict(module_args, phase_timeout=max(1, int(deadline - time.monotonic())))

        def execute(module, module_args):
            return self._execute_module(module_name=module, module_args=within_budget(module_args), task_vars=task_vars)

        def gather(retry):
            if collector == "separate":
                return {}, separate_results(host, requested, args, execute, MODULE_OPTIONS)
            # the first attempt as asked; a second one after a lost connection gets what is left of the budget
            module_result = self._collect(within_budget(args) if retry else args, task_vars)
            return module_result, group_results(host, requested, module_result)

        try:
            (module_result, groups), reconnected = with_one_reconnect(gather, self._connection)
        except AnsibleConnectionFailure as exc:
            if record is not None:
                # the verdict then says UNREACHABLE with this message (Ansible reports the host the same way)
                lost = {"changed": False, "unreachable": True, "msg": "lost during facts (node_facts): %s" % to_text(exc)}
                failure = record_lost(host, dict((name, lost) for name in requested), record)
                if failure:
                    return dict(result, **write_failed(failure, "the node was lost: %s" % to_text(exc)))
            raise
        except BaseException as exc:  # Ansible's task timeout is a BaseException (task_timeout_of)
            seconds = task_timeout_of(exc)
            if record is not None and seconds is not None:
                failure = record_timed_out(host, requested, record, seconds)
                if failure:
                    # the run stops for the controller's failure: the timeout is told, not raised
                    return dict(result, **write_failed(failure, "the fact task ran past its timeout of %s s" % seconds))
            raise
        if reconnected:
            result["reconnected"] = reconnected
            if record is not None:
                record = dict(record, reconnected=reconnected)
        facts = {}
        for outcome in groups.values():
            facts.update(outcome.get("ansible_facts") or {})
        failed = [name for name in requested if groups[name].get("failed")]
        result.update(changed=False, groups=groups)
        if facts:
            result["ansible_facts"] = facts
        if module_result.get("failed") and not module_result.get("groups"):
            # the run itself failed: keep what Ansible said (module_stderr, exception) for the user
            result.update((key, value) for key, value in module_result.items() if key not in ("groups", "changed"))
        if failed and len(failed) == len(requested):
            result["failed"] = True
            result["msg"] = "; ".join("%s: %s" % (name, groups[name]["msg"]) for name in failed)
        elif failed:
            result["msg"] = "gathered %s; failed %s" % (", ".join(name for name in requested if name not in failed), ", ".join(failed))
        if record is not None:
            self._record(host, groups, record, result)
        return result

    def _collect(self, args, task_vars):
        """node_facts' result from the node: with pipelining, its collection as one program on the interpreter's stdin
        (gpufleet/adapter/node_program.py, the options checked here as AnsibleModule would); else, and under Mitogen
        (whose interpreters stay up, the wrapper's imports paid once), the module through Ansible."""
        if self._task.async_val or _under_mitogen(self) or not self._is_pipelining_enabled("new"):
            return self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        checked = ArgumentSpecValidator(CONTROLLER_CHECKED_SPEC).validate(args)
        if checked.error_messages:
            return {"changed": False, "failed": True, "msg": "; ".join(checked.error_messages)}
        # the node's interpreter as Ansible finds it (ansible_python_interpreter, else discovery)
        module_bits, _path = self._configure_module(module_name=MODULE, module_args=dict(args), task_vars=task_vars)
        self._used_interpreter = module_bits.shebang
        command = self._connection._shell.build_module_command(
            self._compute_environment_string(), module_bits.shebang, "").strip()
        response = self._low_level_execute_command(
            command, sudoable=True, in_data=program(MODULE_UTILS_DIR, checked.validated_parameters))
        data = self._parse_returned_data(response, module_bits.serialization_profile)
        remove_internal_keys(data)
        if self._discovered_interpreter_key:
            data.setdefault("ansible_facts", {})[self._discovered_interpreter_key] = self._discovered_interpreter
        return data

    @staticmethod
    def _record(host, groups, record, result):
        """Write the host's record; leave the raw outputs (now on disk) and the groups' copies of the facts (in the
        result's own ansible_facts) out of the result: Ansible's main process copies a result several times (its
        callbacks, the registered variable), and at fleet scale the second copy of every host's facts cost as much."""
        try:
            run, written = write_record(host, groups, record)
        except ResultsWriteError as exc:
            result.update(write_failed(exc))
            return
        except (ResultsError, OSError) as exc:
            result["failed"] = True
            result["msg"] = "facts gathered but not recorded: results directory %s: %s" % (record["run_dir"], exc)
            return
        for outcome in groups.values():
            outcome.pop("raw", None)
            outcome.pop("ansible_facts", None)
        result["record"] = run.host_file(host)
        result["raw_files"] = sum(len(index) for index in written["raw"].values())
