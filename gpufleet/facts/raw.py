# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading one host's raw collector results: the checked, parsed output of each tool.

The node returns raw text only; here it is checked (tool
missing? non-zero exit? timed out?) and parsed, and every failure becomes a short message
naming the tool, the line and the host, never a traceback. The lines a parser skipped as
foreign (a banner, a prompt: its ``ignored_lines``) are kept on the reader with the command
they came from, for the group's facts (``gpufleet.facts.node.build_group``).

A tool that overran the node's fact phase (timed out, or skipped after a timeout or once the phase's
budget was spent, or its output cut once the phase's output budget was spent: plugins/module_utils/node_collect.py)
left its part of the facts unknown, not bad: :func:`overruns` names those tools for the group's facts (``overran``),
and :func:`is_overrun` tells a fact error of that kind from one that found something wrong, so the verdict says
INCOMPLETE, not REJECT. A run whose output the spent output budget cut (``truncated_reason``) reads here as a skipped
one (:func:`as_read`): what was kept of it is not the tool's answer, so it is never parsed, and each builder leaves its
part unknown as it does for a skipped tool. One cut by its own per-stream cap is still parsed, and a parse that fails
says it was cut.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from gpufleet.facts.shapes import FactNotes, NotedIgnoredLine
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.registry import parse


# The fact task itself ran past Ansible's task timeout: nothing came back from the node (the action records it so).
TASK_TIMED_OUT = "the fact task ran past its timeout of %s s before the node answered: nothing came back from it"
# A fact error saying a tool overran (see the module docstring) or that the fact task did.
_OVERRUN = re.compile(r"` (?:timed out\b|skipped: |truncated: )|" + re.escape(TASK_TIMED_OUT.split(" %s ", 1)[0]))
# Commands named one by one in a list of skipped ones; the rest are counted.
_NAMED_SKIPS = 3

# A ``{"gpufleet_<group>": {...}}`` dict of facts, as a builder returns it.
FactsT = TypeVar("FactsT", bound=Mapping[str, object])


class FactError(Exception):
    """A fact that cannot be established; the message is shown to the user as is."""


def is_overrun(message: str) -> bool:
    """Whether a fact error says a tool overran the fact phase (or the fact task ran out of time), not a fault."""
    return bool(_OVERRUN.search(str(message or "")))


def _seconds(value: Any) -> str:
    return ("%.1f" % value).rstrip("0").rstrip(".") if isinstance(value, (int, float)) else str(value)


def timed_out_text(label: str, entry: dict[str, Any]) -> str:
    """```cmd` timed out after 30 s``; stopped by the phase's end:
    ``... (the fact phase's budget of 150 s ran out)``."""
    if entry.get("timeout_s") is None:
        return "`%s` timed out" % label
    text = "`%s` timed out after %s s" % (label, _seconds(entry["timeout_s"]))
    if entry.get("phase_budget_s") is not None:
        text += " (the fact phase's budget of %s s ran out)" % _seconds(entry["phase_budget_s"])
    return text


def _tool_runs(raw: Any) -> Iterator[dict[str, Any]]:
    """Every run_tool entry (a dict with ``cmd`` and ``error``) in a group's raw results, nested ones included."""
    if isinstance(raw, dict):
        if isinstance(raw.get("cmd"), list) and "error" in raw:
            yield raw
            return
        for value in raw.values():
            yield from _tool_runs(value)
    elif isinstance(raw, list):
        for value in raw:
            yield from _tool_runs(value)


def _short_label(cmd: list[Any]) -> str:
    return " ".join([os.path.basename(str(cmd[0]))] + [str(part) for part in cmd[1:]]) if cmd else "?"


def _cut_as_skipped(entry: dict[str, Any]) -> dict[str, Any]:
    """A run the spent output budget cut, as builders read a skipped one: no rc, no output, ``truncated: <reason>``."""
    return dict(entry, rc=None, stdout="", stderr="", error="truncated: %s" % entry["truncated_reason"])


def as_read(raw: Any) -> Any:
    """``raw`` as the builders read it: each run whose output the node cut for the fact phase's spent output budget
    (``truncated_reason``) reads as a skipped run (``error`` ``truncated: the fact phase's output budget of 64 MiB was
    spent``); what changes is copied, ``raw`` itself is left as the node sent it (the record keeps what was kept)."""
    if isinstance(raw, dict):
        if isinstance(raw.get("cmd"), list) and "error" in raw:
            return _cut_as_skipped(raw) if raw.get("truncated_reason") and not raw.get("error") else raw
        read = {key: as_read(value) for key, value in raw.items()}
        return raw if all(read[key] is raw[key] for key in raw) else read
    if isinstance(raw, list):
        read_items = [as_read(value) for value in raw]
        return raw if all(new is old for new, old in zip(read_items, raw)) else read_items
    return raw


def overruns(raw: Any) -> list[str]:
    """The tools of one group's raw results that overran the fact phase, for its facts (``overran``).

    Each timed-out run (```nvidia-smi -q` timed out after 30 s``), then the skipped runs by reason
    (```ethtool eth3`, `ethtool -i eth3` and 20 more skipped: the fact phase's budget of 150 s was spent
    (ethtool ran 148 s of it in 9 runs)``), and the runs whose output the spent output budget cut the same way
    (```ethtool eth7`, `ethtool -i eth7` truncated: the fact phase's output budget of 64 MiB was spent``); [] when
    every tool answered whole.
    """
    timed_out: list[str] = []
    cut: dict[tuple[str, ...], list[str]] = {}
    for entry in _tool_runs(as_read(raw)):
        error = str(entry.get("error") or "")
        label = _short_label(entry["cmd"])
        if error == "timeout":
            timed_out.append(timed_out_text(label, entry))
        elif error.startswith(("skipped: ", "truncated: ")):
            cut.setdefault(tuple(error.split(": ", 1)), []).append(label)
    for (how, reason), labels in cut.items():
        named = ", ".join("`%s`" % label for label in labels[:_NAMED_SKIPS])
        more = " and %d more" % (len(labels) - _NAMED_SKIPS) if len(labels) > _NAMED_SKIPS else ""
        timed_out.append("%s%s %s: %s" % (named, more, how, reason))
    return timed_out


def first_line(text: str | None) -> str:
    """The first non-blank line of ``text``, stripped and cut to 300 characters (for messages)."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


class RawReader:
    """Turns one host's raw collector results into parsed data, with clear failures."""

    def __init__(self, host: str, raw: dict[str, Any]) -> None:
        self.host = host
        # a run the spent output budget cut reads as a skipped one (as_read)
        self.raw: dict[str, Any] = as_read(raw)
        # every line a parse skipped as foreign, with its command, in parse order
        self.ignored_lines: list[NotedIgnoredLine] = []

    def command_label(self, key: str) -> str:
        entry = self.raw.get(key) or {}
        cmd = entry.get("cmd") or [key]
        return " ".join(str(part) for part in cmd)

    def output(self, key: str, allow_rc: tuple[int | None, ...] = (0,)) -> str:
        """stdout of collected command ``key``; FactError when it did not run cleanly."""
        entry = self.raw.get(key)
        if entry is None:
            raise FactError("%s: %s was not collected" % (self.host, key))
        label = self.command_label(key)
        if entry.get("error") == "not_found":
            raise FactError("%s: %s not found on the node" % (self.host, entry["cmd"][0]))
        if entry.get("error") == "timeout":
            raise FactError("%s: %s" % (self.host, timed_out_text(label, entry)))
        if entry.get("error"):
            raise FactError("%s: `%s` %s" % (self.host, label, entry["error"]))
        if entry.get("rc") not in allow_rc:
            said = first_line(entry.get("stderr")) or first_line(entry.get("stdout")) or "no output"
            raise FactError("%s: `%s` exited %s: %s" % (self.host, label, entry.get("rc"), said))
        stdout: str = entry.get("stdout") or ""
        return stdout

    def parsed(self, key: str, kind: str, allow_rc: tuple[int | None, ...] = (0,)) -> Any:
        """Parse collected command ``key`` as ``kind``; FactError names tool, line and host."""
        text = self.output(key, allow_rc=allow_rc)
        try:
            result = parse(kind, text)
        except ParseError as exc:
            where = " line %d:" % exc.line if exc.line is not None else ""
            raise FactError("%s: cannot read `%s` output:%s %s%s" % (self.host, self.command_label(key), where,
                                                                     exc.message, self.truncation(key))) from None
        if isinstance(result, dict):
            label = self.command_label(key)
            self.ignored_lines.extend({"line": entry["line"], "text": entry["text"], "why": entry["why"],
                                       "command": label} for entry in result.pop("ignored_lines", ()))
        return result

    def attach_notes(self, facts: FactsT) -> FactsT:
        """``facts`` (``{"gpufleet_<group>": {...}}``) with what the reader saw beside the facts, in the group dict,
        each only when there is one: ``ignored_lines`` (the lines the parses skipped as foreign) and ``overran`` (the
        tools of the raw results that overran the fact phase, :func:`overruns`: the verdict names them)."""
        notes: FactNotes = {"ignored_lines": list(self.ignored_lines), "overran": overruns(self.raw)}
        for group_facts in facts.values():
            if isinstance(group_facts, dict):
                group_facts.update((key, value) for key, value in notes.items() if value)
        return facts

    def truncation(self, key: str) -> str:
        """`` (output truncated: ...)`` when the node cut command ``key``'s output at its cap, else ""."""
        entry = self.raw.get(key) or {}
        if not entry.get("truncated"):
            return ""
        printed = entry.get("stdout_bytes")
        kept = len((entry.get("stdout") or "").encode("utf-8", errors="replace"))
        if not isinstance(printed, int):
            return " (output truncated on the node)"
        return " (output truncated on the node: it printed %d bytes, the first %d were kept)" % (printed, kept)

    def optional(self, key: str, kind: str, allow_rc: tuple[int | None, ...] = (0,)) -> Any:
        """Like parsed(), but a tool that is absent yields None (e.g. ibstat on a box without RDMA)."""
        entry = self.raw.get(key)
        if entry is None or entry.get("error") == "not_found":
            return None
        return self.parsed(key, kind, allow_rc=allow_rc)
