# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The results directory of one acceptance run (schema ``gpufleet.results/v1``, docs/results-schema.md).

Controller side. Every file is written atomically (a temporary file in the same directory,
flushed and fsynced, then renamed over the target), and each host's record is written as
soon as its facts arrive, so a run that is killed keeps every host it had finished and
:meth:`RunDir.resume` tells a rerun which hosts it can skip::

    <run dir>/run.json                       the run: schema, id, started/finished, inventory, playbook, profiles
    <run dir>/hosts/<host>.json              one host: facts, fact errors, claim, profile, checks, verdict, benchmarks
    <run dir>/raw/<host>/<group>/<key>.txt   what the node printed (stdout), <key>.stderr.txt when it said more
    <run dir>/fleet.json                     the fleet verdict, counts and each node's verdict (written last)
    <run dir>/run.lock                       while ``gpufleet validate`` runs: who runs (:class:`RunLock`)

Names that come from a node or an inventory are never used as paths as they are: see :func:`safe_name`.
A write that fails (a full disk, a quota, a read-only or unwritable directory, an I/O error) leaves the old file and
no temporary one, and raises :class:`ResultsWriteError` naming the file, the errno and what is on disk: the
controller's failure, which stops the run (roles/facts), never a node's.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import re
import shlex
import tempfile
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import IO, Any, Literal, cast

from gpufleet.collection import collection_root
from gpufleet.facts import FACT_GROUPS
from gpufleet.results.shapes import (BenchmarkRecord, CoverageCounts, FactsByGroup, FleetDocument, HealthReading,
                                     HostRecord, NodeVerdict, PhaseRecord, ProfileChoice, RawEntry, RawIndex,
                                     ResumeState, RunRecord)

SCHEMA = "gpufleet.results/v1"

RUN_FILE = "run.json"
FLEET_FILE = "fleet.json"
HOSTS_DIR = "hosts"
RAW_DIR = "raw"
LOCK_FILE = "run.lock"
# What a results directory holds before its run.json: the directories RunDir.create makes first, and the lock.
BEFORE_RUN_FILE = frozenset((HOSTS_DIR, RAW_DIR, LOCK_FILE))

# The shape of one benchmark record (written by the bench_run action, docs/benchmarks.md): the types add_benchmark
# checks, per key of shapes.BenchmarkRecord (tests/unit/gpufleet/results/test_record_shapes.py holds them to it).
BENCHMARK_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "command": (list,),
    "environment": (dict,),
    "message_size_bytes": (int, type(None)),
    "algorithm": (str, type(None)),
    "raw_output_path": (str, type(None)),
    "parsed": (dict, list, type(None)),
    "started": (str,),
    "duration_s": (int, float, type(None)),
    # optional (the benchmark runner, docs/benchmarks.md): a record may leave them out
    "kind": (str, type(None)),
    "hosts": (list,),
    "outcome": (str, type(None)),
    "reason": (str, type(None)),
    "rc": (int, type(None)),
    "repeat": (int,),
    "round": (int, type(None)),
    "group": (str, type(None)),
    "job_id": (str, type(None)),
    "stderr_path": (str, type(None)),
    # the NVML sampler's per-GPU summary of the run (gpufleet/facts/nvml_samples.py summarise), where one ran beside it
    "samples": (list, type(None)),
    # a run that the controller lost its connection to mid-run and ran again after one reconnect: what happened
    "reconnected": (str, type(None)),
}
# The fields of BENCHMARK_FIELDS a record may leave out: kind, hosts, outcome, reason, rc, repeat, round, group,
# job_id, stderr_path, samples, reconnected.
BENCHMARK_OPTIONAL: frozenset[str] = BenchmarkRecord.__optional_keys__
# The values of the optional ``kind`` and ``outcome`` fields.
BENCHMARK_KINDS = ("allreduce_single", "allreduce_multi", "allreduce_pair", "iperf3", "iperf3_concurrent", "ib_write_bw", "ib_write_lat",
                   "nvbandwidth", "ib_counters", "gpu_compute")
# "skipped": the benchmark was asked for but could not apply to the host (bench_record; the reason says why)
BENCHMARK_OUTCOMES = ("ok", "hang", "missing_binary", "launcher_error", "crash", "failed", "unreachable", "skipped")


_SAFE = re.compile(r"[^A-Za-z0-9._-]")

# The stress phases after which the health facts are read again (host record key ``health_after``), and the fact
# groups that reading holds: the kernel log's Xids (host), ECC, remapped rows, PCIe link and NVLink counters (gpu), IB
# port counters (nic). docs/results-schema.md.
STRESS_PHASES = ("benchmarks", "burn_in")
HEALTH_GROUPS = ("gpu", "nic", "host")


class ResultsError(Exception):
    """A results directory that cannot be written or read as schema v1; the message says which file."""


# How a write into the results directory failed, in words, and what frees it (ResultsWriteError); another errno is
# WRITE_FAILED.
WRITE_FAILURES = {
    errno.ENOSPC: ("is full", "free space"),
    errno.EDQUOT: ("is over its disk quota", "free space or raise the quota"),
    errno.EROFS: ("is on a read-only file system", "make it writable"),
    errno.EACCES: ("is not writable by this user", "give this user write access"),
    errno.EPERM: ("is not writable by this user", "give this user write access"),
    errno.EIO: ("had an I/O error", "check the disk"),
}
WRITE_FAILED = ("could not be written", "fix it")


def write_failure_message(path: str, error: OSError, root: str | None = None) -> str:
    """The words of :class:`ResultsWriteError`: the directory, what went wrong (errno name and strerror), the file
    (relative to the results directory ``root``), what is on disk of it and what to do; with ``root``, the command
    that resumes the run."""
    code = error.errno
    state, remedy = WRITE_FAILURES.get(code, WRITE_FAILED) if code is not None else WRITE_FAILED
    said = error.strerror or str(error)
    cause = "%s: %s" % (errno.errorcode[code], said) if code is not None and code in errno.errorcode else said
    kept = "keeps its earlier content" if os.path.exists(path) else "was not written"
    if root:
        return ("results directory %s %s (%s) writing %s, which %s; %s and resume: gpufleet validate --out %s"
                % (root, state, cause, os.path.relpath(path, root), kept, remedy, shlex.quote(root)))
    return ("directory %s %s (%s) writing %s, which %s; %s and write it again"
            % (os.path.dirname(os.path.abspath(path)), state, cause, os.path.basename(path), kept, remedy))


class ResultsWriteError(ResultsError, OSError):
    """A file of the results directory the controller could not write (a full disk, a quota, a read-only or
    unwritable directory, an I/O error): the run's failure, never a node's. Still an OSError with its errno for the
    callers that catch OSError; the message is :func:`write_failure_message`'s."""

    def __init__(self, path: str, error: OSError, root: str | None = None) -> None:
        super().__init__(error.errno, error.strerror or str(error), path)
        self.message = write_failure_message(path, error, root)

    def __str__(self) -> str:
        return self.message


@contextlib.contextmanager
def writing(path: str, root: str | None = None) -> Iterator[None]:
    """Within the block, an OSError is a failed write of ``path`` (:class:`ResultsWriteError`, ``root``: the results
    directory it belongs to); one already named so goes on as it is."""
    try:
        yield
    except ResultsWriteError:
        raise
    except OSError as exc:
        raise ResultsWriteError(path, exc, root) from exc


def utc_now() -> str:
    """The current time as ISO 8601 UTC with a ``Z`` (second precision)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_run_id() -> str:
    """A run id (and default directory name) from the current UTC time: ``20260131T120000Z``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def safe_name(text: object) -> str:
    """A file name for ``text`` (a host, group or tool key) that cannot leave its directory.

    Characters outside ``[A-Za-z0-9._-]`` become ``_`` and a leading dot is dropped; when that
    changed anything, 8 hex digits of the name's SHA-1 are appended so two different names never
    share a file (``/proc/sys/x`` and ``_proc_sys_x`` stay apart).
    """
    text = str(text)
    cleaned = _SAFE.sub("_", text).lstrip(".")[:120] or "unnamed"
    if cleaned != text:
        cleaned = "%s-%s" % (cleaned, hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8])
    return cleaned


def _fsync_dir(path: str) -> None:
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


@contextlib.contextmanager
def _temporary_beside(path: str, binary: bool, root: str | None) -> Iterator[tuple[IO[Any], str]]:
    """A stream on a new temporary file in ``path``'s directory (made when missing), and the file's name. When the block
    ends without an exception the file is flushed, synced and made mode 0644; when that or the block fails it is
    removed. Its own failures are :class:`ResultsWriteError` naming ``path``; what the block raises goes on as it is."""
    directory = os.path.dirname(os.path.abspath(path))
    with writing(path, root):
        os.makedirs(directory, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path)[:60], suffix=".tmp", dir=directory)
    stream: IO[Any] = os.fdopen(handle, "wb") if binary else os.fdopen(handle, "w", encoding="utf-8")
    synced = False
    try:
        yield stream, tmp
        with writing(path, root):
            stream.flush()
            os.fsync(stream.fileno())
            stream.close()
            os.chmod(tmp, 0o644)
        synced = True
    finally:
        if not synced:
            # closing flushes what is buffered, which may fail again: the descriptor is closed all the same
            with contextlib.suppress(OSError):
                stream.close()
            discard_staged([(tmp, path)])


@contextlib.contextmanager
def atomic_open(path: str, binary: bool = True, root: str | None = None) -> Iterator[IO[Any]]:
    """A stream whose content replaces ``path`` only when the block ends without an exception: a reader
    (or a crash) sees the old file or the new one, never half. Mode 0644; the directory is fsynced.

    A write that fails (a full disk: at the flush, the fsync or the rename) leaves the old file as it was, removes the
    temporary file and raises :class:`ResultsWriteError` naming ``path`` (``root``: the results directory); what
    the block itself raises goes on as it is."""
    with _temporary_beside(path, binary, root) as (stream, tmp):
        yield stream
    commit_staged([(tmp, path)], root)


def staged_write(path: str, data: bytes, root: str | None = None) -> str:
    """``data`` written and synced to a temporary file beside ``path``, whose name is returned: ``path`` is untouched
    until :func:`commit_staged` puts the file there, so files made apart (by several processes) replace theirs together
    or not at all. A failed write removes the temporary file and raises :class:`ResultsWriteError`."""
    with writing(path, root), _temporary_beside(path, True, root) as (stream, tmp):
        stream.write(data)
    return tmp


def commit_staged(staged: Iterable[tuple[str, str]], root: str | None = None) -> None:
    """Each ``(temporary file, path)`` of :func:`staged_write` put at its path, then the directories synced. When one
    cannot be (:class:`ResultsWriteError`), it and those after it are removed: none is left under its temporary name."""
    staged = list(staged)
    directories = set()
    for place, (tmp, path) in enumerate(staged):
        try:
            with writing(path, root):
                os.replace(tmp, path)
        except BaseException:
            discard_staged(staged[place:])
            raise
        directories.add(os.path.dirname(os.path.abspath(path)))
    for directory in directories:
        _fsync_dir(directory)


def discard_staged(staged: Iterable[tuple[str, str]]) -> None:
    """The temporary files of ``staged`` (:func:`staged_write`) removed; one already gone (put in place) is no
    error."""
    for tmp, _path in staged:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_bytes_atomic(path: str, data: bytes | Iterable[bytes], root: str | None = None) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_open`): the bytes, or their pieces in order (each written
    as it comes, so a large file need not be one bytes object too); ``root``: the results directory it belongs to, for
    the message of a failed write (:class:`ResultsWriteError`)."""
    with writing(path, root), atomic_open(path, root=root) as stream:
        for piece in [data] if isinstance(data, bytes) else data:
            stream.write(piece)


def write_text_atomic(path: str, text: object, root: str | None = None) -> None:
    """:func:`write_bytes_atomic` for text (UTF-8; undecodable characters from a node are kept escaped)."""
    write_bytes_atomic(path, str(text).encode("utf-8", "backslashreplace"), root=root)


def write_json_atomic(path: str, data: object, root: str | None = None) -> None:
    """:func:`write_bytes_atomic` for a JSON document (sorted keys, 1-space indent, trailing newline)."""
    text = json.dumps(data, indent=1, sort_keys=True, default=str) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"), root=root)


def read_json(path: str) -> Any:
    """The JSON document at ``path``; ResultsError naming the file when it is missing or damaged."""
    try:
        # read as bytes and decoded whole: a text stream's newline handling is an eighth of reading 10,000 records
        with open(path, "rb") as stream:
            return json.loads(stream.read().decode("utf-8"))
    except FileNotFoundError:
        raise ResultsError("%s: not found" % path) from None
    except (OSError, ValueError) as exc:
        raise ResultsError("%s: unreadable: %s" % (path, exc)) from None


def collection_version(root: str | None = None) -> str | None:
    """The gpufleet collection's version: MANIFEST.json of an installed collection, else galaxy.yml."""
    root = root or collection_root()
    try:
        with open(os.path.join(root, "MANIFEST.json"), "r", encoding="utf-8") as stream:
            return str(json.load(stream)["collection_info"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml"), "r", encoding="utf-8") as stream:
            for line in stream:
                match = re.match(r"^version:\s*['\"]?([^'\"\s#]+)", line)
                if match:
                    return match.group(1)
    except OSError:
        pass
    return None


def to_plain(value: Any) -> Any:
    """``value`` as plain JSON types (mappings, sequences and str/int/float subclasses from Ansible made plain)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_plain(item) for item in value]
    return str(value)


# What the node's reader says it cut of a tool's output (node_collect), kept in the raw index beside the text.
ReaderMark = Literal["dropped_lines", "truncated", "stdout_bytes", "stderr_bytes"]
READER_MARKS: tuple[ReaderMark, ...] = ("dropped_lines", "truncated", "stdout_bytes", "stderr_bytes")


def benchmark_problems(benchmark: Mapping[str, Any]) -> list[str]:
    """What makes ``benchmark`` no benchmark record (shape: BENCHMARK_FIELDS): missing, mistyped, unknown fields and
    a kind or outcome not of the known ones; [] for a record."""
    problems = ["%s missing" % key for key in BENCHMARK_FIELDS
                if key not in benchmark and key not in BENCHMARK_OPTIONAL]
    problems += ["%s must be %s" % (key, "/".join(kind.__name__ for kind in kinds))
                 for key, kinds in BENCHMARK_FIELDS.items()
                 if key in benchmark and (not isinstance(benchmark[key], kinds)
                                          or isinstance(benchmark[key], bool) and bool not in kinds)]
    problems += ["%s must be one of %s, not %r" % (key, "/".join(choices), benchmark[key])
                 for key, choices in (("kind", BENCHMARK_KINDS), ("outcome", BENCHMARK_OUTCOMES))
                 if benchmark.get(key) is not None and benchmark[key] not in choices]
    problems += ["unknown field %s" % key for key in benchmark if key not in BENCHMARK_FIELDS]
    return problems


def _is_tool_entry(value: object) -> bool:
    """A collector entry: ``{cmd, rc, stdout, stderr, duration_s, error}`` (node_collect.run_tool / read_entry)."""
    return isinstance(value, dict) and "cmd" in value and "stdout" in value


# What ssh prints when a node's host key is not the one known_hosts holds (an impostor, a reinstalled server).
_HOST_KEY_CHANGED = ("Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED")
HOST_KEY_REASON = "SSH host key verification failed (the node's host key is not the one in known_hosts)"


def unreachable_reason(message: object) -> str:
    """Ansible's unreachable message in at most 500 characters on one line; a refused host key is named first,
    for ssh's own words about it come after a banner of ``@`` that a cut would keep instead."""
    text = " ".join(str(message or "unreachable").split())
    if any(marker in text for marker in _HOST_KEY_CHANGED):
        text = "%s: %s" % (HOST_KEY_REASON, re.sub(r"@{3,}", "", text))
        text = " ".join(text.split())
    return text[:500]


def split_fact_results(results: Any) -> tuple[FactsByGroup, dict[str, str], str | None]:
    """Facts, fact errors and unreachability from the four fact tasks' registered results.

    ``results`` maps a group (``topology``, ``gpu``, ``nic``, ``host``) to what its task
    registered. Returns ``(facts, fact_errors, unreachable)``: ``facts[group]`` is the fact dict
    or None (failed, skipped or not run); ``fact_errors[group]`` the message of a group that
    failed; ``unreachable`` the connection error when the node answered no task at all. A node
    that answered some tasks and then dropped its connection is reachable: the groups it did not
    answer are fact errors ("host became unreachable: ...").
    """
    facts: FactsByGroup = {}
    errors: dict[str, str] = {}
    lost: dict[str, str] = {}
    for group, fact_name in FACT_GROUPS.items():
        outcome = results.get(group) if isinstance(results, dict) else None
        facts[group] = None
        if not isinstance(outcome, dict) or not outcome or outcome.get("skipped"):
            continue
        if outcome.get("unreachable"):
            lost[group] = unreachable_reason(outcome.get("msg"))
            continue
        if outcome.get("failed"):
            errors[group] = " ".join(str(outcome.get("msg") or "failed without a message").split())[:2000]
            continue
        value = (outcome.get("ansible_facts") or {}).get(fact_name)
        if isinstance(value, dict):
            facts[group] = value
        else:
            errors[group] = "the task returned no %s" % fact_name
    answered = any(value is not None for value in facts.values()) or errors
    if lost and not answered:
        return facts, errors, next(iter(lost.values()))
    for group, message in lost.items():
        errors[group] = "host became unreachable: %s" % message
    return facts, errors, None


def record_host_facts(host: str, results: Any, options: Mapping[str, Any]) -> tuple[RunDir, HostRecord]:
    """Write ``host``'s record from the fact results into the run directory ``options["run_dir"]``.

    ``options`` are those of results_record (phase facts) and of node_facts' ``record``: ``run_dir``,
    ``claim``, ``settings``, ``profile``, ``profile_overrides``. Returns ``(RunDir, record written)``.
    """
    run = RunDir.open(options["run_dir"])
    request = {"profile": options.get("profile"), "overrides": options.get("profile_overrides")}
    return run, run.record_facts(host, results, claim=options.get("claim"), settings=options.get("settings"),
                                 profile_request=request, reconnected=options.get("reconnected"))


def record_host_health_after(host: str, results: Any, options: Mapping[str, Any]) -> tuple[RunDir, HealthReading]:
    """Write ``host``'s health re-read after the stress phase ``options["after"]`` into ``options["run_dir"]``.

    ``results``: the fact results of the health groups (:data:`HEALTH_GROUPS`) as node_facts gives them. Returns
    ``(RunDir, reading written)`` (:meth:`RunDir.record_health_after`).
    """
    run = RunDir.open(options["run_dir"])
    return run, run.record_health_after(host, options["after"], results)


# What fleet.json keeps of a node's coverage: counts and INCOMPLETE reasons, no item list (nor ``verified``).
COVERAGE_SUMMARY_KEYS = ("claim", "required", "judged", "failed", "skipped", "incomplete", "level", "label")


def _coverage_summary(coverage: Mapping[str, Any]) -> CoverageCounts:
    """The ``coverage`` of a node in fleet.json (:data:`COVERAGE_SUMMARY_KEYS` of the node's, as they are)."""
    return cast(CoverageCounts, {key: coverage.get(key) for key in COVERAGE_SUMMARY_KEYS})


def node_verdict_entry(entry: Any, record: str) -> NodeVerdict:
    """``node_verdicts.<host>`` of fleet.json from the node's entry of ``run_checks``' report (a dict of the checks
    engine's, gpufleet/checks/engine.py); ``record``: its host file, run-relative. ``coverage`` only where the node has
    one (none for an unreachable node)."""
    out: NodeVerdict = {"verdict": entry.get("verdict"), "failed": entry.get("failed", []),
                        "unreachable": entry.get("unreachable"), "profile": entry.get("profile"), "record": record}
    if entry.get("coverage"):
        out["coverage"] = _coverage_summary(entry["coverage"])
    return out


@contextlib.contextmanager
def _locked(directory: str) -> Iterator[None]:
    """An exclusive flock on ``directory`` (its own file descriptor), released on leaving."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


# -- who writes a results directory ------------------------------------------------------------

class RunInUse(ResultsError):
    """A results directory another live run holds or still writes; the message names its process and start."""


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks after boot (``/proc/<pid>/stat`` field 22, as a string): with the
    pid it tells one process from a later one given the same pid. None when no such process runs or /proc is absent."""
    try:
        with open("/proc/%d/stat" % int(pid), "r", encoding="ascii", errors="replace") as handle:
            # the command name (field 2) is in parentheses and may hold spaces or ")": fields count from the last ")"
            fields = handle.read().rsplit(")", 1)[1].split()
        # a zombie (Z) or dead (X) process has ended: it writes nothing more
        return fields[19] if fields[0] not in ("Z", "X") else None
    except (OSError, ValueError, IndexError):
        return None


def process_token(pid: int | None = None) -> str:
    """``<pid>:<start ticks>`` of process ``pid`` (this one by default), ``<pid>:unknown`` without /proc: the form of
    run.json's ``invocation`` (the results_record action's token of its ansible-playbook)."""
    pid = os.getpid() if pid is None else int(pid)
    return "%d:%s" % (pid, process_start(pid) or "unknown")


def token_alive(token: object) -> bool:
    """Whether the process a token names still runs: its pid is alive with the same start (a pid the kernel gave to
    another process since is not it). A token without a start (``unknown``, no /proc) cannot be told: False."""
    pid, _sep, start = str(token or "").partition(":")
    if not pid.isdigit() or not start or start == "unknown":
        return False
    return process_start(int(pid)) == start


def live_writer_message(directory: str, token: object) -> str:
    """Why a results directory cannot be reopened while the ansible-playbook run that opened it last still runs."""
    return ("%s is still being written by the ansible-playbook run that opened it last: %s runs; wait for it to end, "
            "or stop it, before resuming" % (directory, token_process(token)))


# The environment that marks the processes of one ansible-playbook run the gpufleet CLI starts (gpufleet/cli/
# run_processes.py): the results directory and which start of ansible-playbook it is. Every process forked or started
# from ansible-playbook inherits both, whatever session or process group it makes its own (Ansible's workers call
# setsid()): /proc/<pid>/environ tells them all.
RESULTS_DIR_ENV = "GPUFLEET_RESULTS_DIR"
LAUNCH_ENV = "GPUFLEET_LAUNCH"


def _environment(pid: int) -> set[bytes]:
    """The ``NAME=value`` entries process ``pid`` started with; none when it cannot be read (gone, another user's)."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as handle:
            return set(handle.read().split(b"\0"))
    except OSError:
        return set()


def _command_name(pid: int) -> str:
    try:
        with open("/proc/%d/comm" % pid, "r", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip() or "?"
    except OSError:
        return "?"


def launch_processes(directory: str, launch: str | None = None, other_than: str | None = None) -> dict[int, str]:
    """``{pid: command name}`` of the live processes (never this one) that an ansible-playbook run for the results
    directory ``directory`` started (its environment, ``RESULTS_DIR_ENV``); of the start ``launch`` only when given,
    never of the start ``other_than`` (``LAUNCH_ENV``). Only processes whose environment can be read count: this
    user's (a ``become`` child running as root is not seen)."""
    mark = ("%s=%s" % (RESULTS_DIR_ENV, os.path.realpath(directory))).encode("utf-8", "surrogateescape")
    found: dict[int, str] = {}
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if pid == os.getpid():
            continue
        environment = _environment(pid)
        if mark not in environment:
            continue
        started = {entry.partition(b"=")[2].decode("utf-8", "replace") for entry in environment
                   if entry.startswith(LAUNCH_ENV.encode("ascii") + b"=")}
        if (launch is not None and launch not in started) or (other_than is not None and other_than in started):
            continue
        if process_start(pid) is not None:  # not a zombie: it may still write
            found[pid] = _command_name(pid)
    return found


def process_count(count: int) -> str:
    """``1 process``, ``2 processes``."""
    return "%d process%s" % (count, "" if count == 1 else "es")


def process_list(processes: dict[int, str]) -> str:
    """``4242 (ansible-playboo), 4250 (sh)``: pids and command names, by pid."""
    return ", ".join("%d (%s)" % (pid, processes[pid]) for pid in sorted(processes))


def writers_still_running(directory: str, invocation: object, own_launch: str | None = None) -> str | None:
    """Why ``directory`` cannot be reopened yet, or None: processes of an earlier ansible-playbook run for it still run
    (its workers and what they started, :func:`launch_processes`, any but the start ``own_launch``), or the
    ansible-playbook run.json names (``invocation``) does (started without the gpufleet CLI, it marks no process)."""
    processes = launch_processes(directory, other_than=own_launch)
    if processes:
        verb, pronoun = ("runs", "it") if len(processes) == 1 else ("run", "them")
        return ("%s is still being written by an earlier run: %s of it still %s: %s; wait for %s to end, or stop %s, "
                "before resuming" % (directory, process_count(len(processes)), verb, process_list(processes), pronoun,
                                     pronoun))
    if token_alive(invocation):
        return live_writer_message(directory, invocation)
    return None


def started_utc(start_ticks: object) -> str | None:
    """A process start in clock ticks after boot (:func:`process_start`) as ISO 8601 UTC; None when not told."""
    try:
        with open("/proc/stat", "r", encoding="ascii") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
        seconds = boot + int(str(start_ticks)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, StopIteration, IndexError):
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def token_process(token: object) -> str:
    """``process 4242 (started 2026-01-31T12:00:00Z)`` for a token (:func:`process_token`), for a message."""
    pid, _sep, start = str(token or "").partition(":")
    return "process %s (started %s)" % (pid or "?", started_utc(start) or "at an unknown time")


class RunLock:
    """The lock one ``gpufleet validate`` holds on its results directory for the whole run: ``run.lock``, an flock
    (released by the kernel when the process ends, however it ends) on a file that says who holds it: ``{pid,
    started, token, command}``. Its descriptor is not inherited (Python opens files close-on-exec): ansible-playbook
    and anything it starts never hold the lock, so it is free once the CLI is gone.

    :meth:`acquire` raises RunInUse naming the holder while another live run holds it, and takes over the lock a
    dead process left (its file still names it: returned, to be said). :meth:`release` removes the file, and the
    directory when the lock made it and it holds nothing else."""

    def __init__(self, directory: str, command: str = "gpufleet") -> None:
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, LOCK_FILE)
        self.command = command
        self.created = False
        self._descriptor: int | None = None

    def acquire(self) -> dict | None:
        """Hold the lock; returns what the lock file said of a dead holder it took over, else None."""
        self.created = not os.path.isdir(self.directory)
        os.makedirs(self.directory, exist_ok=True)
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_lock(descriptor)
                os.close(descriptor)
                raise RunInUse(self._in_use(holder)) from None
            if self._still_the_file(descriptor):
                break
            os.close(descriptor)  # its holder removed it between our open and our lock: lock the new file
        self._descriptor = descriptor
        stale = _read_lock(descriptor)
        token = process_token()
        record = {"pid": os.getpid(), "started": started_utc(token.partition(":")[2]), "token": token,
                  "command": self.command}
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, (json.dumps(record, sort_keys=True) + "\n").encode("utf-8"), 0)
        os.fsync(descriptor)
        return stale or None

    def _still_the_file(self, descriptor: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(descriptor).st_ino
        except FileNotFoundError:
            return False

    def _in_use(self, holder: dict) -> str:
        if not holder:
            return ("%s is in use by another run, which is starting (%s holds no process yet): wait for it, or choose "
                    "another results directory" % (self.directory, self.path))
        return ("%s is in use by another run: %s holds %s; wait for it to end, or choose another results directory"
                % (self.directory, lock_holder(holder), self.path))

    def release(self) -> None:
        """Give the lock back: the file removed first (a later run makes its own), then the descriptor closed."""
        if self._descriptor is None:
            return
        try:
            if self._still_the_file(self._descriptor):
                os.unlink(self.path)
        finally:
            os.close(self._descriptor)
            self._descriptor = None
        if self.created:
            with contextlib.suppress(OSError):
                os.rmdir(self.directory)  # made for the lock and left empty: the run wrote nothing


def lock_holder(holder: dict) -> str:
    """``process 4242 (gpufleet validate, started 2026-01-31T12:00:00Z)`` from what a lock file says."""
    return "process %s (%s, started %s)" % (holder.get("pid", "?"), holder.get("command") or "gpufleet",
                                            holder.get("started") or "at an unknown time")


def _read_lock(descriptor: int) -> dict:
    """What a lock file says (``{}`` when empty or unreadable: a holder that has not written yet)."""
    try:
        data = os.pread(descriptor, 4096, 0)
        record = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def foreign_contents(path: str) -> str | None:
    """What makes ``path`` no place to write a run's results into, in words; None when it is: a directory that does
    not exist yet, an empty one, or a gpufleet results directory (a run.json of this schema, or only what a run
    writes before its run.json: empty ``hosts/`` and ``raw/``, ``run.lock``). A symbolic link is named as such,
    whatever it points to: a run writes into the directory it was given, not into another one."""
    if os.path.islink(path):
        return "a symbolic link (to %s)" % os.readlink(path)
    if not os.path.exists(path):
        return None
    if not os.path.isdir(path):
        return "a file, not a directory"
    entries = sorted(os.listdir(path))
    if RUN_FILE in entries:
        try:
            RunDir.open(path)
            return None
        except ResultsError as exc:
            return "a directory whose %s is not a %s run (%s)" % (RUN_FILE, SCHEMA, exc)
    if all(entry in BEFORE_RUN_FILE and not (os.path.isdir(os.path.join(path, entry))
                                             and os.listdir(os.path.join(path, entry))) for entry in entries):
        return None
    shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
    count = "1 entry" if len(entries) == 1 else "%d entries" % len(entries)
    return "a directory of %s and no %s (%s)" % (count, RUN_FILE, shown)


class RunDir:
    """One run's results directory. Create it with :meth:`create`, reopen it with :meth:`open`."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)

    # -- the run ---------------------------------------------------------------------------

    @property
    def run_file(self) -> str:
        return os.path.join(self.path, RUN_FILE)

    @classmethod
    def create(cls, path: str, inventory: Iterable[str] | None = None, playbook: str | None = None,
               hosts: Iterable[str] | None = None, profile_choices: dict[str, Any] | None = None,
               extra: Mapping[str, Any] | None = None, collection: str | None = None,
               invocation: str | None = None) -> RunDir:
        """Create (or reopen, to resume) the run directory at ``path`` and write ``run.json``.

        An existing ``run.json`` of this schema is kept (its ``started`` and id) and marked
        resumed; one of another schema is refused rather than mixed with. ``collection``: the
        directory of the collection whose playbook runs (recorded with its version; default: the one
        this library serves). ``invocation``: which playbook run opens it (the action adapter's token). The same
        invocation opening it again is no resume: Ansible's free strategy runs a ``run_once`` task once per host, at
        the same time, and a second opener that took the first one's run for a killed one would mark it resumed and
        delete the temporary files its live writers are renaming. Openers take turns: each holds a lock on the run
        directory itself (flock), so no file is added to the run. Another invocation is refused (RunInUse) while the
        one run.json names still runs, or any process an earlier ansible-playbook run for the directory started
        (:func:`writers_still_running`): its writers would add to the resumed run.
        """
        run = cls(path)
        os.makedirs(os.path.join(run.path, HOSTS_DIR), exist_ok=True)
        os.makedirs(os.path.join(run.path, RAW_DIR), exist_ok=True)
        with _locked(run.path):
            now = utc_now()
            record: dict[str, Any]  # run.json as it is being made
            if os.path.exists(run.run_file):
                record = dict(run.read_run())
                if invocation is not None and record.get("invocation") == invocation:
                    return run
                problem = writers_still_running(run.path, record.get("invocation"), os.environ.get(LAUNCH_ENV))
                if problem:
                    raise RunInUse(problem)
                record.setdefault("resumed", []).append(now)
                run.remove_stale_temporaries()
            else:
                record = {"schema": SCHEMA, "run_id": os.path.basename(run.path), "started": now, "resumed": []}
            record.update(
                {
                    "finished": None,
                    "status": "running",
                    "inventory": list(inventory or []),
                    "playbook": playbook,
                    "hosts": list(hosts or []),
                    "profile_choices": profile_choices or {},
                    "gpufleet_version": collection_version(collection),
                    "gpufleet_path": collection or collection_root(),
                    "invocation": invocation,
                }
            )
            record.update(extra or {})
            write_json_atomic(run.run_file, record, root=run.path)
        return run

    def remove_stale_temporaries(self) -> list[str]:
        """Remove the temporary files (``.<name>.<random>.tmp``, :func:`atomic_open`) a killed run left behind;
        returns their run-relative paths. Only when the run is reopened: no writer of this run is alive then."""
        removed = []
        for directory, _dirs, files in os.walk(self.path):
            for name in files:
                if name.startswith(".") and name.endswith(".tmp"):
                    path = os.path.join(directory, name)
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        continue
                    removed.append(self.relative(path))
        return sorted(removed)

    @classmethod
    def open(cls, path: str) -> RunDir:
        """An existing run directory; ResultsError when it has no ``run.json`` of this schema."""
        run = cls(path)
        run.read_run()
        return run

    def read_run(self) -> RunRecord:
        """run.json; ResultsError when it is missing, damaged or of another schema."""
        record = read_json(self.run_file)
        if not isinstance(record, dict) or record.get("schema") != SCHEMA:
            raise ResultsError("%s: schema %r, this gpufleet reads %s" % (self.run_file, (record or {}).get("schema"), SCHEMA))
        return cast(RunRecord, record)

    def update_run(self, **fields: Any) -> RunRecord:
        """run.json with ``fields`` set, written; returns it."""
        record = cast(RunRecord, {**self.read_run(), **fields})
        write_json_atomic(self.run_file, record, root=self.path)
        return record

    # -- hosts -----------------------------------------------------------------------------

    def host_file(self, host: str) -> str:
        """The host's record file (its name made safe: :func:`safe_name`)."""
        return os.path.join(self.path, HOSTS_DIR, safe_name(host) + ".json")

    def relative(self, path: str) -> str:
        """``path`` relative to the run directory."""
        return os.path.relpath(path, self.path)

    def read_host(self, host: str) -> HostRecord | None:
        """The host's record, or None when it has none yet. A damaged record raises ResultsError."""
        path = self.host_file(host)
        if not os.path.exists(path):
            return None
        record = read_json(path)
        if not isinstance(record, dict) or record.get("schema") != SCHEMA or record.get("host") != host:
            raise ResultsError("%s: not a %s record of host %s" % (path, SCHEMA, host))
        return cast(HostRecord, record)

    def write_host(self, record: HostRecord) -> HostRecord:
        """Write ``record`` (stamped with the schema and the time); returns it."""
        record["schema"] = SCHEMA
        record["updated"] = utc_now()
        write_json_atomic(self.host_file(record["host"]), record, root=self.path)
        return record

    def host_records(self, without: Collection[str] = ()) -> dict[str, HostRecord]:
        """Every host record in the directory, by host name (damaged files are skipped: see resume()); ``without``:
        keys dropped from each record as it is read (a reader of 10,000 records that has no use for them)."""
        return {record["host"]: record for record in self.each_host_record(sorted(self.host_files()), without)}

    def host_files(self) -> list[str]:
        """The host record files' names (``*.json`` of hosts/, no hidden one), by the name they hold (``a.json``
        before ``a-b.json``)."""
        directory = self._hosts_dir()
        entries = os.listdir(directory) if os.path.isdir(directory) else []
        return sorted((entry for entry in entries if entry.endswith(".json") and not entry.startswith(".")),
                      key=lambda entry: entry[:-len(".json")])

    def each_host_record(self, entries: Iterable[str], without: Collection[str] = ()) -> Iterator[HostRecord]:
        """The host record of each file of ``entries`` (of :meth:`host_files`) that holds one, read one at a time: a
        reader keeps of each only what it needs. Damaged files and files of another schema are skipped."""
        directory = self._hosts_dir()
        for entry in entries:
            try:
                record = read_json(os.path.join(directory, entry))
            except ResultsError:
                continue
            if isinstance(record, dict) and record.get("schema") == SCHEMA and record.get("host"):
                for key in without:
                    record.pop(key, None)
                yield cast(HostRecord, record)

    def _hosts_dir(self) -> str:
        return os.path.join(self.path, HOSTS_DIR)

    @staticmethod
    def new_host_record(host: str) -> HostRecord:
        """A host record before anything is known of the host."""
        return {
            "schema": SCHEMA,
            "host": host,
            "unreachable": None,
            "phases": {},
            "facts": {group: None for group in FACT_GROUPS},
            "fact_errors": {},
            "raw": {},
            "claim": None,
            "settings": {},
            "profile_request": None,
            "profile": None,
            "checks": [],
            "failed": [],
            "verdict": None,
            "benchmarks": [],
        }

    def record_facts(self, host: str, results: Any, claim: dict[str, Any] | None = None,
                     settings: Mapping[str, Any] | None = None, profile_request: dict[str, Any] | None = None,
                     reconnected: object = None) -> HostRecord:
        """Write ``host``'s facts (from the fact tasks' registered ``results``) and raw outputs now.

        Returns the record written. Raw outputs go first, so a record never names a raw file
        that is not there. ``reconnected``: why the gathering ran a second time after one reconnect (node_facts), kept
        in ``phases.facts``.
        """
        facts, errors, unreachable = split_fact_results(results)
        record = self.read_host(host) or self.new_host_record(host)
        raw_index: dict[str, RawIndex] = {}
        for group in FACT_GROUPS:
            outcome = results.get(group) if isinstance(results, dict) else None
            raw = outcome.get("raw") if isinstance(outcome, dict) else None
            if isinstance(raw, dict) and raw:
                raw_index[group] = self.write_raw(host, group, raw)
        record.update(
            {
                "unreachable": unreachable,
                "facts": facts,
                "fact_errors": errors,
                "raw": raw_index,
                "claim": claim,
                "settings": dict(settings or {}),
                "profile_request": profile_request,
                # a fresh gathering makes any earlier judgement stale
                "checks": [],
                "failed": [],
                "verdict": None,
            }
        )
        phase: PhaseRecord = {
            "complete": unreachable is None and all(facts[group] is not None or group in errors for group in FACT_GROUPS),
            "finished": utc_now(),
        }
        if reconnected:
            phase["reconnected"] = str(reconnected)[:500]
        record.setdefault("phases", {})["facts"] = phase
        record["phases"].pop("checks", None)
        # a reading after stress is compared with the first reading it followed: a new first reading leaves none
        record["health_after"] = {}
        return self.write_host(record)

    def record_health_after(self, host: str, phase: str, results: Any) -> HealthReading:
        """Write ``host``'s health facts read again after the stress phase ``phase`` (:data:`STRESS_PHASES`).

        The reading goes to ``health_after[phase]`` of the host record, beside the first reading (``facts``, which
        stays as it is), with ``before``: the ``finished`` time of the facts phase it follows, so a check never
        compares it with another first reading (a resumed run that gathered the facts again). Its raw outputs go to
        ``raw/<host>/after_<phase>/<group>/``. ResultsError when the host has no first reading to follow.
        """
        if phase not in STRESS_PHASES:
            raise ResultsError("health re-read of %s: phase must be one of %s, not %r" % (host, "/".join(STRESS_PHASES), phase))
        record = self.read_host(host)
        facts_phase = (record.get("phases") or {}).get("facts") if record else None
        before = facts_phase.get("finished") if facts_phase else None
        if record is None or not before:
            raise ResultsError("health re-read of %s after %s: the host has no facts recorded to compare with" % (host, phase))
        facts, errors, unreachable = split_fact_results(results)
        raw_index: dict[str, RawIndex] = {}
        for group in HEALTH_GROUPS:
            outcome = results.get(group) if isinstance(results, dict) else None
            raw = outcome.get("raw") if isinstance(outcome, dict) else None
            if isinstance(raw, dict) and raw:
                raw_index[group] = self.write_raw(host, group, raw, area="after_%s" % phase)
        reading: HealthReading = {
            "phase": phase,
            "read": utc_now(),
            "before": before,
            "groups": [group for group in HEALTH_GROUPS if isinstance(results, dict) and group in results],
            "facts": {group: facts.get(group) for group in HEALTH_GROUPS},
            "fact_errors": {group: message for group, message in errors.items() if group in HEALTH_GROUPS},
            "unreachable": unreachable,
            "raw": raw_index,
        }
        record.setdefault("health_after", {})[phase] = reading
        self.write_host(record)
        return reading

    def write_raw(self, host: str, group: str, raw: Mapping[str, Any], area: str | None = None) -> RawIndex:
        """Write one fact group's raw collector results; return their index for the host record.

        ``area`` (a later reading, ``after_benchmarks``) puts them under ``raw/<host>/<area>/<group>/`` instead, so the
        first reading's files stay as they are.
        A tool entry becomes ``raw/<host>/<group>/<key>.txt`` (its stdout) and, when it wrote to
        stderr, ``<key>.stderr.txt``; its command, rc, duration and error go in the index. Nested
        maps of entries (ethtool per interface, files per path) get keys ``<key>.<name>``; any
        other value (sysfs listings, endpoints) is kept as ``<key>.json``.
        """
        base = os.path.join(self.path, RAW_DIR, safe_name(host), *([safe_name(area)] if area else []), safe_name(group))
        index: RawIndex = {}

        def put(key: str, value: Any) -> None:
            if value is None:
                return
            name = safe_name(key)
            if _is_tool_entry(value):
                entry: RawEntry = {
                    "path": None,
                    "stderr_path": None,
                    "cmd": [str(part) for part in (value.get("cmd") or [])],
                    "rc": value.get("rc"),
                    "duration_s": value.get("duration_s"),
                    "error": value.get("error"),
                }
                if value.get("rc") is not None or value.get("stdout"):
                    # a tool that never ran (not found, could not start) has no output file, only its error
                    out = os.path.join(base, name + ".txt")
                    write_text_atomic(out, value.get("stdout") or "", root=self.path)
                    entry["path"] = self.relative(out)
                if value.get("stderr"):
                    err = os.path.join(base, name + ".stderr.txt")
                    write_text_atomic(err, value["stderr"], root=self.path)
                    entry["stderr_path"] = self.relative(err)
                # what the node's reader cut (node_collect caps output while reading it): kept beside the text
                for extra in READER_MARKS:
                    if extra in value:
                        entry[extra] = value[extra]
                index[key] = entry
            elif isinstance(value, dict) and value and all(_is_tool_entry(item) or item is None for item in value.values()):
                for sub, item in value.items():
                    put("%s.%s" % (key, sub), item)
            else:
                out = os.path.join(base, name + ".json")
                write_json_atomic(out, value, root=self.path)
                index[key] = {"path": self.relative(out), "stderr_path": None, "cmd": None, "rc": None, "duration_s": None, "error": None}

        for key, value in raw.items():
            put(str(key), value)
        return index

    def write_judgement(self, host: str, report: Mapping[str, Any], profile: ProfileChoice | None = None,
                        claim: dict[str, Any] | None = None) -> HostRecord:
        """Write ``run_checks``' entry for ``host`` (checks, verdict, failed ids) into its record."""
        record = self.read_host(host) or self.new_host_record(host)
        record.update(
            {
                "checks": report.get("checks", []),
                "failed": report.get("failed", []),
                "verdict": report.get("verdict"),
                "unreachable": report.get("unreachable") or record.get("unreachable"),
                "profile": profile,
                "claim": claim if claim is not None else record.get("claim"),
                # required evidence judged / required / skipped, and the INCOMPLETE reasons (checks/evidence.py)
                "coverage": report.get("coverage"),
            }
        )
        record.setdefault("phases", {})["checks"] = {"complete": True, "finished": utc_now()}
        return self.write_host(record)

    def add_benchmark(self, host: str, benchmark: Mapping[str, Any]) -> HostRecord:
        """Append one benchmark record (shape: BENCHMARK_FIELDS) to ``host``'s record; ResultsError naming what is
        missing, unknown or mistyped (:func:`benchmark_problems`)."""
        problems = benchmark_problems(benchmark)
        if problems:
            raise ResultsError("benchmark record for %s: %s" % (host, "; ".join(problems)))
        record = self.read_host(host) or self.new_host_record(host)
        # checked just above: a BenchmarkRecord
        record.setdefault("benchmarks", []).append(cast(BenchmarkRecord, dict(benchmark)))
        return self.write_host(record)

    def recorded_benchmark_jobs(self) -> list[str]:
        """The job ids of the benchmark runs recorded in the directory, every host's, sorted. A resumed run does not run
        these again (playbooks/benchmark.yml keeps its job tag across resumes): an interrupted run's measurements are
        kept once, neither repeated nor lost. A run recorded ``unreachable`` is not among them: it is run again."""
        benchmarks = [bench for record in self.host_records().values() for bench in record.get("benchmarks") or []]
        return sorted({str(bench["job_id"]) for bench in benchmarks
                       if isinstance(bench, dict) and bench.get("job_id") and bench.get("outcome") != "unreachable"})

    def write_benchmark_raw(self, host: str, name: str, text: str) -> str:
        """Write a benchmark's raw output to ``raw/<host>/benchmarks/<name>.txt``; return its run-relative path."""
        out = os.path.join(self.path, RAW_DIR, safe_name(host), "benchmarks", safe_name(name) + ".txt")
        write_text_atomic(out, text, root=self.path)
        return self.relative(out)

    # -- the fleet -------------------------------------------------------------------------

    def write_fleet(self, report: Mapping[str, Any]) -> FleetDocument:
        """Write ``fleet.json`` from ``run_checks``' report and mark the run finished."""
        fleet = dict(report.get("fleet") or {})
        nodes = report.get("nodes") or {}
        run = self.read_run()
        document: FleetDocument = {
            "schema": SCHEMA,
            "run_id": run.get("run_id"),
            # the opening of the run whose verdicts these are: a later opening (a resume) has another
            "invocation": run.get("invocation"),
            "generated": utc_now(),
            "verdict": fleet.get("verdict"),
            "counts": fleet.get("counts", {}),
            "nodes": fleet.get("nodes", len(nodes)),
            # the run's validation level and, for an accepted fleet of which nothing measured was required, its label
            "level": fleet.get("level"),
            "label": fleet.get("label"),
            "node_verdicts": {name: node_verdict_entry(entry, self.relative(self.host_file(name)))
                              for name, entry in sorted(nodes.items())},
        }
        write_json_atomic(os.path.join(self.path, FLEET_FILE), document, root=self.path)
        self.update_run(finished=utc_now(), status="finished")
        return document

    # -- resuming --------------------------------------------------------------------------

    def resume(self, hosts: Iterable[str] | None = None) -> ResumeState:
        """Which hosts a rerun can skip.

        Returns ``{"run_id", "complete", "incomplete", "unreachable", "damaged", "set_aside", "missing"}``:
        ``complete`` hosts have a whole facts phase (every group gathered or failed, node
        reachable); ``unreachable`` and ``incomplete`` ones must be gathered again; ``damaged``
        records (unreadable or not a record: a full disk, a hand edit) too: each is renamed
        ``hosts/<file>.damaged-<UTC time>`` (``set_aside``, run-relative paths), kept for a look but out
        of the way of the host's new record, so its host is gathered again like a ``missing`` one;
        ``missing`` are hosts of ``hosts`` without a readable record.
        """
        run = self.read_run()
        outcome: ResumeState = {"run_id": run.get("run_id"), "complete": [], "incomplete": [], "unreachable": [],
                                "damaged": [], "set_aside": [], "missing": []}
        directory = os.path.join(self.path, HOSTS_DIR)
        seen: set[str] = set()
        for entry in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
            if not entry.endswith(".json") or entry.startswith("."):
                continue
            try:
                record = read_json(os.path.join(directory, entry))
            except ResultsError:
                record = None
            host = record.get("host") if isinstance(record, dict) else None
            if not host or record.get("schema") != SCHEMA:
                outcome["damaged"].append(entry)
                outcome["set_aside"].append(self._set_aside(os.path.join(directory, entry)))
                continue
            seen.add(host)
            if record.get("unreachable"):
                outcome["unreachable"].append(host)
            elif (record.get("phases") or {}).get("facts", {}).get("complete"):
                outcome["complete"].append(host)
            else:
                outcome["incomplete"].append(host)
        outcome["missing"] = [host for host in (hosts or []) if host not in seen]
        return outcome

    def _set_aside(self, path: str) -> str:
        """Rename a damaged file to ``<path>.damaged-<UTC time>`` (a number added if that exists); its run-relative path."""
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        target = "%s.damaged-%s" % (path, stamp)
        number = 1
        while os.path.exists(target):
            number += 1
            target = "%s.damaged-%s-%d" % (path, stamp, number)
        os.replace(path, target)
        _fsync_dir(os.path.dirname(path))
        return self.relative(target)


def read_judged_run(path: str) -> tuple[RunDir, FleetDocument, dict[str, HostRecord]]:
    """``(RunDir, fleet.json, {host: record})`` of a finished run at ``path``; ResultsError naming what is missing (a
    run that did not finish has no fleet.json)."""
    run = RunDir.open(path)
    fleet_path = os.path.join(run.path, FLEET_FILE)
    if not os.path.exists(fleet_path):
        raise ResultsError("%s has no fleet.json: the run did not finish (resume it first)" % run.path)
    return run, read_json(fleet_path), run.host_records()
