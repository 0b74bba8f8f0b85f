# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side benchmark runner: one command in its own process group, under a timeout, tagged with a job id.

Runs on a bare rented node: standard library only, Python 3.8+. The command is an argv list
(never a shell). It starts in a new session (so a new process group) with ``GPUFLEET_JOB_ID``
in its environment, which every process it starts inherits (mpirun forwards it to remote ranks
with ``-x``, added by :func:`tag_argv`), and ``GPUFLEET_RUN_ID`` (one value per run). On timeout the
whole group gets SIGTERM, then SIGKILL after ``grace`` seconds; processes of the run that left the
group (a ``setsid`` child) are found by the output pipes they hold or by both tags, and ended too.
Processes that left the group elsewhere (daemons, ranks started by a remote launcher daemon) are
found later by :func:`find_job_processes` scanning ``/proc/<pid>/environ`` and ended by :func:`kill_job`.

Outcomes (:func:`classify`): ``ok``, ``hang``, ``missing_binary``, ``launcher_error``, ``crash``,
``failed``; each with a one-line ``reason``.

A benchmark's JSON document (:func:`run_with_json`), in one of :data:`JSON_FORMATS`: nccl-tests 2.17.3 and later
write one with ``-J FILE.json`` (rank 0 only, :data:`NCCL_TESTS`), perftest 4.5-0.11 and later with ``--out_json
--out_json_file=FILE`` (:data:`PERFTEST`). Whether a binary has the option is read from its usage text
(:func:`probe_json_option`, bounded like the run), unless the caller already knows (``supported``); where it does,
the option goes right after the binary in the argv with a file in ``workdir``, and the document is read back (at
most ``max_output`` bytes; nccl-tests' ``env`` cut to the variables' names) for the controller to parse. Where it
does not, or no document came, the run is the same and says why.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid

from ansible_collections.gpufleet.acceptance.plugins.module_utils.launcher_words import (
    LAUNCHER_PATTERNS,
    MISSING_PATTERNS,
)
from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import read_pipes
from ansible_collections.gpufleet.acceptance.plugins.module_utils.process_group import end_group

JOB_ENV = "GPUFLEET_JOB_ID"
# one value per run_tagged call: finds that run's own processes, not those of another run (or the caller) with the same
# job id, which share the node's /proc where several simulated hosts run on one machine
RUN_ENV = "GPUFLEET_RUN_ID"
# the node a run is for (bench_run's ``node``, the inventory name), set in the module's environment so every run and
# probe inherits it: a second attempt of a job after a lost connection ends the first attempt's processes on this
# node only, not those of the job's other end (an iperf3 server) on another node sharing the /proc of a test machine
NODE_ENV = "GPUFLEET_NODE"
JOB_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
MAX_OUTPUT_BYTES = 4 * 1024 * 1024
DROPPED_MARK = "\n[gpufleet: %d bytes of output dropped here (output cap %d bytes)]\n"
MPI_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun")

OUTCOMES = ("ok", "hang", "missing_binary", "launcher_error", "crash", "failed")

# Text that says a process died abnormally.
CRASH_PATTERNS = (
    re.compile(r"exited on signal \d+"),
    re.compile(r"Segmentation fault|SIGSEGV|Bus error|SIGBUS|core dumped|Aborted \(core"),
    re.compile(r"srun: error: .*(Segmentation fault|Killed|signal)"),
    re.compile(r"killed by signal|terminated with signal", re.IGNORECASE),
    re.compile(r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"),
)


# nccl-tests 2.17.3's usage line of -J (src/common.cu): a binary whose -h prints it writes the JSON document
JSON_OPTION_RE = re.compile(r"\[-J,--output_file ")
# what nccl-tests prints instead of writing the document (util.cu jsonOutputInit)
JSON_SKIPPED_RE = re.compile(r"^# skipping json output;.*")
# nccl-tests writes JSON only to a name ending in .json
JSON_DOCUMENT = "nccl-tests.json"
NO_JSON_OPTION = "%s -h lists no -J,--output_file (nccl-tests before 2.17.3)"
# the usage probe: nccl-tests and perftest print their usage before MPI, CUDA or a device start, so this is plenty;
# never longer than the run's
PROBE_TIMEOUT_S = 10.0
PROBE_GRACE_S = 2.0
PROBE_OUTPUT_BYTES = 64 * 1024

# How one tool writes its JSON document: ``name``; ``result_key`` (the run result's key for it); ``help_flag`` (what
# prints the usage); ``option_re`` (the usage line of the option), ``usage_re`` (a usage text without it), and
# ``no_option`` (why not, for the binary); ``document`` (the file's name in the work directory); ``flags(path)``
# (the argv that asks for it); ``not_written_re`` (a line of the run saying it did not write it) and ``not_written``
# (why there is no file otherwise); ``keep(text)`` ((what is handed back, why not)).
JsonFormat = collections.namedtuple("JsonFormat", ("name", "result_key", "help_flag", "option_re", "usage_re",
                                                   "no_option", "document", "flags", "not_written_re", "not_written",
                                                   "keep"))


def _nccl_tests_flags(path):
    return ["-J", path]


def _perftest_flags(path):
    return ["--out_json", "--out_json_file=%s" % path]


def _names_only(text):
    """The document with its ``env`` cut to the variables' names (rank 0's environment may hold secrets), or
    (None, why) when it is not one JSON object."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return None, "%s is not one JSON document (%s): the run did not finish writing it" % (JSON_DOCUMENT, exc)
    if not isinstance(doc, dict):
        return None, "%s holds a JSON %s, not nccl-tests' object" % (JSON_DOCUMENT, type(doc).__name__)
    if isinstance(doc.get("env"), list):
        doc["env"] = [str(item).split("=", 1)[0] for item in doc["env"]]
    return json.dumps(doc, separators=(",", ":")), None


def _as_written(text):
    """perftest's report as it wrote it: before 24.01 it is not JSON, so the controller's parser reads it, not this."""
    if not text.strip():
        return None, "perftest.json is empty: the run did not write its report"
    return text, None


NCCL_TESTS = JsonFormat(
    name="nccl-tests", result_key="nccl_json", help_flag="-h", option_re=JSON_OPTION_RE, usage_re=re.compile("USAGE:"),
    no_option=NO_JSON_OPTION, document=JSON_DOCUMENT, flags=_nccl_tests_flags, not_written_re=JSON_SKIPPED_RE,
    not_written="the run did not write one (rank 0 on another host, or it ended before it began the document)",
    keep=_names_only)
# perftest's usage (src/perftest_parameters.c usage()): "      --out_json  Save the report in a json file"; it writes
# the report only at its results, and says "failed to open <file>" (and goes on) when it cannot create the file
PERFTEST = JsonFormat(
    name="perftest", result_key="perftest_json", help_flag="--help", option_re=re.compile(r"--out_json[^_]"),
    usage_re=re.compile(r"^\s*(?:Usage|Options):", re.MULTILINE),
    no_option="%s --help lists no --out_json (perftest before 4.5-0.11)", document="perftest.json",
    flags=_perftest_flags, not_written_re=re.compile(r"^failed to open .*"),
    not_written="the run did not write one (perftest writes it with its results: a run that failed or was ended "
                "before them leaves none)",
    keep=_as_written)
JSON_FORMATS = {item.name: item for item in (NCCL_TESTS, PERFTEST)}


def resolve_executable(path, env_path=None):
    """Absolute path of ``path`` (a name looked up on PATH, or a path), or None when it cannot be run."""
    if not path:
        return None
    if os.sep in path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(path, path=env_path)


def tag_argv(argv, forward=()):
    """``argv`` with ``-x GPUFLEET_JOB_ID`` added to every app context when it is an Open MPI launcher.

    ``forward``: more variable names passed the same way (the runner's ``env`` option: variables
    set for a benchmark, such as ``NCCL_DEBUG``, reach the ranks on every host, not only mpirun).

    ``mpirun`` passes a variable to its ranks only when told with ``-x NAME``; Open MPI 4.1 reads
    ``-x`` per app context (contexts are separated by a lone ``:``), so it goes after the launcher
    and after each ``:``. Other commands are returned unchanged (``srun`` forwards the whole
    environment by default).
    """
    argv = list(argv)
    if not argv or os.path.basename(argv[0]) not in MPI_LAUNCHERS:
        return argv
    exports = ["-x", JOB_ENV]
    for name in forward:
        if name != JOB_ENV:
            exports += ["-x", str(name)]
    tagged = [argv[0]] + exports
    for item in argv[1:]:
        tagged.append(item)
        if item == ":":
            tagged += exports
    return tagged


class _Capture:
    """Keeps the first and last ``cap // 2`` bytes of a stream and counts the rest (bounded memory)."""

    def __init__(self, cap):
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.cap = cap
        self.head = bytearray()
        self.tail = collections.deque()
        self.tail_len = 0
        self.total = 0
        self.lock = threading.Lock()

    def feed(self, data):
        with self.lock:
            self.total += len(data)
            room = self.head_cap - len(self.head)
            if room > 0:
                self.head += data[:room]
                data = data[room:]
            if not data:
                return
            self.tail.append(bytes(data))
            self.tail_len += len(data)
            while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_cap:
                self.tail_len -= len(self.tail.popleft())

    def text(self):
        """(decoded text, bytes dropped)."""
        with self.lock:
            tail = b"".join(self.tail)
            if len(tail) > self.tail_cap:
                tail = tail[len(tail) - self.tail_cap:]
            dropped = self.total - len(self.head) - len(tail)
            if dropped <= 0:
                return (bytes(self.head) + tail).decode("utf-8", errors="replace"), 0
            text = bytes(self.head).decode("utf-8", errors="replace") + DROPPED_MARK % (dropped, self.cap) + tail.decode("utf-8", errors="replace")
            return text, dropped


def pipe_holders(fds, proc_root="/proc"):
    """Other processes that hold an end of the pipes ``fds``: ``[{pid, cmdline}]``.

    A pipe is named ``pipe:[<inode>]`` in ``/proc/<pid>/fd``; both ends have the inode of the one
    the runner reads.
    """
    wanted = set()
    for fd in fds:
        try:
            wanted.add("pipe:[%d]" % os.fstat(fd).st_ino)
        except OSError:
            pass
    found = []
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        fd_dir = os.path.join(proc_root, entry, "fd")
        try:
            links = os.listdir(fd_dir)
        except OSError:
            continue
        for link in links:
            try:
                target = os.readlink(os.path.join(fd_dir, link))
            except OSError:
                continue
            if target in wanted:
                found.append({"pid": int(entry), "cmdline": _cmdline(entry, proc_root)})
                break
    return sorted(found, key=lambda item: item["pid"])


def find_escaped(fds, job_id, run_id, pgid):
    """The processes of a run left once its group ``pgid`` is ended: ``[{pid, cmdline, found}]``, ``found``
    ``pipes`` for those holding an end of the output pipes ``fds``, then ``tag`` for the others that still carry
    the run's tags (a ``setsid`` child that closed its output); members of the group and zombies left out."""
    holders = pipe_holders(fds) if fds else []
    tagged = find_job_processes(job_id, exclude=[item["pid"] for item in holders], run_id=run_id)
    tagged = [item for item in tagged if _alive(item["pid"]) and _pgid(item["pid"]) != pgid]
    return [dict(item, found="pipes") for item in holders] + [dict(item, found="tag") for item in tagged]


def _pgid(pid):
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _escaped_reason(escaped, signals):
    """One line: how many processes escaped the group, how each was found, and the signals that ended them."""
    ways = (("pipes", "holding the output pipes"), ("tag", "still tagged with its job id"))
    parts = []
    for found, words in ways:
        pids = [str(item["pid"]) for item in escaped if item["found"] == found]
        if pids:
            parts.append("%s (pid %s)" % (words, ", ".join(pids)))
    return "%d process(es) that escaped its process group %s ended with %s" % (
        len(escaped), " or ".join(parts), ", then ".join(signals or ["nothing (already gone)"]))


def end_pids(pids, grace):
    """SIGTERM to each of ``pids``, up to ``grace`` s, then SIGKILL to those left; returns the signals sent."""
    sent = []
    live = [pid for pid in pids if _alive(pid)]
    if not live:
        return sent
    for pid in live:
        _signal_pid(pid, signal.SIGTERM)
    sent.append("SIGTERM")
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(pid) for pid in live):
        time.sleep(0.05)
    left = [pid for pid in live if _alive(pid)]
    if left:
        for pid in left:
            _signal_pid(pid, signal.SIGKILL)
        sent.append("SIGKILL")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(pid) for pid in left):
            time.sleep(0.05)
    return sent


def _signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return "signal %d" % number


def _first_match(patterns, lines):
    for line in lines:
        for pattern in patterns:
            if pattern.search(line):
                return line.strip()[:300]
    return None


def _last_line(text):
    for line in reversed((text or "").splitlines()):
        if line.strip():
            return line.strip()[:300]
    return ""


def classify(rc, stdout, stderr, hang=False, timeout=None, signals=None, missing=None):
    """(outcome, reason) of one finished run; ``rc`` as subprocess gives it (negative: killed by that signal)."""
    if missing:
        return "missing_binary", missing
    if hang:
        return "hang", "no exit within the %ss timeout; process group ended with %s" % (timeout, ", then ".join(signals or ["nothing left to signal"]))
    lines = ((stderr or "") + "\n" + (stdout or "")).splitlines()
    if rc == 0:
        return "ok", ""
    said = _first_match(MISSING_PATTERNS, lines)
    if said is not None or rc == 127 and _first_match((re.compile(r"No such file or directory|not found"),), lines):
        return "missing_binary", said or "exit status 127: %s" % _first_match((re.compile(r"No such file or directory|not found"),), lines)
    said = _first_match(LAUNCHER_PATTERNS, lines)
    if said is not None:
        return "launcher_error", said
    if rc is not None and rc < 0:
        return "crash", "killed by %s" % _signal_name(-rc)
    said = _first_match(CRASH_PATTERNS, lines)
    if said is not None:
        return "crash", said
    if rc is not None and rc >= 128:
        return "crash", "exit status %d (128 + %s)" % (rc, _signal_name(rc - 128))
    return "failed", "exit status %s%s" % (rc, ": " + _last_line(stderr or stdout) if _last_line(stderr or stdout) else "")


def run_tagged(argv, job_id, env=None, timeout=600, grace=10, cwd=None, max_output=MAX_OUTPUT_BYTES):
    """Run ``argv`` tagged with ``job_id`` in a new session; never raises for the command's own failures.

    Returns ``{cmd, rc, stdout, stderr, stdout_dropped, stderr_dropped, duration_s, outcome, reason,
    job_id, started, pgid, signals, escaped}``; ``rc`` is None when it did not start, negative when a
    signal ended it (the number of the signal), ``started`` ISO 8601 UTC, ``escaped`` the processes
    outside the group (a ``setsid`` child) left once the group was gone (:func:`find_escaped`:
    ``[{pid, cmdline, found}]``, ``found`` ``pipes`` or ``tag``), ended too. Every wait is bounded:
    timeout, grace, 2 s for the last output, one grace for all the escaped.
    """
    argv = [str(part) for part in argv]
    if not JOB_ID_RE.match(str(job_id)):
        raise ValueError("job_id must match %s" % JOB_ID_RE.pattern)
    run_env = dict(os.environ)
    run_env.update({str(key): str(value) for key, value in (env or {}).items()})
    run_env[JOB_ENV] = str(job_id)
    run_env[RUN_ENV] = uuid.uuid4().hex
    argv = tag_argv(argv, forward=sorted(str(key) for key in (env or {})))
    result = {"cmd": argv, "rc": None, "stdout": "", "stderr": "", "stdout_dropped": 0, "stderr_dropped": 0, "duration_s": 0.0,
              "outcome": None, "reason": "", "job_id": str(job_id), "pgid": None, "signals": [], "escaped": [],
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    executable = resolve_executable(argv[0] if argv else "", run_env.get("PATH"))
    if executable is None:
        missing = "%s: not found (or not executable) on the node" % (argv[0] if argv else "empty argv")
        result["outcome"], result["reason"] = classify(None, "", "", missing=missing)
        return result
    started = time.monotonic()
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv list, no shell  pylint: disable=consider-using-with
            [executable] + argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=run_env, cwd=cwd or None, start_new_session=True)
    except OSError as exc:
        result["outcome"] = "missing_binary" if isinstance(exc, (FileNotFoundError, PermissionError)) else "failed"
        result["reason"] = "%s: could not start: %s" % (argv[0], exc.strerror or exc)
        return result
    pgid = proc.pid  # start_new_session: the child leads its own session and group
    result["pgid"] = pgid
    captures = (_Capture(max_output), _Capture(max_output))
    fds = [proc.stdout.fileno(), proc.stderr.fileno()]
    for fd in fds:
        os.set_blocking(fd, False)
    # read while the command runs; stop at its exit or at the timeout
    open_fds = read_pipes(fds, captures, started + timeout, done=lambda: proc.poll() is not None)
    try:
        # both pipes closed early (the command redirected its output) while it still runs: wait out the timeout
        proc.wait(timeout=max(0.0, started + timeout - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    hang = proc.poll() is None
    # the leader is gone (or hung): whatever else is left in its group goes too
    signals = end_group(proc, pgid, grace)
    # the rest of the output, from a group that is gone now; a process that left the group may still hold the pipes
    open_fds = read_pipes(open_fds, [captures[fds.index(fd)] for fd in open_fds], time.monotonic() + 2)
    escaped = find_escaped(open_fds, job_id, run_env[RUN_ENV], pgid)
    escaped_signals = end_pids([item["pid"] for item in escaped], grace) if escaped else []
    if any(item["found"] == "pipes" for item in escaped):
        read_pipes(open_fds, [captures[fds.index(fd)] for fd in open_fds], time.monotonic() + 2)
    result["duration_s"] = round(time.monotonic() - started, 3)
    result["rc"] = proc.returncode
    result["signals"] = signals
    result["escaped"] = escaped
    result["stdout"], result["stdout_dropped"] = captures[0].text()
    result["stderr"], result["stderr_dropped"] = captures[1].text()
    result["outcome"], result["reason"] = classify(proc.returncode, result["stdout"], result["stderr"], hang=hang, timeout=timeout, signals=signals)
    if signals and not hang and result["outcome"] == "ok":
        result["reason"] = "exited 0; processes it left in its group ended with %s" % ", then ".join(signals)
    if escaped:
        said = _escaped_reason(escaped, escaped_signals)
        result["reason"] = "%s; %s" % (result["reason"], said) if result["reason"] else said
    # raw fds, no reader thread: closing cannot wait on anyone
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass
    return result


def binary_identity(path):
    """``inode:size:mtime_ns`` of the file ``path`` (None when it cannot be read): an earlier probe of the binary holds
    only while this is the same."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return "%d:%d:%d" % (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def probe_json_option(binary, job_id, env=None, timeout=PROBE_TIMEOUT_S, grace=PROBE_GRACE_S, fmt=NCCL_TESTS):
    """Whether the usage of ``binary`` (``fmt.help_flag``) lists ``fmt``'s JSON option: ``{supported, reason,
    identity, probe: "probed"}``.

    ``supported`` is None when the probe gave no usage text (not found, no answer within ``timeout``, a crash);
    ``reason`` says why it is not True. Run like a benchmark (:func:`run_tagged`, tagged ``job_id``), so bounded by
    ``timeout`` plus twice ``grace`` plus 4 s.
    """
    run_env = dict(os.environ, **{str(key): str(value) for key, value in (env or {}).items()})
    executable = resolve_executable(binary, run_env.get("PATH"))
    answer = {"supported": None, "reason": "", "identity": None, "probe": "probed"}
    if executable is None:
        answer["reason"] = "%s: not found (or not executable) on the node, so its %s was not asked" % (
            binary, fmt.help_flag)
        return answer
    answer["identity"] = binary_identity(executable)
    run = run_tagged([executable, fmt.help_flag], job_id, env=env, timeout=timeout, grace=grace,
                     max_output=PROBE_OUTPUT_BYTES)
    if fmt.option_re.search(run["stdout"]):
        answer["supported"] = True
    elif fmt.usage_re.search(run["stdout"]):
        answer["supported"] = False
        answer["reason"] = fmt.no_option % binary
    else:
        said = ": " + run["reason"] if run["reason"] else ""
        answer["reason"] = "%s %s printed no usage text (%s%s)" % (binary, fmt.help_flag, run["outcome"], said)
    return answer


def json_support(binary, job_id, env=None, cached=None, timeout=PROBE_TIMEOUT_S, fmt=NCCL_TESTS, supported=None):
    """Whether ``binary`` writes ``fmt``'s document: ``supported`` when the caller knows (``probe: "given"``, the
    caller's own look at the usage); else ``cached`` (an earlier answer for this binary: ``{identity, supported}``)
    while the binary's identity is the same (``probe: "cached"``); else :func:`probe_json_option`'s answer. Only the
    probe starts a process."""
    if supported in (True, False):
        reason = "" if supported else fmt.no_option % binary + " (the caller's look at its usage)"
        return {"supported": supported, "reason": reason, "identity": None, "probe": "given"}
    if cached and cached.get("supported") in (True, False) and cached.get("identity"):
        run_env = dict(os.environ, **{str(key): str(value) for key, value in (env or {}).items()})
        executable = resolve_executable(binary, run_env.get("PATH"))
        if executable is not None and binary_identity(executable) == cached["identity"]:
            reason = "" if cached["supported"] else fmt.no_option % binary
            return {"supported": cached["supported"], "reason": reason, "identity": cached["identity"],
                    "probe": "cached"}
    return probe_json_option(binary, job_id, env=env, timeout=min(PROBE_TIMEOUT_S, timeout), fmt=fmt)


def with_json_output(argv, binary, path, fmt=NCCL_TESTS):
    """``argv`` with ``fmt``'s flags for ``path`` right after the first element equal to ``binary`` (None when there
    is none)."""
    argv = [str(part) for part in argv]
    if binary not in argv:
        return None
    at = argv.index(binary) + 1
    return argv[:at] + fmt.flags(path) + argv[at:]


def read_json_document(path, stdout, cap=MAX_OUTPUT_BYTES, fmt=NCCL_TESTS, stderr=""):
    """(document text or None, why there is none): the file the tool wrote at ``path``, at most ``cap`` bytes."""
    try:
        size = os.path.getsize(path)
    except OSError:
        said = _first_match((fmt.not_written_re,), (stdout or "").splitlines() + (stderr or "").splitlines())
        return None, "no document at %s: %s" % (path, said or fmt.not_written)
    if size > cap:
        return None, "the document is %d bytes, more than the %d read" % (size, cap)
    with open(path, "rb") as handle:
        text = handle.read(cap).decode("utf-8", errors="replace")
    return fmt.keep(text)


def run_with_json(argv, job_id, binary, workdir, cached=None, env=None, timeout=600, grace=10, cwd=None,
                  max_output=MAX_OUTPUT_BYTES, fmt=NCCL_TESTS, supported=None):
    """:func:`run_tagged`, asking the ``binary`` of ``argv`` for ``fmt``'s JSON document where it writes one
    (``supported``: the caller's answer; ``cached``: an earlier probe's, see :func:`json_support`). The result gains
    ``fmt.result_key`` (``nccl_json``, ``perftest_json``): ``{binary, format, supported, probe, identity, path,
    document, reason}``, ``document`` the text read back (None with ``reason`` saying why: no option, no file, too
    large, not one JSON document). The file goes in ``workdir`` and is removed after.
    """
    info = {"binary": str(binary), "format": fmt.name, "path": None, "document": None}
    info.update(json_support(str(binary), job_id, env=env, cached=cached, timeout=timeout, fmt=fmt,
                             supported=supported))
    path = os.path.join(workdir, fmt.document)
    tagged = with_json_output(argv, str(binary), path, fmt) if info["supported"] else None
    if info["supported"] and tagged is None:
        info["reason"] = "%s is not an element of argv" % binary
    result = run_tagged(tagged or argv, job_id, env=env, timeout=timeout, grace=grace, cwd=cwd, max_output=max_output)
    if tagged is not None:
        info["path"] = path
        info["document"], info["reason"] = read_json_document(path, result["stdout"], max_output, fmt,
                                                              result["stderr"])
        info["reason"] = info["reason"] or ""
        try:
            os.remove(path)
        except OSError:
            pass
    result[fmt.result_key] = info
    return result


def _read_environ(pid, proc_root):
    try:
        with open(os.path.join(proc_root, pid, "environ"), "rb") as handle:
            return handle.read(1 << 20)
    except OSError:
        return None


def _cmdline(pid, proc_root):
    try:
        with open(os.path.join(proc_root, pid, "cmdline"), "rb") as handle:
            return handle.read(4096).replace(b"\0", b" ").decode("utf-8", errors="replace").strip()
    except OSError:
        return ""


def find_job_processes(job_id, proc_root="/proc", exclude=(), run_id=None, node=None):
    """Processes whose environment holds ``GPUFLEET_JOB_ID=<job_id>`` (and ``GPUFLEET_RUN_ID=<run_id>`` when given:
    one run's; ``GPUFLEET_NODE=<node>`` when given: one node's): ``[{pid, cmdline}]`` (not this one)."""
    needles = {("%s=%s" % (JOB_ENV, job_id)).encode("utf-8")}
    if run_id is not None:
        needles.add(("%s=%s" % (RUN_ENV, run_id)).encode("utf-8"))
    if node is not None:
        needles.add(("%s=%s" % (NODE_ENV, node)).encode("utf-8"))
    skip = {os.getpid()} | {int(pid) for pid in exclude}
    found = []
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) in skip:
            continue
        environ = _read_environ(entry, proc_root)
        if environ is None or not needles <= set(environ.split(b"\0")):
            continue
        found.append({"pid": int(entry), "cmdline": _cmdline(entry, proc_root)})
    return sorted(found, key=lambda item: item["pid"])


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            return handle.read().split(b") ", 1)[-1][:1] != b"Z"  # a zombie is dead, its parent just has not reaped it
    except OSError:
        return False


def kill_job(job_id, grace=5, proc_root="/proc", check_mode=False, node=None):
    """End every process tagged ``job_id`` (and ``node``, when given): SIGTERM, ``grace`` s, SIGKILL; again until
    none is left (new ones may appear).

    Returns ``{found: [{pid, cmdline, signal}], remaining: [{pid, cmdline}]}``; ``signal`` is the last
    signal the process needed (``SIGTERM`` or ``SIGKILL``), None in check mode.
    """
    found = {}
    for _round in range(3):
        procs = [item for item in find_job_processes(job_id, proc_root, node=node) if _alive(item["pid"])]
        if not procs:
            break
        for item in procs:
            found.setdefault(item["pid"], dict(item, signal=None))
        if check_mode:
            return {"found": sorted(found.values(), key=lambda item: item["pid"]), "remaining": procs}
        for item in procs:
            try:
                os.kill(item["pid"], signal.SIGTERM)
                found[item["pid"]]["signal"] = "SIGTERM"
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(item["pid"]) for item in procs):
            time.sleep(0.05)
        for item in procs:
            if _alive(item["pid"]):
                try:
                    os.kill(item["pid"], signal.SIGKILL)
                    found[item["pid"]]["signal"] = "SIGKILL"
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(item["pid"]) for item in procs):
            time.sleep(0.05)
    remaining = [item for item in find_job_processes(job_id, proc_root, node=node) if _alive(item["pid"])]
    return {"found": sorted(found.values(), key=lambda item: item["pid"]), "remaining": remaining}
