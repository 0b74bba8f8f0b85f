# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading one host's raw collector results: the checked, parsed output of each tool.

The node returns raw text only; here it is checked (tool
missing? non-zero exit? timed out?) and parsed, and every failure becomes a short message
naming the tool, the line and the host, never a traceback. The lines a parser skipped as
foreign (a banner, a prompt: its ``ignored_lines``) are kept on the reader with the command
they came from, for the group's facts (``gpufleet.facts.node.build_group``).
"""

from __future__ import annotations

from gpufleet.parsers.common import ParseError
from gpufleet.parsers.registry import parse


class FactError(Exception):
    """A fact that cannot be established; the message is shown to the user as is."""


def first_line(text):
    """The first non-blank line of ``text``, stripped and cut to 300 characters (for messages)."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


class RawReader:
    """Turns one host's raw collector results into parsed data, with clear failures."""

    def __init__(self, host, raw):
        self.host = host
        self.raw = raw
        # {"command", "line", "text", "why"} of every line a parse skipped as foreign, in parse order
        self.ignored_lines: list[dict] = []

    def command_label(self, key):
        entry = self.raw.get(key) or {}
        cmd = entry.get("cmd") or [key]
        return " ".join(str(part) for part in cmd)

    def output(self, key, allow_rc=(0,)):
        """stdout of collected command ``key``; FactError when it did not run cleanly."""
        entry = self.raw.get(key)
        if entry is None:
            raise FactError("%s: %s was not collected" % (self.host, key))
        label = self.command_label(key)
        if entry.get("error") == "not_found":
            raise FactError("%s: %s not found on the node" % (self.host, entry["cmd"][0]))
        if entry.get("error"):
            raise FactError("%s: `%s` %s" % (self.host, label, entry["error"]))
        if entry.get("rc") not in allow_rc:
            said = first_line(entry.get("stderr")) or first_line(entry.get("stdout")) or "no output"
            raise FactError("%s: `%s` exited %s: %s" % (self.host, label, entry.get("rc"), said))
        return entry.get("stdout") or ""

    def parsed(self, key, kind, allow_rc=(0,)):
        """Parse collected command ``key`` as ``kind``; FactError names tool, line and host."""
        text = self.output(key, allow_rc=allow_rc)
        try:
            result = parse(kind, text)
        except ParseError as exc:
            where = " line %d:" % exc.line if exc.line is not None else ""
            raise FactError("%s: cannot read `%s` output:%s %s%s" % (self.host, self.command_label(key), where, exc.message,
                                                                     self.truncation(key))) from None
        if isinstance(result, dict):
            label = self.command_label(key)
            self.ignored_lines.extend(dict(entry, command=label) for entry in result.pop("ignored_lines", ()))
        return result

    def attach_ignored(self, facts: dict) -> dict:
        """``facts`` (``{"gpufleet_<group>": {...}}``) with this reader's ``ignored_lines`` in its group dict, when any."""
        for group_facts in facts.values():
            if self.ignored_lines and isinstance(group_facts, dict):
                group_facts["ignored_lines"] = list(self.ignored_lines)
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

    def optional(self, key, kind, allow_rc=(0,)):
        """Like parsed(), but a tool that is absent yields None (e.g. ibstat on a box without RDMA)."""
        entry = self.raw.get(key)
        if entry is None or entry.get("error") == "not_found":
            return None
        return self.parsed(key, kind, allow_rc=allow_rc)
