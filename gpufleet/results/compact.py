# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""results.json as schema ``gpufleet.results/v2``: the run as one document, each value said once.

A fleet's nodes repeat each other: the same check ids, statuses, messages and coverage words on every healthy node.
Schema v1 wrote them out per node (about 50 KB a node with its facts). v2 keeps every JSON value of a check result and
of a coverage item once, in the document's ``values`` table, and writes each check and item as a row of indexes into
it (the row's fields: the document's ``fields``). The readings (facts, the raw index, the health re-reads, each
benchmark's parsed output) stay in ``hosts/<host>.json`` (named by ``record``), the raw outputs under ``raw/``.
Everything else of a host record is kept as it is.

- A row: one index (into ``values``) per field of ``fields[<kind>]``, in that order; ``null`` where the object has
  no such key (a key whose value is null has the index of null). Keys beyond the declared fields make one more
  element, the index of an object holding them. An entry that is not an object is its value's index alone.
- :func:`expand_document` gives back v1's shapes (checks and coverage items as objects) from a v2 document.

Pure: no I/O. docs/results-schema.md describes both; gpufleet/report/schemas/results.schema.json validates v2.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, cast

from gpufleet.results.shapes import ReportHost, Row
from gpufleet.results.store import HOSTS_DIR, safe_name

DOCUMENT_SCHEMA = "gpufleet.results/v2"

# the fields of a row, in order, per kind of row (the document repeats them in ``fields``)
ROW_FIELDS: dict[str, tuple[str, ...]] = {
    "check": ("id", "status", "subject", "measured", "expected", "threshold_source", "message"),
    "coverage_item": ("item", "label", "status", "subject", "expected", "source", "checks", "reason", "fix"),
}
# what of a host record stays in hosts/<host>.json alone: the readings (facts, their raw index, the health re-reads
# after a stress phase; the checks judged them), and of each benchmark the parser's output (the checks hold its figure)
RECORD_ONLY = ("schema", "facts", "raw", "health_after")
BENCHMARK_ONLY = ("parsed",)


class ValueTable:
    """The ``values`` of a document: each distinct JSON value once, by index."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[tuple[type, Any], int] = {}
        self._plain: dict[str | None, int] = {}
        # the index of a string or null already in the table, else None
        self.known_plain = self._plain.get

    def ref(self, value: Any) -> int:
        """The index of ``value``, added when it is new. 1, 1.0, true and "1" are four values. An object or list is
        known by its repr (half the time of a JSON encoding at 1,024 nodes): one with its keys in another order is
        kept again, which costs bytes, never a wrong value (the checks build their objects in one order). A float too,
        as -0.0 equals 0.0."""
        # a string or null is most values (94 % at 2,000 nodes): each is its own key, no tuple built
        if value is None or type(value) is str:  # pylint: disable=unidiomatic-typecheck
            index = self._plain.get(value)
            if index is None:
                index = self._plain[value] = len(self.values)
                self.values.append(value)
            return index
        key = (type(value), repr(value)) if isinstance(value, (dict, list, float)) else (type(value), value)
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self.values)
            self.values.append(value)
        return index


def encode_row(item: Any, fields: Sequence[str], table: ValueTable) -> Row:
    """``item`` as a row of ``fields`` (the module docstring); an entry that is no object: its value's index."""
    if not isinstance(item, dict):
        return table.ref(item)
    ref, known = table.ref, table.known_plain
    row: list[int | None] = []
    for name in fields:
        if name not in item:
            row.append(None)
            continue
        # a string or null met before (most values): its index without a call
        value = item[name]
        index = known(value) if value is None or type(value) is str else None  # pylint: disable=unidiomatic-typecheck
        row.append(ref(value) if index is None else index)
    # an item with no key beyond the fields (most) is not searched for one
    if len(item) > len(row) - row.count(None):
        row.append(ref({key: value for key, value in item.items() if key not in fields}))
    return row


def decode_row(row: Any, fields: Sequence[str], values: Sequence[Any]) -> Any:
    """The object (or value) a row of ``fields`` stands for."""
    if not isinstance(row, list):
        return values[row]
    item = {name: values[index] for name, index in zip(fields, row) if index is not None}
    if len(row) > len(fields):
        item.update(values[row[len(fields)]])
    return item


def _encode_rows(items: Any, kind: str, table: ValueTable) -> Any:
    # a damaged record's list that is no list is kept as it is: the report shows what the record holds
    if not isinstance(items, list):
        return items
    return [encode_row(item, ROW_FIELDS[kind], table) for item in items]


def _decode_rows(rows: Any, fields: Sequence[str], values: Sequence[Any]) -> Any:
    if not isinstance(rows, list):
        return rows
    return [decode_row(row, fields, values) for row in rows]


def _compact_coverage(coverage: Any, table: ValueTable) -> Any:
    if not isinstance(coverage, dict):
        return coverage
    compact = dict(coverage)
    if "items" in compact:
        compact["items"] = _encode_rows(compact["items"], "coverage_item", table)
    if isinstance(compact.get("incomplete"), list):
        compact["incomplete"] = [table.ref(text) for text in compact["incomplete"]]
    return compact


def compact_host(name: str, record: Mapping[str, Any], table: ValueTable) -> ReportHost:
    """``hosts.<name>`` of a v2 document: the host record without its readings (RECORD_ONLY, BENCHMARK_ONLY), its
    checks and coverage items as rows of ``table``, and ``record``: the file that holds it all, relative to the results
    directory."""
    host: dict[str, Any] = {key: value for key, value in record.items() if key not in RECORD_ONLY}
    host["record"] = "%s/%s.json" % (HOSTS_DIR, safe_name(name))
    if "checks" in host:
        host["checks"] = _encode_rows(host["checks"], "check", table)
    if "coverage" in host:
        host["coverage"] = _compact_coverage(host["coverage"], table)
    if isinstance(host.get("benchmarks"), list):
        host["benchmarks"] = [{key: value for key, value in bench.items() if key not in BENCHMARK_ONLY}
                              if isinstance(bench, dict) else bench for bench in host["benchmarks"]]
    return cast(ReportHost, host)


def _remap_rows(rows: Any, mapping: Sequence[int]) -> Any:
    if not isinstance(rows, list):
        return rows
    return [mapping[row] if not isinstance(row, list) else [None if index is None else mapping[index] for index in row]
            for row in rows]


def remap_host(host: ReportHost, mapping: Sequence[int]) -> ReportHost:
    """``host`` (:func:`compact_host`'s, with the indexes of one table) with each index ``i`` made ``mapping[i]``:
    the index of the same value in another table (the tables of several readers made one: report/digest.py)."""
    entry: dict[str, Any] = dict(host)
    if "checks" in entry:
        entry["checks"] = _remap_rows(entry["checks"], mapping)
    coverage = entry.get("coverage")
    if isinstance(coverage, dict):
        coverage = dict(coverage)
        if "items" in coverage:
            coverage["items"] = _remap_rows(coverage["items"], mapping)
        if isinstance(coverage.get("incomplete"), list):
            coverage["incomplete"] = [mapping[index] for index in coverage["incomplete"]]
        entry["coverage"] = coverage
    return cast(ReportHost, entry)


def compact_hosts(records: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, ReportHost], list[Any]]:
    """Every host of ``records`` (by name, sorted) compacted, and the ``values`` they refer to."""
    table = ValueTable()
    hosts = {name: compact_host(name, records[name], table) for name in sorted(records)}
    return hosts, table.values


def _expand_coverage(coverage: Any, fields: Mapping[str, Sequence[str]], values: Sequence[Any]) -> Any:
    if not isinstance(coverage, dict):
        return coverage
    expanded = dict(coverage)
    if "items" in expanded:
        expanded["items"] = _decode_rows(expanded["items"], fields["coverage_item"], values)
    if isinstance(expanded.get("incomplete"), list):
        expanded["incomplete"] = [values[index] for index in expanded["incomplete"]]
    return expanded


def expand_host(host: Mapping[str, Any], fields: Mapping[str, Sequence[str]], values: Sequence[Any]) -> dict[str, Any]:
    """A host of a v2 document with its checks and coverage items as objects again (v1's shapes)."""
    expanded = dict(host)
    if "checks" in expanded:
        expanded["checks"] = _decode_rows(expanded["checks"], fields["check"], values)
    if "coverage" in expanded:
        expanded["coverage"] = _expand_coverage(expanded["coverage"], fields, values)
    return expanded


def expand_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """A v2 ``document`` with every host expanded (:func:`expand_host`), without ``fields`` and ``values``.
    ValueError when it is no v2 document."""
    if not isinstance(document, Mapping) or document.get("schema") != DOCUMENT_SCHEMA:
        raise ValueError("not a %s document (schema %r)" % (
            DOCUMENT_SCHEMA, document.get("schema") if isinstance(document, Mapping) else None))
    fields, values = document["fields"], document["values"]
    expanded = {key: value for key, value in document.items() if key not in ("fields", "values")}
    expanded["hosts"] = {name: expand_host(host, fields, values) for name, host in document["hosts"].items()}
    return expanded


def document_fields() -> dict[str, list[str]]:
    """``fields`` of a v2 document."""
    return {kind: list(names) for kind, names in ROW_FIELDS.items()}


__all__ = ["DOCUMENT_SCHEMA", "ROW_FIELDS", "ValueTable", "compact_host", "compact_hosts", "decode_row",
           "document_fields", "encode_row", "expand_document", "expand_host"]
