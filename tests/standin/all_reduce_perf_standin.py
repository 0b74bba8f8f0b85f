# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST DOUBLE: a CPU stand-in for nccl-tests' ``all_reduce_perf``. It is not NCCL and has no GPU.

It exists so that the acceptance playbooks can launch "the NCCL benchmark" across simulated
hosts that have no GPU and no InfiniBand, and get a result that depends on the real links
between them. Everything it reports is measured: it really moves the data among its ranks
over TCP with a ring all-reduce (reduce-scatter then all-gather, n-1 steps each), times the
iterations with a monotonic clock, computes ``algbw = bytes / time`` and ``busbw = algbw *
2(n-1)/n`` as nccl-tests does, and counts ``#wrong`` by checking every reduced element
against the sum it must be. Only the wording of its output is borrowed: the table and
banner of nccl-tests (the format with ``redop``/``root``/``#wrong`` columns) and the shapes
of NCCL 2.18.3's ``NCCL_DEBUG=INFO`` lines (the release behind the recordings
``tests/fixtures/nccl-debug/nf5688m7-*`` and ``tests/fixtures/nccl/issue294-*``). Its
version line says ``NCCL version 2.18.3+cpu.standin`` and its device lines say ``CPU
stand-in``, so its output is never mistaken for a recording of a real machine.

Python 3.8+ standard library only: it runs on the simulated nodes.

Launch (what a fleet test runs; one rank per host, rank 0 on the first host)::

    mpirun --allow-run-as-root --oversubscribe -np 2 -H 198.18.0.1:1,198.18.0.2:1 \\
        --mca oob_tcp_if_include 198.18.0.0/15 \\
        -x NCCL_SOCKET_IFNAME=eth0 -x NCCL_DEBUG=INFO -x NCCL_IB_DISABLE=0 \\
        -x GPUFLEET_STANDIN_BOOTSTRAP=198.18.0.1:29500 \\
        -x GPUFLEET_STANDIN_SYSFS_ROOT=/sys \\
        python3 /path/to/all_reduce_perf_standin.py -b 1M -e 64M -f 2 -g 1 -d int32

and on one machine (the test of this file)::

    mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_SOCKET_IFNAME=lo \\
        -x GPUFLEET_STANDIN_BOOTSTRAP=127.0.0.1:PORT python3 all_reduce_perf_standin.py -b 1M -e 4M

Without mpirun, start one process per rank with ``--rank R --nranks N --bootstrap HOST:PORT``.

How it stands in for the pieces of a real run:

- **Output** is nccl-tests 2.17.3's (the release ``roles/nccl_tests`` pins, the first with ``-J``;
  ``src/common.cu`` and ``src/util.cu``): ``# Collective test starting``, the ``# nThread ...`` line,
  ``# Using devices`` with one ``#  Rank R Group 0 Pid P on HOST device D [0000:DD:00] CPU stand-in``
  line per rank, the three column-title lines (``#wrong`` two blanks after ``busbw``), one row per
  size (rows of size 0 too, as nccl-tests prints them when ``-b`` is below the element size) with
  ``getFloatStr``'s widths (time 7, bandwidths 6: two decimals below 10^(width-2), then one, then
  none) and ``#wrong`` as ``%6g``, ``N/A`` under ``-c 0``, ``# Out of bounds values : N OK|FAILED``,
  ``# Avg bus bandwidth    : X `` (nccl-tests leaves a blank where the ``NCCL_TESTS_MIN_BW``
  verdict goes), ``# Collective test concluded`` and the empty line of ``ncclGetLastError``.
  ``busbw = algbw * 2(n-1)/n`` with n the job's ranks: 0 for one rank. A run with ``#wrong`` or
  under ``NCCL_TESTS_MIN_BW`` ends, on every process, with `` .. HOST pid P: Test failure
  common.cu:1126`` and exit status 6 (2.17.3's ``run()`` returns testNumResults to ``main``'s
  TESTCHECK; 2.17.1 called ``exit(EXIT_FAILURE)``).
- **-J FILE** (``--output_file``) writes nccl-tests 2.17.3's JSON document (``src/util.cu``,
  document ``version`` 1), from MPI rank 0 only, when FILE ends in ``.json`` (any case; another
  suffix writes nothing, as nccl-tests): ``# Writing JSON output to FILE`` first on stdout (or
  ``# skipping json output; FILE not accessible``), FILE opened exclusively (an existing one makes
  it try ``FILE.0``, ``FILE.1``, ...), then ``version``, ``start_time`` (local time), ``args``
  (the program name, then the arguments: the stand-in writes ``all_reduce_perf`` for argv[0]),
  ``env`` (``NAME=value`` strings), ``nccl_version`` (21803), ``config`` (the ``# nThread``
  settings, ``blocking_collectives``/``parallel_init`` as the strings ``"true"``/``"false"``, and
  ``devices``: each process's first device line), ``results`` (per row ``size``, ``count``,
  ``type``, ``redop``, ``root`` as the ``"%6i"`` string, ``out_of_place``/``in_place`` with
  ``time`` (``cpu_time`` under ``-C 1``), ``alg_bw``, ``bus_bw``, ``nwrong`` as ``%lf`` doubles
  (null under ``-c 0``, NaN the string ``"nan"``), ``actual_iterations`` and ``experiment_name``
  ``""``), ``out_of_bounds`` ``{count, okay}``, version 1's misspelled
  ``average_bus_bandwidith`` ``{bandwidith, okay}`` (``okay`` ``"unchecked"`` without
  ``NCCL_TESTS_MIN_BW``), ``errors`` (``[""]``: NCCL's empty last error) and ``end_time``; no
  blanks, no final newline, strings escaped and cut as ``sanitizeJson`` does (``/`` as ``\\/``;
  cut at the first byte below 0x20 or above 0x7E other than tab and newline). A run that fails
  before its table still gets ``end_time``; one that fails in the table leaves the document
  without it (nccl-tests 2.17.3 then fails an assert in ``jsonOutputFinalize`` and aborts; the
  stand-in exits with the failure's own status instead).
- **Options** are read as nccl-tests' ``getopt_long`` table reads them: ``-t -g -b -e -i -f
  -n -m -w -N -p -c -o -d -r -z -y -T -G -C -J -a -R -x -D -V -h`` and their long names
  (``--nthreads --ngpus --minbytes --maxbytes --stepbytes --stepfactor --iters --agg_iters
  --warmup_iters --run_cycles --parallel_init --check --op --datatype --root --blocking
  --stream_null --timeout --cudagraph --report_cputime --output_file --average --local_register
  --cta_policy --device_implementation --device_cta_count --help``, ``--name=value`` or ``--name
  value``, any unambiguous prefix), with its defaults (``-b 32M -e 32M -i 1M -f 1 -n 20 -w 1 -m 1
  -c 1 -d float -o sum -a 1``). Its answers too: an unknown option gets glibc's message on stderr,
  ``invalid option '?'`` and the usage text on stdout and exit status 0 without running; ``-h``
  the usage; a bad size ``invalid size specified for 'minbytes'`` and status 255; ``-b`` above
  ``-e`` ``invalid sizes ...`` and 255; an unknown ``-d``/``-o`` name ``invalid type X,
  defaulting to float .. ``; ``-R``/``-x`` the "not supported before NCCL 2.19/2.27. Ignoring"
  lines and ``-D``/``-V`` "requires NCCL >= 2.28.0" and 255 (the stand-in's NCCL is 2.18.3).
- **Ranks** are counted as nccl-tests counts them: processes in MPI_COMM_WORLD (from the
  launcher's environment: ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE`` of Open MPI, else
  ``PMI_RANK``/``PMI_SIZE`` of MPICH/Intel MPI's Hydra, else ``SLURM_PROCID``/``SLURM_NTASKS``
  of srun; ``--rank``/``--nranks`` for processes started by hand; none of them: one process),
  times ``-t`` threads times ``-g`` GPUs. Process P's ranks are ``P*t*g .. P*t*g + t*g - 1``;
  their devices start at the process's index among the processes on its host times ``t*g``
  (``NCCL_TESTS_DEVICE`` overrides), as nccl-tests derives them from host hashes. The ranks
  of one process add their buffers in memory (the stand-in's NVLink); the sums go round the
  TCP ring of processes.
- **Device memory**: every simulated GPU declares ``GPUFLEET_STANDIN_DEVICE_MEMORY`` bytes
  (K/M/G suffixes; default 2144M) and nccl-tests' own rule caps ``-e`` from it (1 GiB reserved
  per 16 GiB, 1 GiB more, then 3 buffers, 2 with ``-c 0``: 32 MiB by default), printing
  ``# Reducing maxBytes to N due to memory limitation``.
- **MPI's part** (gathering the device lines, broadcasting NCCL's unique id, barriers, the
  average of the measured times and the sum of ``#wrong``) is done over a control connection
  to rank 0 at ``GPUFLEET_STANDIN_BOOTSTRAP=HOST:PORT`` (``--bootstrap``): rank 0 listens on
  that address, the others connect to it (retrying until ``GPUFLEET_STANDIN_TIMEOUT``
  seconds, default 120). Like MPI's own traffic, this address is NOT filtered by
  ``NCCL_SOCKET_IFNAME``; forward the variable with ``mpirun -x``.
- **NCCL's part** uses only interfaces chosen by NCCL's rules (below): rank 0 picks its
  bootstrap interface as ``ncclGetUniqueId`` does and every rank picks its NET/Socket
  interfaces as ``ncclCommInitRank`` does, listens on the first one's IPv4 address and
  tells the others (over the control connection) where. The ring's data connections go
  between those addresses only.
- **NCCL_SOCKET_IFNAME** follows NCCL's ``findInterfaces``: a comma-separated list of name
  prefixes (``eth`` matches ``eth0`` and ``eth10``), ``=`` before the list for exact names
  (``=eth1`` does not match ``eth10``), ``^`` before it to exclude (``^docker,lo``), ``^=`` to
  exclude exact names, ``:PORT`` after an entry accepted and ignored; a value of one
  character counts as unset. Unset: interfaces starting with ``ib``, else anything but
  ``docker*``/``lo*``, else ``docker*``, else ``lo*``. Only interfaces with an IPv4 address
  count (this stand-in does not do IPv6). Nothing matching: ``NCCL WARN Bootstrap : no
  socket interface found`` and ``HOST: Test NCCL failure common.cu:... 'internal error -
  please report this issue to the NCCL developers / Bootstrap : no socket interface found'``,
  exit status 3 (nccl-tests' testNcclError).
- **NCCL_IB_DISABLE**: unset or ``0`` probes ``<sysfs root>/class/infiniband``
  (``GPUFLEET_STANDIN_SYSFS_ROOT`` / ``--sysfs-root``, default ``/sys``). The stand-in has no
  verbs, so no HCA is ever usable: with none listed it logs ``NET/IB : No device found.``;
  with HCAs listed it logs, per HCA, that the device could not be opened (the shape NCCL
  prints when ``ibv_open_device`` fails), then ``NET/IB : No device found.``. Either way it
  falls back to ``NET/Socket : Using [0]IF:ADDR<0>``, ``Using network Socket`` and channels
  ``via NET/Socket/0``. ``1`` skips the IB probe.
- **NCCL_DEBUG** ``VERSION``/``WARN``/``INFO``/``TRACE`` as NCCL: WARN lines from ``WARN`` up
  (each after an empty line), INFO lines from ``INFO`` up; the ``NCCL version`` line bare at
  ``VERSION`` and ``WARN``, as an INFO line from ``INFO`` up (NCCL's ``showVersion``).

What nccl-tests accepts but the stand-in cannot do is refused with exit status 2 and a line
on stderr that names it: ``-o`` other than ``sum``, ``-d half``/``bfloat16``/``all``, sweeps
that never end (``-b 0`` with ``-f 2``). ``-r``, ``-y``, ``-T``, ``-G`` (counted as launches),
``-z``/``-p`` (their header lines only) change nothing else; ``-C 1`` times with the process's
CPU clock and titles the column ``cputime``; ``-N`` repeats the table (0: until
``GPUFLEET_STANDIN_MAX_SECONDS``). ``NCCL_TESTS_MIN_BW`` sets the average-bandwidth verdict and
exit status as in nccl-tests. Not emulated: ``NCCL_TESTS_SPLIT``/``NCCL_TESTS_SPLIT_MASK``.

Data types: ``float`` (default, like nccl-tests) and ``double`` are reduced exactly: every
rank's input repeats every 4093 elements, and so does every partial sum, so when both operands
of a reduction repeat (one byte comparison each) one period is added element by element (the sum
remembered for the next iteration) and repeated; data that does not repeat (a damaged chunk) is added element by element in Python
(about 40 MB/s). ``int8``, ``uint8``, ``int32``, ``uint32``, ``int64``, ``uint64`` are reduced
by one big-integer addition per chunk (input values are small and non-negative, so no lane
carries into the next). Either way the data really crosses the link and the reduction is fast
enough that a 1 Gbit/s link, not the CPU, is what limits busbw.

Test-double knobs (not nccl-tests options; long options only, so no nccl-tests option is taken
from a real command line): ``--rank``/``--nranks``/``--bootstrap`` and ``--sysfs-root`` (above),
``--hostname`` / ``GPUFLEET_STANDIN_HOSTNAME``
(namespaces that share one UTS name), ``--corrupt-rank R`` / ``GPUFLEET_STANDIN_CORRUPT_RANK``
(MPI process R flips one byte of every chunk it sends during validation, so ``#wrong`` must come
out non-zero), ``GPUFLEET_STANDIN_MAX_SECONDS`` (wall-clock cap of the whole run, default 600),
``GPUFLEET_STANDIN_HANG_AFTER_ROWS=N`` (rank ``GPUFLEET_STANDIN_HANG_RANK``, default 1, stops
for good after the N-th table row: a hang for the benchmark runner's timeout to catch).
"""

from __future__ import annotations

import array
import fcntl
import json
import math
import operator
import os
import queue
import re
import socket
import struct
import sys
import threading
import time

NCCL_VERSION = "2.18.3+cpu.standin"
DEVICE_NAME = "CPU stand-in"
SIOCGIFADDR = 0x8915
MAX_IFS = 16
LEVELS = {"VERSION": 1, "WARN": 2, "INFO": 3, "ABORT": 4, "TRACE": 5}
NCCL_INTERNAL_ERROR = "internal error - please report this issue to the NCCL developers"
TEST_NCCL_ERROR = 3  # nccl-tests testNcclError
TEST_NUM_RESULTS = 6  # testNumResults: what 2.17.3's run() returns for #wrong or a bandwidth under NCCL_TESTS_MIN_BW
MAIN_TESTCHECK_LINE = 1126  # the TESTCHECK(result) of main() in 2.17.3's src/common.cu, where a failed run() ends
BLOCK = 4093  # prime: the input pattern never lines up with power-of-two chunk offsets

# name -> (array typecode, size, max value a rank may contribute before the sum overflows)
TYPES = {
    "int8": ("b", 1, 127),
    "uint8": ("B", 1, 255),
    "int32": ("i", 4, (1 << 31) - 1),
    "uint32": ("I", 4, (1 << 32) - 1),
    "int64": ("q", 8, (1 << 63) - 1),
    "uint64": ("Q", 8, (1 << 64) - 1),
    "float": ("f", 4, 1 << 24),
    "double": ("d", 8, 1 << 53),
}
FLOAT_TYPES = ("float", "double")


class StandinError(Exception):
    """A failure that ends the run with ``status``; ``lines`` go to stdout first."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------
# NCCL_SOCKET_IFNAME: NCCL's parseStringList / matchIfList / findInterfaces
# --------------------------------------------------------------------------------------
def parse_ifname_spec(spec):
    """``(exclude, exact, prefixes)`` of an NCCL_SOCKET_IFNAME value.

    ``^`` first means exclude, then ``=`` means exact names; entries are comma separated,
    ``:PORT`` after an entry is dropped (NCCL matches ports only for NCCL_IB_HCA-style
    lists; -1 matches any), empty entries are skipped.
    """
    exclude = spec.startswith("^")
    if exclude:
        spec = spec[1:]
    exact = spec.startswith("=")
    if exact:
        spec = spec[1:]
    prefixes = []
    for entry in spec.split(","):
        name = entry.split(":", 1)[0]
        if name:
            prefixes.append(name)
    return exclude, exact, prefixes


def _match_list(name, prefixes, exact):
    if not prefixes:
        return True  # NCCL: "Make an exception for the case where no user list is defined"
    for prefix in prefixes:
        if (name == prefix) if exact else name.startswith(prefix):
            return True
    return False


def select_interfaces(spec, interfaces, max_ifs=MAX_IFS):
    """Interfaces (``[(name, addr)]`` in system order) that ``spec`` selects, NCCL's way."""
    exclude, exact, prefixes = parse_ifname_spec(spec)
    found = []
    for name, addr in interfaces:
        if len(found) >= max_ifs:
            break
        if not _match_list(name, prefixes, exact) ^ exclude:
            continue
        if any(name == seen for seen, _addr in found):
            continue
        found.append((name, addr))
    return found


def find_interfaces(env_value, interfaces, max_ifs=MAX_IFS):
    """ncclFindInterfaces: the user's NCCL_SOCKET_IFNAME, else NCCL's default order."""
    if env_value is not None and len(env_value) > 1:
        return select_interfaces(env_value, interfaces, max_ifs)
    for spec in ("ib", "^docker,lo", "docker", "lo"):
        found = select_interfaces(spec, interfaces, max_ifs)
        if found:
            return found
    return []


def system_ipv4_interfaces():
    """``[(name, ipv4)]`` of this host's interfaces, in interface-index order."""
    result = []
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _index, name in sorted(socket.if_nameindex()):
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)
            except OSError:
                continue  # no IPv4 address
            result.append((name, socket.inet_ntoa(answer[20:24])))
    finally:
        probe.close()
    return result


# --------------------------------------------------------------------------------------
# NCCL_DEBUG-style logging
# --------------------------------------------------------------------------------------
class NcclLog:
    """Prints ``host:pid:tid [dev] NCCL INFO ...`` lines as NCCL_DEBUG asks."""

    def __init__(self, host, device=0, env=None):
        env = os.environ if env is None else env
        self.level = LEVELS.get((env.get("NCCL_DEBUG") or "").upper(), 0)
        self.host = host
        self.pid = os.getpid()
        self.device = device
        self.last_error = ""

    def _prefix(self):
        return "%s:%d:%d [%d]" % (self.host, self.pid, threading.get_native_id(), self.device)

    def info(self, message):
        if self.level >= LEVELS["INFO"]:
            emit("%s NCCL INFO %s" % (self._prefix(), message))

    def warn(self, where, message):
        self.last_error = message
        if self.level >= LEVELS["WARN"]:
            emit("\n%s %s NCCL WARN %s" % (self._prefix(), where, message))

    def version(self):
        """NCCL's showVersion: a bare line at VERSION and WARN, an INFO line from INFO up."""
        if self.level in (LEVELS["VERSION"], LEVELS["WARN"]):
            emit("NCCL version %s" % NCCL_VERSION)
        else:
            self.info("NCCL version %s" % NCCL_VERSION)


def emit(text):
    """One write per line group so that lines of different ranks never mix mid-line."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------------------
# Control connection (what MPI does for nccl-tests)
# --------------------------------------------------------------------------------------
def _send_msg(sock, obj):
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def _recv_exact(sock, size):
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        count = sock.recv_into(view[got:], size - got)
        if count == 0:
            raise ConnectionError("peer closed the connection")
        got += count
    return buf


def _recv_msg(sock):
    (size,) = struct.unpack("!I", _recv_exact(sock, 4))
    return json.loads(bytes(_recv_exact(sock, size)).decode())


def _split_hostport(text):
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise StandinError("bootstrap address %r is not HOST:PORT" % text, 2)
    return host.strip("[]"), int(port)


class Control:
    """Star of TCP connections to rank 0: gather/broadcast of small JSON values."""

    def __init__(self, rank, nranks, address, timeout):
        self.rank = rank
        self.nranks = nranks
        self.peers = {}
        self.sock = None
        host, port = _split_hostport(address)
        deadline = time.monotonic() + timeout
        if rank == 0:
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                server.bind((host, port))
            except OSError as exc:
                raise StandinError("rank 0 cannot listen on bootstrap address %s: %s" % (address, exc)) from None
            server.listen(max(nranks, 8))
            try:
                while len(self.peers) < nranks - 1:
                    server.settimeout(max(0.1, deadline - time.monotonic()))
                    try:
                        conn, _addr = server.accept()
                    except socket.timeout:
                        raise StandinError(
                            "rank 0: only %d of %d ranks connected within %ds" % (len(self.peers) + 1, nranks, timeout)
                        ) from None
                    conn.settimeout(timeout)
                    hello = _recv_msg(conn)
                    self.peers[int(hello["rank"])] = conn
            finally:
                server.close()
        else:
            while True:
                try:
                    self.sock = socket.create_connection((host, port), timeout=2)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise StandinError("rank %d: cannot reach rank 0 at %s within %ds" % (rank, address, timeout)) from None
                    time.sleep(0.1)
            self.sock.settimeout(timeout)
            _send_msg(self.sock, {"rank": rank})

    def allgather(self, value):
        """Every rank's ``value`` in rank order, on every rank."""
        if self.rank == 0:
            values = [value] + [_recv_msg(self.peers[peer]) for peer in range(1, self.nranks)]
            for peer in range(1, self.nranks):
                _send_msg(self.peers[peer], values)
            return values
        _send_msg(self.sock, value)
        return _recv_msg(self.sock)

    def bcast(self, value):
        """Rank 0's ``value`` on every rank."""
        if self.rank == 0:
            for peer in range(1, self.nranks):
                _send_msg(self.peers[peer], value)
            return value
        return _recv_msg(self.sock)

    def barrier(self):
        self.allgather(None)

    def close(self):
        for conn in self.peers.values():
            conn.close()
        if self.sock is not None:
            self.sock.close()


# --------------------------------------------------------------------------------------
# Data: inputs, reduction, validation
# --------------------------------------------------------------------------------------
def value_modulus(dtype, nranks):
    """Largest value + 1 a rank contributes, so that the sum over ranks never overflows."""
    limit = TYPES[dtype][2] // max(nranks, 1)
    return max(2, min(1000, limit))


def block_values(dtype, nranks, rank, rep):
    modulus = value_modulus(dtype, nranks)
    return [((index * 3) + rank * 7 + rep) % modulus for index in range(BLOCK)]


def _pattern(values, dtype, count):
    code, size, _limit = TYPES[dtype]
    if dtype in FLOAT_TYPES:
        values = [float(value) for value in values]
    block = array.array(code, values).tobytes()
    repeats = count // BLOCK + 1
    return (block * repeats)[: count * size]


def make_input(dtype, count, nranks, rank, rep):
    """Rank ``rank``'s input of repetition ``rep``: a bytearray of ``count`` elements."""
    return bytearray(_pattern(block_values(dtype, nranks, rank, rep), dtype, count))


def make_expected(dtype, count, nranks, rep):
    """The element-wise sum of every rank's input, computed without the ring."""
    blocks = [block_values(dtype, nranks, rank, rep) for rank in range(nranks)]
    total = [sum(column) for column in zip(*blocks)]
    return _pattern(total, dtype, count)


def _periodic(data, period):
    """Whether ``data`` repeats its first ``period`` bytes throughout: ``data[period:]`` starts with ``data[:-period]``,
    one memcmp in place (a copy of a large buffer costs page faults, a memoryview compares element by element)."""
    if not isinstance(data, (bytes, bytearray)):
        data = bytes(data)
    return data.startswith(memoryview(data)[: len(data) - period], period)


def _fill_repeating(target, head):
    """``target[:] = head`` repeated, in place: each copy doubles what is filled."""
    view = memoryview(target)
    done = len(head)
    view[:done] = head
    while done < len(view):
        step = min(done, len(view) - done)
        view[done:done + step] = view[:step]
        done += step


def _add_floats(code, target, incoming):
    """``target + incoming`` element by element in Python (about 40 MB/s)."""
    summed = map(operator.add, memoryview(target).cast(code), memoryview(incoming).cast(code))
    return array.array(code, summed).tobytes()


# one period's sums by (type, operands): every iteration of a size adds the same periods again
_PERIOD_SUMS = {}


def _period_sum(code, target, incoming):
    """``_add_floats`` of one period, remembered: the iterations' Python float loop would otherwise be a third of
    the time of a 1 MiB all-reduce on a fast link, and vary with the machine's load."""
    key = (code, target, incoming)
    if key not in _PERIOD_SUMS:
        if len(_PERIOD_SUMS) >= 256:
            _PERIOD_SUMS.clear()
        _PERIOD_SUMS[key] = _add_floats(code, target, incoming)
    return _PERIOD_SUMS[key]


def reduce_into(dtype, target, incoming):
    """``target[:] = target + incoming`` element-wise (sum)."""
    if dtype in FLOAT_TYPES:
        code, size, _limit = TYPES[dtype]
        period = BLOCK * size
        if len(target) > period and _periodic(target, period) and _periodic(incoming, period):
            # Every rank's input repeats every BLOCK elements, so every partial sum does too: when both operands
            # still repeat (checked above, so damaged data never takes this path), the sum of one period repeated
            # is the element-wise sum, exactly, at memory speed: the link, not Python's float loop, bounds busbw.
            _fill_repeating(target, _period_sum(code, bytes(target[:period]), bytes(incoming[:period])))
            return
        target[:] = _add_floats(code, target, incoming)
        return
    length = len(target)
    total = int.from_bytes(target, "little") + int.from_bytes(incoming, "little")
    try:
        target[:] = total.to_bytes(length, "little")
    except OverflowError:  # only damaged data overflows the last lane
        target[:] = (total & ((1 << (8 * length)) - 1)).to_bytes(length, "little")


def count_wrong(dtype, result, expected):
    """Number of elements of ``result`` that differ from ``expected``."""
    if bytes(result) == bytes(expected):
        return 0
    code, size, _limit = TYPES[dtype]
    wrong = 0
    step = BLOCK * size * 16
    for start in range(0, len(expected), step):
        got = memoryview(result)[start:start + step]
        want = memoryview(expected)[start:start + step]
        if got != want:
            wrong += sum(1 for left, right in zip(got.cast(code), want.cast(code)) if left != right)
    return wrong


def chunk_bounds(count, nranks, size):
    """Byte ``(start, end)`` of each rank's chunk of ``count`` elements."""
    bounds = []
    base, extra = divmod(count, nranks)
    start = 0
    for index in range(nranks):
        elems = base + (1 if index < extra else 0)
        bounds.append((start * size, (start + elems) * size))
        start += elems
    return bounds


# --------------------------------------------------------------------------------------
# The ring
# --------------------------------------------------------------------------------------
class Ring:
    """Send connection to rank+1 and receive connection from rank-1, over NCCL's interface."""

    def __init__(self, rank, nranks, listener, table, timeout):
        self.rank = rank
        self.nranks = nranks
        self.corrupt = False
        nxt = table[(rank + 1) % nranks]
        self.send_sock = socket.create_connection((nxt["data_addr"], nxt["data_port"]), timeout=timeout)
        self.send_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_sock.sendall(struct.pack("!I", rank))
        listener.settimeout(timeout)
        self.recv_sock, _addr = listener.accept()
        self.recv_sock.settimeout(timeout)
        (prev,) = struct.unpack("!I", _recv_exact(self.recv_sock, 4))
        if prev != (rank - 1) % nranks:
            raise StandinError("rank %d: ring connection from rank %d, expected %d" % (rank, prev, (rank - 1) % nranks))
        self.scratch = {}
        self.jobs = queue.Queue()
        self.done = queue.Queue()
        self.sender = threading.Thread(target=self._send_loop, daemon=True)
        self.sender.start()

    def _send_loop(self):
        while True:
            view = self.jobs.get()
            if view is None:
                return
            try:
                if self.corrupt and len(view) > 0:
                    damaged = bytearray(view)
                    damaged[len(damaged) // 2] ^= 0x40
                    view = memoryview(damaged)
                self.send_sock.sendall(view)
                self.done.put(None)
            except OSError as exc:
                self.done.put(exc)

    def _exchange(self, send_view, recv_view):
        self.jobs.put(send_view)
        got = 0
        size = len(recv_view)
        while got < size:
            count = self.recv_sock.recv_into(recv_view[got:], size - got)
            if count == 0:
                raise StandinError("rank %d: ring peer closed the connection" % self.rank)
            got += count
        error = self.done.get()
        if error is not None:
            raise StandinError("rank %d: ring send failed: %s" % (self.rank, error))

    def _scratch(self, size):
        """Two buffers of ``size`` bytes, kept for the next collective: a fresh large buffer costs its page faults
        on every iteration, more than the copy itself."""
        if size not in self.scratch:
            self.scratch[size] = (bytearray(size), bytearray(size))
        return self.scratch[size]

    def allreduce(self, dtype, src, dst, count):
        """Ring all-reduce (sum) of ``count`` elements of ``src`` into ``dst`` (may be ``src``)."""
        nranks, rank = self.nranks, self.rank
        size = TYPES[dtype][1]
        bounds = chunk_bounds(count, nranks, size)
        source = memoryview(src)
        view = memoryview(dst)
        for step in range(nranks - 1):  # reduce-scatter: chunk c gets src[c] + what rank-1 holds
            s_start, s_end = bounds[(rank - step) % nranks]
            r_start, r_end = bounds[(rank - step - 1) % nranks]
            incoming, target = self._scratch(r_end - r_start)
            self._exchange((source if step == 0 else view)[s_start:s_end], memoryview(incoming))
            target[:] = source[r_start:r_end]
            reduce_into(dtype, target, incoming)
            view[r_start:r_end] = target
        for step in range(nranks - 1):  # all-gather of the fully reduced chunks
            s_start, s_end = bounds[(rank + 1 - step) % nranks]
            r_start, r_end = bounds[(rank - step) % nranks]
            self._exchange(view[s_start:s_end], view[r_start:r_end])

    def close(self):
        self.jobs.put(None)
        self.sender.join(timeout=5)
        self.send_sock.close()
        self.recv_sock.close()


# --------------------------------------------------------------------------------------
# nccl-tests front end (src/common.cu and src/util.cu of nccl-tests 2.17.3, the release roles/nccl_tests pins)
# --------------------------------------------------------------------------------------
PROGRAM = "all_reduce_perf"
# The stand-in claims NCCL 2.18.3: options that need a newer NCCL get nccl-tests' own answer.
NCCL_CODE = (2, 18, 3)
# getopt_long(argc, argv, SHORT_OPTIONS, longopts): the option table of nccl-tests 2.17.3.
SHORT_OPTIONS = "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:"
LONG_OPTIONS = {
    "nthreads": "t", "ngpus": "g", "minbytes": "b", "maxbytes": "e", "stepbytes": "i", "stepfactor": "f",
    "iters": "n", "agg_iters": "m", "warmup_iters": "w", "run_cycles": "N", "parallel_init": "p", "check": "c",
    "op": "o", "datatype": "d", "root": "r", "blocking": "z", "stream_null": "y", "timeout": "T", "cudagraph": "G",
    "report_cputime": "C", "output_file": "J", "average": "a", "local_register": "R", "cta_policy": "x",
    "device_implementation": "D", "device_cta_count": "V", "help": "h",
}
# Test-double knobs, long options only (nccl-tests has none of them): see the module docstring.
KNOB_OPTIONS = ("rank", "nranks", "bootstrap", "sysfs-root", "hostname", "corrupt-rank")
# test_typenames / test_opnames of nccl-tests built against NCCL >= 2.11 (bfloat16 with CUDA 11+)
NCCL_TYPE_NAMES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16")
NCCL_OP_NAMES = ("sum", "prod", "max", "min", "avg", "mulsum")
USAGE = (
    "USAGE: %s \n\t"
    "[-t,--nthreads <num threads>] \n\t"
    "[-g,--ngpus <gpus per thread>] \n\t"
    "[-b,--minbytes <min size in bytes>] \n\t"
    "[-e,--maxbytes <max size in bytes>] \n\t"
    "[-i,--stepbytes <increment size>] \n\t"
    "[-f,--stepfactor <increment factor>] \n\t"
    "[-n,--iters <iteration count>] \n\t"
    "[-m,--agg_iters <aggregated iteration count>] \n\t"
    "[-w,--warmup_iters <warmup iteration count>] \n\t"
    "[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)] \n\t"
    "[-p,--parallel_init <0/1>] \n\t"
    "[-c,--check <check iteration count>] \n\t"
    "[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n\t"
    "[-d,--datatype <nccltype/all>] \n\t"
    "[-r,--root <root>] \n\t"
    "[-z,--blocking <0/1>] \n\t"
    "[-y,--stream_null <0/1>] \n\t"
    "[-T,--timeout <time in seconds>] \n\t"
    "[-G,--cudagraph <num graph launches>] \n\t"
    "[-C,--report_cputime <0/1>] \n\t"
    "[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix (only json supported"
    " presently.)] \n\t"
    "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n\t"
    "[-R,--local_register <0/1/2> enable local (1) or symmetric (2) buffer registration on send/recv buffers"
    " (default: disable (0))] \n\t"
    "[-x,--cta_policy <0/1/2> set CTA policy (NCCL_CTA_POLICY_DEFAULT (0), NCCL_CTA_POLICY_EFFICIENCY (1),"
    " NCCL_CTA_POLICY_ZERO (2)) (default: do not set)] \n\t"
    "[-D,--device_implementation <implementation number> enable device implementation (default: 0, use NCCL"
    " implementation; requires -R 2 if > 0)] \n\t"
    "[-V,--device_cta_count <number> set number of CTAs for device implementation (default: 16)] \n\t"
    "[-h,--help]\n"
)
GIB = 1 << 30
# The memory each simulated GPU declares (cudaDeviceProp.totalGlobalMem): nccl-tests sizes its buffers
# from it, so -e above (2144 MiB - 1 GiB reserve - 1 GiB) / 3 = 32 MiB (48 MiB with -c 0) is reduced
# to that, with nccl-tests' "# Reducing maxBytes" line. Python moves ~0.1 GB/s: a 16 GiB sweep would not end.
DEFAULT_DEVICE_MEMORY = 2144 << 20


class Usage(Exception):
    """nccl-tests leaves main() before running anything: ``status``, stdout and stderr text."""

    def __init__(self, status, out="", err=""):
        super().__init__(err or out)
        self.status = status
        self.out = out
        self.err = err


def c_strtol(text):
    """``strtol(text, NULL, 0)``: leading blanks, sign, 0x hex / 0 octal / decimal; no digits gives 0."""
    match = re.match(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|[1-9][0-9]*|0[0-7]*)", text)
    if not match:
        return 0
    digits = match.group(2)
    value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") else int(digits)
    return -value if match.group(1) == "-" else value


def parse_size(text):
    """nccl-tests' ``parsesize``: ``sscanf("%lf %1s")``, K/M/G (either case) times 1024^n; -1.0 when invalid."""
    match = re.match(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*(\S?)", text)
    if not match:
        return -1.0
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(match.group(2).lower())
    if units is None:
        return -1.0
    return float(match.group(1)) * units


def getopt_long(argv):
    """GNU getopt_long over ``argv`` (without the program name), in order.

    Yields ``(option, value)``: ``option`` a short option letter (long names mapped to it), a
    knob name, or ``"?"`` with glibc's message as ``value`` for an unknown option or a missing
    argument. Non-options are skipped (GNU permutes them to the end; nccl-tests ignores them);
    ``--`` ends the options. Long names may be shortened to any unambiguous prefix.
    """
    longs = dict(LONG_OPTIONS)
    longs.update((knob, knob) for knob in KNOB_OPTIONS)
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word == "--":
            return
        if not word.startswith("-") or word == "-":
            continue
        if word.startswith("--"):
            name, has_value, value = word[2:].partition("=")
            if name in longs:
                matches = [name]
            else:
                # in table order, as glibc lists them
                matches = [candidate for candidate in longs if candidate.startswith(name)]
            if not matches:
                yield "?", "%s: unrecognized option '--%s'" % (PROGRAM, name)
                continue
            if len(matches) > 1:
                yield "?", "%s: option '--%s' is ambiguous; possibilities:%s" % (
                    PROGRAM, name, "".join(" '--%s'" % match for match in matches))
                continue
            option = longs[matches[0]]
            if option == "h":
                if has_value:
                    yield "?", "%s: option '--%s' doesn't allow an argument" % (PROGRAM, matches[0])
                else:
                    yield "h", None
                continue
            if not has_value:
                if index >= len(argv):
                    yield "?", "%s: option '--%s' requires an argument" % (PROGRAM, matches[0])
                    continue
                value = argv[index]
                index += 1
            yield option, value
            continue
        position = 1
        while position < len(word):
            letter = word[position]
            position += 1
            spec = SHORT_OPTIONS.find(letter)
            if letter == ":" or spec < 0:
                yield "?", "%s: invalid option -- '%s'" % (PROGRAM, letter)
                continue
            if SHORT_OPTIONS[spec + 1:spec + 2] != ":":
                yield letter, None
                continue
            if position < len(word):
                value = word[position:]
            elif index < len(argv):
                value = argv[index]
                index += 1
            else:
                yield "?", "%s: option requires an argument -- '%s'" % (PROGRAM, letter)
                break
            yield letter, value
            break


class Options:
    """nccl-tests' command-line parameters with its defaults, plus the test-double knobs."""

    def __init__(self):
        self.nthreads = 1
        self.ngpus = 1
        self.minbytes = 32 << 20
        self.maxbytes = 32 << 20
        self.stepbytes = 1 << 20
        self.stepfactor = 1
        self.check = 1
        self.warmup_iters = 1
        self.iters = 20
        self.agg_iters = 1
        self.run_cycles = 1
        self.op = "sum"
        self.datatype = "float"
        self.root = 0
        self.parallel_init = 0
        self.blocking = 0
        self.stream_null = 0
        self.timeout = 0
        self.cudagraph = 0
        self.report_cputime = 0
        self.average = 1
        self.output_file = None
        self.argv = []  # as given, for the -J document's args
        self.rank = None
        self.nranks = None
        self.bootstrap = None
        self.sysfs_root = None
        self.hostname = None
        self.corrupt_rank = None
        self.notes = []  # lines nccl-tests prints on stdout while parsing ("invalid type ...")


INT_OPTIONS = {"t": "nthreads", "g": "ngpus", "f": "stepfactor", "n": "iters", "m": "agg_iters", "w": "warmup_iters",
               "N": "run_cycles", "c": "check", "p": "parallel_init", "r": "root", "z": "blocking", "y": "stream_null",
               "T": "timeout", "G": "cudagraph", "C": "report_cputime", "a": "average"}
SIZE_OPTIONS = {"b": ("minbytes", "minbytes"), "e": ("maxbytes", "maxbytes"), "i": ("stepbytes", "stepBytes")}


def parse_options(argv):
    """The options of ``argv`` as nccl-tests 2.17.3's main() reads them; raises Usage where it returns."""
    opts = Options()
    opts.argv = list(argv)
    for option, value in getopt_long(argv):
        if option in INT_OPTIONS:
            setattr(opts, INT_OPTIONS[option], c_strtol(value))
        elif option in SIZE_OPTIONS:
            attr, label = SIZE_OPTIONS[option]
            parsed = parse_size(value)
            if parsed < 0:
                raise Usage(255, err="invalid size specified for '%s'\n" % label)
            setattr(opts, attr, int(parsed))
        elif option == "o":
            if value in NCCL_OP_NAMES or value == "all":
                opts.op = value
            else:
                opts.notes.append("invalid op %s, defaulting to sum .. " % value)
                opts.op = "sum"
        elif option == "d":
            if value in NCCL_TYPE_NAMES or value == "all":
                opts.datatype = value
            else:
                opts.notes.append("invalid type %s, defaulting to float .. " % value)
                opts.datatype = "float"
        elif option == "J":
            opts.output_file = value
        elif option == "R":
            opts.notes.append("Option -R (register) is not supported before NCCL 2.19. Ignoring")
        elif option == "x":
            opts.notes.append("Option -x (cta_policy) is not supported before NCCL 2.27. Ignoring")
        elif option == "D":
            raise Usage(255, "".join(note + "\n" for note in opts.notes),
                        "Option -D (device implementation) requires NCCL >= 2.28.0\n")
        elif option == "V":
            raise Usage(255, "".join(note + "\n" for note in opts.notes),
                        "Option -V (device CTA count) requires NCCL >= 2.28.0\n")
        elif option in ("h", "?"):
            out = "".join(note + "\n" for note in opts.notes)
            if option == "?":
                out += "invalid option '?'\n"
            raise Usage(0, out + USAGE % PROGRAM, "" if option == "h" else value + "\n")
        elif option in ("rank", "nranks", "corrupt-rank"):
            setattr(opts, option.replace("-", "_"), int(value))
        else:
            setattr(opts, option.replace("-", "_"), value)
    if opts.minbytes > opts.maxbytes:
        raise Usage(255, "".join(note + "\n" for note in opts.notes),
                    "invalid sizes for 'minbytes' and 'maxbytes': %d > %d\n" % (opts.minbytes, opts.maxbytes))
    return opts


def check_options(opts):
    """What nccl-tests accepts but this stand-in cannot do: refused with exit status 2, naming it."""
    if opts.datatype not in TYPES:
        raise StandinError("data type %r not supported by the stand-in (%s)" % (opts.datatype, ", ".join(TYPES)), 2)
    if opts.op != "sum":
        raise StandinError("the stand-in reduces with -o sum only", 2)
    if opts.nthreads < 1 or opts.ngpus < 1:
        raise StandinError("need -t >= 1 and -g >= 1", 2)
    if opts.iters < 1 or opts.agg_iters < 1 or opts.warmup_iters < 0 or opts.check < 0 or opts.cudagraph < 0:
        raise StandinError("need -n >= 1, -m >= 1, -w >= 0, -c >= 0, -G >= 0", 2)
    if (opts.stepfactor > 1 and opts.minbytes < 1) or (opts.stepfactor <= 1 and opts.stepbytes < 1):
        raise StandinError("this size sweep never ends (nccl-tests would loop forever): "
                           "need -b >= 1 with -f > 1, -i >= 1 otherwise", 2)


def mpi_world(env):
    """(rank, size) of this process in MPI_COMM_WORLD from the launcher's environment, or None.

    Open MPI's mpirun sets OMPI_COMM_WORLD_*, MPICH/Intel MPI's Hydra PMI_*, srun SLURM_* (what an
    MPI library started by srun reads through PMI).
    """
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                               ("SLURM_PROCID", "SLURM_NTASKS")):
        if env.get(rank_var) is not None and env.get(size_var) is not None:
            return int(env[rank_var]), int(env[size_var])
    return None


def proc_and_nprocs(opts, env):
    """This process's MPI rank and the number of processes: --rank/--nranks, else MPI's, else 0 of 1
    (nccl-tests without a launcher: totalProcs = 1)."""
    if opts.rank is not None or opts.nranks is not None:
        return (0 if opts.rank is None else opts.rank), (1 if opts.nranks is None else opts.nranks)
    return mpi_world(env) or (0, 1)


def sweep_sizes(opts):
    """nccl-tests' size loop: ``size = stepfactor > 1 ? size * stepfactor : size + stepbytes``."""
    result = []
    size = opts.minbytes
    while size <= opts.maxbytes:
        result.append(size)
        size = size * opts.stepfactor if opts.stepfactor > 1 else size + opts.stepbytes
    return result


def warmup_sizes(opts):
    """Warm-up for all sizes, always stepping by a factor of 2 (TimeTest)."""
    result = []
    size = opts.minbytes
    while size <= opts.maxbytes:
        result.append(size)
        if size == 0:
            break
        size *= 2
    return result


def float_str(value, width):
    """nccl-tests 2.17.3's ``getFloatStr``: two decimals while the integer part has fewer than width-2 digits, then
    one, then none, then e-notation (``power`` counts the integer digits as its uint64 loop does; NaN counts 0)."""
    power = 0
    bound = 1
    while value >= bound:
        power += 1
        bound *= 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    return "%*.1e" % (width, value) if width >= 7 else "%*.0e" % (width, value)


def combine_times(values, mode):
    if mode == 0:
        return values[0]
    if mode == 2:
        return min(values)
    if mode == 3:
        return max(values)
    return sum(values) / len(values)


def memory_max_bytes(device_memory, check):
    """nccl-tests' buffer limit: reserve 1 GiB per 16 GiB (at most 4 GiB), 1 GiB more for the rest,
    then send, receive (and expected when checking) buffers."""
    reserve = min(-(-device_memory // (16 * GIB)) * GIB, 4 * GIB)
    return (device_memory - reserve - GIB) // (3 if check else 2)


# --------------------------------------------------------------------------------------
# -J FILE: nccl-tests 2.17.3's JSON writer (src/util.cu), document version 1
# --------------------------------------------------------------------------------------
JSON_FILE_VERSION = 1
NCCL_VERSION_CODE = NCCL_CODE[0] * 10000 + NCCL_CODE[1] * 100 + NCCL_CODE[2]  # ncclGetVersion: 21803
SANITIZE_LIMIT = 2048  # the char tmp[2048] each key and string goes through
# util.cu's states: a key waits for its value; objects and lists are empty until their first item
OBJECT_EMPTY, OBJECT_SOME, LIST_EMPTY, LIST_SOME, KEY = "object", "object+", "list", "list+", "key"
JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\t": "\\t", "\n": "\\n"}


def sanitize_json(text, limit=SANITIZE_LIMIT):
    """``sanitizeJson``: quotes, backslash, slash, tab and newline escaped; cut at the first other byte below 0x20
    or from 0x7F up (a signed char: every non-ASCII byte) and at ``limit - 1`` characters."""
    out = []
    count = 0
    for byte in text.encode("utf-8", "surrogateescape"):
        if count + 1 >= limit:
            break
        char = chr(byte)
        if char in JSON_ESCAPES:
            if count + 2 > limit:
                break
            out.append(JSON_ESCAPES[char])
            count += 2
        elif byte >= 0x7F or byte <= 0x1F:
            break
        else:
            out.append(char)
            count += 1
    return "".join(out)


def json_string(text):
    return '"%s"' % sanitize_json(text)


def json_double(value):
    """``jsonDouble``: ``%lf``, a NaN as the string "nan"."""
    return '"nan"' if math.isnan(value) else "%f" % value


def json_bool(value):
    """``jsonBool``: the strings "true" and "false"."""
    return json_string("true" if value else "false")


def has_json_suffix(path):
    """``classifyOutputFile``: the extension after the last dot that follows the last slash is ``json``, any case."""
    dot, slash = path.rfind("."), path.rfind("/")
    return dot > slash and dot + 1 < len(path) and path[dot + 1:].lower() == "json"


def open_json_output(path):
    """``jsonOutputInit``'s file: ``path`` created exclusively, else ``path.0``, ``path.1``...; prints which, or
    that it skips. None when it cannot write."""
    try_path = path
    count = 0
    while True:
        try:
            handle = open(try_path, "x", encoding="ascii", newline="")  # pylint: disable=consider-using-with
            break
        except FileExistsError:
            try_path = "%s.%d" % (path, count)
            count += 1
        except OSError:
            emit("# skipping json output; %s not accessible" % try_path)
            return None
    emit("# Writing JSON output to %s" % try_path)
    return handle


class JsonReport:
    """util.cu's writer: keys and values go to the file as they come, a stack of states says where a separator goes.

    A misplaced call raises AssertionError where util.cu asserts."""

    def __init__(self, handle):
        self.handle = handle
        self.states = []

    def key(self, name):
        """``jsonKey``: only inside an object."""
        state = self.states[-1] if self.states else None
        if state == OBJECT_SOME:
            self.handle.write(",")
        elif state == OBJECT_EMPTY:
            self.states[-1] = OBJECT_SOME
        else:
            raise AssertionError("jsonKey outside an object")
        self.handle.write("%s:" % json_string(name))
        self.states.append(KEY)

    def _value(self):
        """``jsonValHelper``: after a key, in a list (a comma after its first item) or at the top level."""
        state = self.states[-1] if self.states else None
        if state == LIST_SOME:
            self.handle.write(",")
        elif state == LIST_EMPTY:
            self.states[-1] = LIST_SOME
        elif state == KEY:
            self.states.pop()
        elif state is not None:
            raise AssertionError("a value inside an object without its key")

    def value(self, text):
        """One value already in JSON (json_string, json_double, ``%d``...)."""
        self._value()
        self.handle.write(text)

    def pair(self, name, text):
        self.key(name)
        self.value(text)

    def start(self, bracket):
        """``jsonStartObject`` ("{") or ``jsonStartList`` ("[")."""
        self._value()
        self.handle.write(bracket)
        self.states.append(OBJECT_EMPTY if bracket == "{" else LIST_EMPTY)

    def finish(self):
        """``jsonFinishObject`` / ``jsonFinishList``: the innermost open one."""
        state = self.states.pop()
        if state not in (OBJECT_EMPTY, OBJECT_SOME, LIST_EMPTY, LIST_SOME):
            raise AssertionError("nothing open to finish")
        self.handle.write("}" if state in (OBJECT_EMPTY, OBJECT_SOME) else "]")

    def close(self):
        """``jsonOutputFinalize`` where it succeeds (only the top-level object open): ``end_time``, the final brace.
        Else (a run that failed inside its table) the document is left as written, without ``end_time``."""
        if self.states in ([OBJECT_EMPTY], [OBJECT_SOME]):
            self.pair("end_time", json_string(local_time()))
            self.finish()
        self.handle.close()


def local_time():
    """``formatNow``: local time, ``%Y-%m-%d %H:%M:%S``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())


class Run:
    """One process's whole run: ``opts.nthreads * opts.ngpus`` ranks of the job."""

    def __init__(self, opts, env):
        self.opts = opts
        self.env = env
        self.proc, self.nprocs = proc_and_nprocs(opts, env)
        self.local_count = opts.nthreads * opts.ngpus
        self.nranks = self.nprocs * self.local_count
        self.timeout = float(env.get("GPUFLEET_STANDIN_TIMEOUT", "120"))
        self.deadline = time.monotonic() + float(env.get("GPUFLEET_STANDIN_MAX_SECONDS", "600"))
        self.host = (opts.hostname or env.get("GPUFLEET_STANDIN_HOSTNAME") or socket.gethostname()).split(".")[0]
        self.control = None
        self.ring = None
        self.log = None
        self.local_rank = 0
        corrupt = opts.corrupt_rank
        if corrupt is None and env.get("GPUFLEET_STANDIN_CORRUPT_RANK"):
            corrupt = int(env["GPUFLEET_STANDIN_CORRUPT_RANK"])
        self.corrupt_rank = corrupt
        self.rows_done = 0
        self.exit_status = 0
        self.report = None  # the -J document's writer: MPI rank 0 only, when -J names a .json file

    @property
    def rank(self):
        """This process's MPI rank (its first NCCL rank is rank * nthreads * ngpus)."""
        return self.proc

    def print0(self, text):
        if self.proc == 0:
            emit(text)

    def nccl_failure(self, where, message, test_line, returns=()):
        """NCCL WARN + nccl-tests' failure lines; ends the run with testNcclError.

        The shapes are NCCL's and nccl-tests'; the source line numbers are this stand-in's
        own (real ones differ between releases), not taken from a recording.
        """
        self.log.warn(where, message)
        for place in returns:
            self.log.info("%s -> 3" % place)
        emit("%s: Test NCCL failure common.cu:%d '%s / %s'" % (self.host, test_line, NCCL_INTERNAL_ERROR, self.log.last_error))
        emit(" .. %s pid %d: Test failure common.cu:%d" % (self.host, os.getpid(), MAIN_TESTCHECK_LINE))
        raise StandinError("no socket interface found", TEST_NCCL_ERROR)

    def main(self):
        opts = self.opts
        for note in opts.notes:
            emit(note)  # printed by every process, as nccl-tests' option parsing is
        check_options(opts)
        address = opts.bootstrap or self.env.get("GPUFLEET_STANDIN_BOOTSTRAP")
        if self.nprocs > 1 and not address:
            raise StandinError("more than one process needs GPUFLEET_STANDIN_BOOTSTRAP=HOST:PORT (or --bootstrap)", 2)
        if not 0 <= self.proc < self.nprocs:
            raise StandinError("rank %d outside 0..%d" % (self.proc, self.nprocs - 1), 2)
        device_memory = int(parse_size(self.env.get("GPUFLEET_STANDIN_DEVICE_MEMORY") or str(DEFAULT_DEVICE_MEMORY)))
        if device_memory < 2 * GIB + 3 * 1024:
            raise StandinError("GPUFLEET_STANDIN_DEVICE_MEMORY must be at least 2G + 3K (nccl-tests reserves 2 GiB)", 2)
        self.open_report()
        step = "%d(factor)" % opts.stepfactor if opts.stepfactor > 1 else "%d(bytes)" % opts.stepbytes
        self.print0("# Collective test starting: %s" % PROGRAM)
        self.print0(
            "# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d"
            % (opts.nthreads, opts.ngpus, opts.minbytes, opts.maxbytes, step, opts.warmup_iters, opts.iters,
               opts.agg_iters,
               opts.check, opts.cudagraph)
        )
        if opts.blocking:
            self.print0("# Blocking Enabled: wait for completion and barrier after each collective ")
        if opts.parallel_init:
            self.print0("# Parallel Init Enabled: threads call into NcclInitRank concurrently ")
        self.print0("#")
        self.report_config()
        if self.nprocs > 1:
            self.control = Control(self.proc, self.nprocs, address, self.timeout)
        procs = self.allgather({"host": self.host, "pid": os.getpid(), "memory": device_memory})
        self.local_rank = sum(1 for item in procs[: self.proc] if item["host"] == self.host)
        gpu0 = self.env.get("NCCL_TESTS_DEVICE")
        self.log = NcclLog(self.host, self.first_device(self.local_rank, gpu0), self.env)
        self.print0("# Using devices")
        for proc, item in enumerate(procs):
            local = sum(1 for other in procs[:proc] if other["host"] == item["host"])
            for index in range(self.local_count):
                rank = proc * self.local_count + index
                device = self.first_device(local, gpu0) + index
                fields = (rank, 0, item["pid"], item["host"], device, 0, device, 0, DEVICE_NAME)
                self.print0("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s" % fields)
        self.report_devices(procs, gpu0)
        mem_max = memory_max_bytes(min(item["memory"] for item in procs), opts.check)
        if opts.maxbytes > mem_max:
            opts.maxbytes = mem_max
            opts.minbytes = min(opts.minbytes, mem_max)
            self.print0("#\n# Reducing maxBytes to %d due to memory limitation" % mem_max)
        try:
            self.init_comm()
            self.benchmark()
        finally:
            if self.ring is not None:
                self.ring.close()
            if self.control is not None:
                self.control.close()
        if self.exit_status:
            # main's TESTCHECK(result) of run()'s testNumResults: printf, so every process
            emit(" .. %s pid %d: Test failure common.cu:%d" % (self.host, os.getpid(), MAIN_TESTCHECK_LINE))
        return self.exit_status

    def open_report(self):
        """``jsonOutputInit`` on MPI rank 0 for ``-J FILE.json``: the file, then the run's identity."""
        path = self.opts.output_file
        if self.proc != 0 or path is None or not has_json_suffix(path):
            return
        handle = open_json_output(path)
        if handle is None:
            return
        report = self.report = JsonReport(handle)
        report.start("{")
        report.pair("version", "%d" % JSON_FILE_VERSION)
        report.pair("start_time", json_string(local_time()))
        report.key("args")
        report.start("[")
        for arg in [PROGRAM] + list(self.opts.argv):
            report.value(json_string(arg))
        report.finish()
        report.key("env")
        report.start("[")
        for name, value in self.env.items():
            report.value(json_string("%s=%s" % (name, value)))
        report.finish()
        report.pair("nccl_version", "%d" % NCCL_VERSION_CODE)

    def report_config(self):
        """``writeDeviceReport``'s settings: ``config`` is opened here and closed after its ``devices``."""
        report, opts = self.report, self.opts
        if report is None:
            return
        report.key("config")
        report.start("{")
        for name, value in (("nthreads", opts.nthreads), ("ngpus", opts.ngpus)):
            report.pair(name, "%d" % value)
        report.pair("minimum_bytes", "%d" % opts.minbytes)
        report.pair("maximum_bytes", "%d" % opts.maxbytes)
        if opts.stepfactor > 1:
            report.pair("step_factor", "%d" % opts.stepfactor)
        else:
            report.pair("step_bytes", "%d" % opts.stepbytes)
        for name, value in (("warmup_iters", opts.warmup_iters), ("iterations", opts.iters),
                            ("aggregated_iterations", opts.agg_iters), ("validation", opts.check),
                            ("graph", opts.cudagraph)):
            report.pair(name, "%d" % value)
        report.pair("blocking_collectives", json_bool(opts.blocking))
        report.pair("parallel_init", json_bool(opts.parallel_init))

    def report_devices(self, procs, gpu0):
        """``devices``: rank 0 parses each process's device lines as gathered, and sscanf reads the first only."""
        report = self.report
        if report is None:
            return
        report.key("devices")
        report.start("[")
        for proc, item in enumerate(procs):
            local = sum(1 for other in procs[:proc] if other["host"] == item["host"])
            device = self.first_device(local, gpu0)
            report.start("{")
            for name, text in (("rank", "%d" % (proc * self.local_count)), ("group", "0"), ("pid", "%d" % item["pid"]),
                               ("hostname", json_string(item["host"])), ("device", "%d" % device),
                               ("device_hex", json_string("%04x:%02x:%02x" % (0, device, 0))),
                               ("device_info", json_string(DEVICE_NAME))):
                report.pair(name, text)
            report.finish()
        report.finish()
        report.finish()  # config

    def report_half(self, in_place, usec, algbw, busbw, wrong):
        """``writeBenchmarkLineBody``'s JSON: one half of a row."""
        report = self.report
        if report is None:
            return
        report.key("in_place" if in_place else "out_of_place")
        report.start("{")
        report.pair("cpu_time" if self.opts.report_cputime else "time", json_double(usec))
        report.pair("alg_bw", json_double(algbw))
        report.pair("bus_bw", json_double(busbw))
        report.pair("nwrong", "null" if wrong is None else json_double(float(wrong)))
        report.finish()

    def report_row_start(self, size, count, dtype):
        """``writeBenchmarkLinePreamble``'s JSON: a row's object, left open for its halves."""
        report = self.report
        if report is None:
            return
        report.start("{")
        report.pair("size", "%d" % size)
        report.pair("count", "%d" % count)
        report.pair("type", json_string(dtype))
        report.pair("redop", json_string(self.opts.op))
        report.pair("root", json_string("%6i" % -1))

    def report_row_end(self):
        """``writeBenchmarkLineTerminator(iters, "")``: the row's iterations (-n) and an empty experiment name."""
        report = self.report
        if report is None:
            return
        report.pair("actual_iterations", "%d" % self.opts.iters)
        report.pair("experiment_name", json_string(""))
        report.finish()

    def report_footer(self, errors, avg, check_avg_bw):
        """``writeResultFooter`` and ``writeErrors``: the summary, version 1's spelling, NCCL's empty last error."""
        report = self.report
        if report is None:
            return
        report.finish()  # results
        report.key("out_of_bounds")
        report.start("{")
        report.pair("count", "%d" % errors)
        report.pair("okay", json_bool(errors == 0))
        report.finish()
        report.key("average_bus_bandwidith")
        report.start("{")
        report.pair("bandwidith", json_double(avg))
        report.pair("okay", json_string("unchecked") if check_avg_bw == -1 else json_bool(avg >= check_avg_bw * 0.9))
        report.finish()
        report.key("errors")
        report.start("[")
        report.value(json_string(""))
        report.finish()

    def close_report(self):
        if self.report is not None:
            self.report.close()
            self.report = None

    def first_device(self, local, gpu0):
        """cudaDev of a process's first GPU: NCCL_TESTS_DEVICE, else localRank * nThreads * nGpus."""
        return atoi(gpu0) if gpu0 is not None else local * self.local_count

    def allgather(self, value):
        if self.control is None:
            return [value]
        return self.control.allgather(value)

    def bcast(self, value):
        if self.control is None:
            return value
        return self.control.bcast(value)

    def barrier(self):
        if self.control is not None:
            self.control.barrier()

    def interfaces(self, max_ifs):
        return find_interfaces(self.env.get("NCCL_SOCKET_IFNAME"), system_ipv4_interfaces(), max_ifs)

    def init_comm(self):
        """ncclGetUniqueId on process 0, then ncclCommInitRank for every rank of every process."""
        log = self.log
        unique = None
        if self.proc == 0:
            found = self.interfaces(1)
            if not found:
                self.nccl_failure("bootstrap.cc:45", "Bootstrap : no socket interface found", 934, ("init.cc:82", "init.cc:101"))
            log.info("Bootstrap : Using %s:%s<0>" % found[0])
            unique = {"commId": "0x%016x" % (hash((self.host, os.getpid(), time.time())) & 0xFFFFFFFFFFFFFFFF)}
        unique = self.bcast(unique)
        if self.proc != 0:
            found = self.interfaces(1)
            if not found:
                self.nccl_failure("bootstrap.cc:45", "Bootstrap : no socket interface found", 1005, ("init.cc:1617",))
            log.info("Bootstrap : Using %s:%s<0>" % found[0])
        log.info("NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory")
        log.info("NET/Plugin : No plugin found, using internal implementation")
        if self.proc == 0:
            log.version()
        ifname = self.env.get("NCCL_SOCKET_IFNAME")
        if ifname is not None and len(ifname) > 1:
            log.info("NCCL_SOCKET_IFNAME set by environment to %s" % ifname)
        self.probe_ib()
        socket_ifs = self.interfaces(MAX_IFS)
        if not socket_ifs:
            self.nccl_failure("transport/net_socket.cc:46", "NET/Socket : no interface found", 1005)
        log.info("NET/Socket : Using " + " ".join("[%d]%s:%s<0>" % (index, name, addr) for index, (name, addr) in enumerate(socket_ifs)))
        log.info("Using network Socket")
        comm = "0x%x" % (id(self) & 0xFFFFFFFFFFFF)
        first = self.proc * self.local_count
        for index in range(self.local_count):
            log.info("comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId 0 commId %s - Init START"
                     % (comm, first + index, self.nranks, log.device + index, log.device + index, unique["commId"]))
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind((socket_ifs[0][1], 0))
            listener.listen(4)
            me = {"data_addr": socket_ifs[0][1], "data_port": listener.getsockname()[1]}
            table = self.allgather(me)
            if self.proc == 0:
                log.info("Channel 00/01 : " + "".join("%4d" % rank for rank in range(self.nranks)))
            for index in range(self.local_count):
                log.info("Trees [0] -1/-1/-1->%d->-1" % (first + index))
            if self.nprocs > 1:
                # The ranks of one process pass the data among themselves in memory; only the
                # process's last rank sends to the next process and its first receives.
                prev, nxt = (first - 1) % self.nranks, (first + self.local_count) % self.nranks
                log.info("Channel 00/0 : %d[0] -> %d[0] [receive] via NET/Socket/0" % (prev, first))
                log.info("Channel 00/0 : %d[0] -> %d[0] [send] via NET/Socket/0" % (first + self.local_count - 1, nxt))
                self.ring = Ring(self.proc, self.nprocs, listener, table, self.timeout)
                self.ring.corrupt = False
            log.info("Connected all rings")
            for index in range(self.local_count):
                log.info("comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId 0 commId %s - Init COMPLETE"
                         % (comm, first + index, self.nranks, log.device + index, log.device + index, unique["commId"]))
        finally:
            listener.close()
        self.barrier()

    def probe_ib(self):
        log = self.log
        disable = self.env.get("NCCL_IB_DISABLE")
        if disable is not None:
            log.info("NCCL_IB_DISABLE set by environment to %s." % disable)
        if disable is not None and disable.strip() not in ("", "0"):
            return
        root = self.opts.sysfs_root or self.env.get("GPUFLEET_STANDIN_SYSFS_ROOT") or "/sys"
        try:
            hcas = sorted(os.listdir(os.path.join(root, "class", "infiniband")))
        except OSError:
            hcas = []
        for hca in hcas:
            log.warn("misc/ibvwrap.cc:106", "Call to ibv_open_device failed")
            log.warn("transport/net_ib.cc:545", "NET/IB : Unable to open device %s" % hca)
        log.info("NET/IB : No device found.")

    def maybe_hang(self):
        """Test-double knob GPUFLEET_STANDIN_HANG_AFTER_ROWS=N: after N table rows, rank
        GPUFLEET_STANDIN_HANG_RANK (default 1) stops for good (sleeps, past any deadline),
        so the other ranks wait for it, as the ranks of a hung NCCL job do."""
        self.rows_done += 1
        after = self.env.get("GPUFLEET_STANDIN_HANG_AFTER_ROWS")
        if after and self.rows_done >= int(after) and self.proc == int(self.env.get("GPUFLEET_STANDIN_HANG_RANK", "1")):
            while True:
                time.sleep(3600)

    def check_time(self):
        if time.monotonic() > self.deadline:
            raise StandinError("rank %d: GPUFLEET_STANDIN_MAX_SECONDS exceeded" % self.proc)

    def inputs(self, dtype, count, rep):
        """The inputs of this process's ranks (global ranks proc * k .. proc * k + k - 1)."""
        first = self.proc * self.local_count
        return [make_input(dtype, count, self.nranks, first + index, rep) for index in range(self.local_count)]

    def run_once(self, dtype, sends, recvs, count):
        """One all-reduce of the process's ranks: their buffers are summed in memory (the
        stand-in's NVLink), the sum goes round the ring of processes, every rank gets the result."""
        src = sends[0]
        if len(sends) > 1:
            src = bytearray(sends[0])
            for other in sends[1:]:
                reduce_into(dtype, src, other)
        dst = recvs[0]
        if self.ring is not None:
            self.ring.allreduce(dtype, src, dst, count)
        elif dst is not src:
            dst[:] = src
        for other in recvs[1:]:
            other[:] = dst

    def buffers(self, dtype, count, rep, in_place):
        sends = self.inputs(dtype, count, rep)
        recvs = sends if in_place else [bytearray(len(sends[0])) for _send in sends]
        return sends, recvs

    def warm_up(self, dtype, elem_size):
        for size in warmup_sizes(self.opts):
            count = size // elem_size
            sends, recvs = self.buffers(dtype, count, 0, False)
            for _warm in range(self.opts.warmup_iters):
                self.run_once(dtype, sends, recvs, count)
                self.check_time()

    def bench_time(self, dtype, count, in_place, rep):
        """BenchTime: (time in us combined over processes, #wrong summed over ranks or None)."""
        opts = self.opts
        sends, recvs = self.buffers(dtype, count, 0, in_place)
        self.run_once(dtype, sends, recvs, count)  # "Sync": one untimed collective
        self.barrier()
        launches = opts.iters * opts.agg_iters * max(1, opts.cudagraph)
        clock = time.process_time if opts.report_cputime else time.perf_counter
        start = clock()
        for _launch in range(launches):
            self.run_once(dtype, sends, recvs, count)
        elapsed = (clock() - start) / launches
        self.check_time()
        seconds = combine_times(self.allgather(elapsed), opts.average)
        self.barrier()
        if not opts.check:
            return seconds * 1.0e6, None
        wrong = 0
        for _check in range(opts.check):
            sends, recvs = self.buffers(dtype, count, rep, in_place)
            if self.ring is not None:
                self.ring.corrupt = self.corrupt_rank == self.proc
            self.run_once(dtype, sends, recvs, count)
            if self.ring is not None:
                self.ring.corrupt = False
            expected = make_expected(dtype, count, self.nranks, rep)
            mine = sum(count_wrong(dtype, recv, expected) for recv in recvs)
            wrong = sum(self.allgather(mine))
            if wrong:
                break
        return seconds * 1.0e6, wrong

    def benchmark(self):
        opts = self.opts
        dtype = opts.datatype
        elem_size = TYPES[dtype][1]
        timer = "cputime" if opts.report_cputime else "time"
        self.print0("#")
        self.print0("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""))
        self.print0("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
                    % ("size", "count", "type", "redop", "root", timer, "algbw", "busbw", "#wrong",
                       timer, "algbw", "busbw", "#wrong"))
        self.print0("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s"
                    % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
        if self.report is not None:
            self.report.key("results")
            self.report.start("[")
        self.warm_up(dtype, elem_size)
        factor = 2.0 * (self.nranks - 1) / self.nranks  # AllReduceGetBw: 0 for one rank
        busbws = []
        errors = 0
        rep = 0
        cycle = opts.run_cycles
        while True:
            for size in sweep_sizes(opts):
                count = size // elem_size
                line = "%12d  %12d  %8s  %6s  %6s" % (count * elem_size, count, dtype, opts.op, "%6i" % -1)
                self.report_row_start(count * elem_size, count, dtype)
                for in_place in (False, True):
                    rep += 1
                    usec, wrong = self.bench_time(dtype, count, in_place, rep)
                    algbw = (count * elem_size) / 1.0e9 / (usec / 1.0e6) if usec > 0 else 0.0
                    busbw = algbw * factor
                    busbws.append(busbw)
                    cells = (float_str(usec, 7), float_str(algbw, 6), float_str(busbw, 6))
                    if wrong is None:
                        line += "  %7s  %6s  %6s    N/A" % cells
                    else:
                        errors += wrong
                        line += "  %7s  %6s  %6s  %6g" % (cells + (float(wrong),))
                    self.report_half(in_place, usec, algbw, busbw, wrong)
                self.print0(line)
                self.report_row_end()
                self.maybe_hang()
            cycle -= 1
            if cycle == 0:
                break
        avg = sum(busbws) / len(busbws) if busbws else 0.0
        min_bw = self.env.get("NCCL_TESTS_MIN_BW")
        check_avg_bw = float(min_bw) if min_bw else -1.0
        verdict = "" if check_avg_bw == -1 else ("FAILED" if avg < check_avg_bw * 0.9 else "OK")
        self.print0("# Out of bounds values : %d %s" % (errors, "FAILED" if errors else "OK"))
        self.print0("# Avg bus bandwidth    : %g %s" % (avg, verdict))
        self.print0("#")
        self.print0("# Collective test concluded: %s" % PROGRAM)
        self.report_footer(errors, avg, check_avg_bw)
        self.barrier()
        self.print0("")  # writeErrors: "\n" for ncclGetLastError's empty string
        self.exit_status = TEST_NUM_RESULTS if errors or avg < check_avg_bw * 0.9 else 0


def atoi(text):
    match = re.match(r"\s*[+-]?[0-9]+", text)
    return int(match.group(0)) if match else 0


def main(argv=None, env=None):
    env = dict(os.environ) if env is None else env
    try:
        opts = parse_options(sys.argv[1:] if argv is None else argv)
    except Usage as exc:
        sys.stderr.write(exc.err)  # getopt's own message comes first (stderr is unbuffered)
        sys.stderr.flush()
        sys.stdout.write(exc.out)
        sys.stdout.flush()
        return exc.status
    run = Run(opts, env)
    try:
        return run.main()
    except StandinError as exc:
        if exc.status != TEST_NCCL_ERROR:
            sys.stderr.write("all_reduce_perf_standin (test double): %s\n" % exc)
        return exc.status
    except (OSError, ValueError) as exc:
        if isinstance(exc, ConnectionError) and run.proc != 0:
            # Rank 0 went away (in nccl-tests the others would sit in MPI_Bcast until mpirun
            # kills them): give the launcher a moment to report rank 0's own status first.
            time.sleep(2)
        sys.stderr.write("all_reduce_perf_standin (test double): rank %d: %s\n" % (run.proc, exc))
        return 1
    finally:
        run.close_report()  # main's outputFileFinalize, after run() returned whatever it returned


if __name__ == "__main__":
    sys.exit(main())
