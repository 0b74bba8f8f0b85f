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

- **Rank and size** come from ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE`` (Open MPI),
  else ``PMI_RANK``/``PMI_SIZE``, else ``SLURM_PROCID``/``SLURM_NTASKS``, else ``--rank`` /
  ``--nranks``. The local rank (the "device" number) is the rank's index among the ranks
  on the same host, as nccl-tests derives it from host hashes.
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
  (each after an empty line), INFO lines from ``INFO`` up, the version line from ``VERSION``.

Options as nccl-tests: ``-b/-e`` min/max bytes (K/M/G suffixes), ``-f`` step factor or ``-i``
step bytes, ``-n`` iterations, ``-w`` warmup iterations, ``-c`` check (validation), ``-g`` GPUs
per rank (must be 1), ``-t`` threads (must be 1), ``-d`` data type, ``-o`` reduction (``sum``
only), ``-a`` average mode (0 rank 0, 1 average, 2 min, 3 max; default 1).

Data types: ``float`` (default, like nccl-tests) and ``double`` are reduced element by element
in Python (about 40 MB/s: the CPU, not the link, then bounds busbw); ``int8``, ``uint8``,
``int32``, ``uint32``, ``int64``, ``uint64`` are reduced by one big-integer addition per chunk
(input values are small and non-negative, so no lane carries into the next), fast enough
that a 1 Gbit/s link is what limits busbw. Use an integer type to measure links.

Test-double knobs (not nccl-tests options): ``--hostname`` / ``GPUFLEET_STANDIN_HOSTNAME``
(namespaces that share one UTS name), ``--corrupt-rank R`` / ``GPUFLEET_STANDIN_CORRUPT_RANK``
(rank R flips one byte of every chunk it sends during validation, so ``#wrong`` must come
out non-zero), ``GPUFLEET_STANDIN_MAX_SECONDS`` (wall-clock cap of the whole run, default 600),
``GPUFLEET_STANDIN_HANG_AFTER_ROWS=N`` (rank ``GPUFLEET_STANDIN_HANG_RANK``, default 1, stops
for good after the N-th table row: a hang for the benchmark runner's timeout to catch).
Sizes are capped at 1 GiB and iterations at 1000.
"""

from __future__ import annotations

import argparse
import array
import fcntl
import json
import operator
import os
import queue
import socket
import struct
import sys
import threading
import time

NCCL_VERSION = "2.18.3+cpu.standin"
DEVICE_NAME = "CPU stand-in"
SIOCGIFADDR = 0x8915
MAX_IFS = 16
MAX_BYTES_CAP = 1 << 30
MAX_ITERS = 1000
LEVELS = {"VERSION": 1, "WARN": 2, "INFO": 3, "ABORT": 4, "TRACE": 5}
NCCL_INTERNAL_ERROR = "internal error - please report this issue to the NCCL developers"
TEST_NCCL_ERROR = 3  # nccl-tests testNcclError
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
        if self.level >= LEVELS["VERSION"]:
            emit("NCCL version %s" % NCCL_VERSION)


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


def reduce_into(dtype, target, incoming):
    """``target[:] = target + incoming`` element-wise (sum)."""
    if dtype in FLOAT_TYPES:
        code = TYPES[dtype][0]
        summed = array.array(code, map(operator.add, memoryview(target).cast(code), memoryview(incoming).cast(code)))
        target[:] = summed.tobytes()
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

    def allreduce(self, dtype, src, dst, count):
        """Ring all-reduce (sum) of ``count`` elements of ``src`` into ``dst`` (may be ``src``)."""
        nranks, rank = self.nranks, self.rank
        size = TYPES[dtype][1]
        bounds = chunk_bounds(count, nranks, size)
        source = memoryview(src)
        view = memoryview(dst)
        scratch = bytearray(max(end - start for start, end in bounds))
        for step in range(nranks - 1):  # reduce-scatter: chunk c gets src[c] + what rank-1 holds
            s_start, s_end = bounds[(rank - step) % nranks]
            r_start, r_end = bounds[(rank - step - 1) % nranks]
            incoming = memoryview(scratch)[: r_end - r_start]
            self._exchange((source if step == 0 else view)[s_start:s_end], incoming)
            target = bytearray(source[r_start:r_end])
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
# nccl-tests front end
# --------------------------------------------------------------------------------------
def parse_size(text):
    text = text.strip()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def build_parser():
    parser = argparse.ArgumentParser(description="TEST DOUBLE: CPU stand-in for nccl-tests all_reduce_perf")
    parser.add_argument("-t", "--nthreads", type=int, default=1)
    parser.add_argument("-g", "--ngpus", type=int, default=1)
    parser.add_argument("-b", "--minbytes", type=parse_size, default=32 << 20)
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=32 << 20)
    parser.add_argument("-i", "--stepbytes", type=parse_size, default=1 << 20)
    parser.add_argument("-f", "--stepfactor", type=int, default=1)
    parser.add_argument("-n", "--iters", type=int, default=20)
    parser.add_argument("-m", "--agg_iters", type=int, default=1)
    parser.add_argument("-w", "--warmup_iters", type=int, default=5)
    parser.add_argument("-c", "--check", type=int, default=1)
    parser.add_argument("-d", "--datatype", default="float")
    parser.add_argument("-o", "--op", default="sum")
    parser.add_argument("-a", "--average", type=int, default=1)
    parser.add_argument("-z", "--blocking", type=int, default=0)
    parser.add_argument("-G", "--cudagraph", type=int, default=0)
    parser.add_argument("--rank", type=int, default=None)
    parser.add_argument("--nranks", type=int, default=None)
    parser.add_argument("--bootstrap", default=None, help="HOST:PORT of rank 0's control listener")
    parser.add_argument("--sysfs-root", default=None)
    parser.add_argument("--hostname", default=None)
    parser.add_argument("--corrupt-rank", type=int, default=None)
    return parser


def rank_and_size(args, env):
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                               ("SLURM_PROCID", "SLURM_NTASKS")):
        if env.get(rank_var) is not None and env.get(size_var) is not None and args.rank is None:
            return int(env[rank_var]), int(env[size_var])
    rank = 0 if args.rank is None else args.rank
    nranks = 1 if args.nranks is None else args.nranks
    return rank, nranks


def check_args(args):
    if args.ngpus != 1 or args.nthreads != 1:
        raise StandinError("the stand-in runs one rank per process: -g 1 -t 1 only", 2)
    if args.datatype not in TYPES:
        raise StandinError("data type %r not supported by the stand-in (%s)" % (args.datatype, ", ".join(TYPES)), 2)
    if args.op != "sum":
        raise StandinError("the stand-in reduces with -o sum only", 2)
    if not 0 < args.minbytes <= args.maxbytes <= MAX_BYTES_CAP:
        raise StandinError("need 0 < minbytes <= maxbytes <= %d" % MAX_BYTES_CAP, 2)
    if not (0 < args.iters <= MAX_ITERS and 0 <= args.warmup_iters <= MAX_ITERS and args.agg_iters == 1):
        raise StandinError("need 0 < -n <= %d, 0 <= -w <= %d, -m 1" % (MAX_ITERS, MAX_ITERS), 2)
    if args.stepfactor < 1 or args.stepbytes < 1:
        raise StandinError("need -f >= 1 and -i >= 1", 2)


def sizes(args, elem_size):
    result = []
    size = args.minbytes
    while size <= args.maxbytes:
        result.append(size - size % elem_size)
        size = size * args.stepfactor if args.stepfactor > 1 else size + args.stepbytes
    return [value for value in result if value > 0]


def time_str(usec):
    if usec >= 10000.0:
        return "%7.0f" % usec
    if usec >= 100.0:
        return "%7.1f" % usec
    return "%7.2f" % usec


def combine_times(values, mode):
    if mode == 0:
        return values[0]
    if mode == 2:
        return min(values)
    if mode == 3:
        return max(values)
    return sum(values) / len(values)


class Run:
    """One rank's whole run."""

    def __init__(self, args, env):
        self.args = args
        self.env = env
        self.rank, self.nranks = rank_and_size(args, env)
        self.timeout = float(env.get("GPUFLEET_STANDIN_TIMEOUT", "120"))
        self.deadline = time.monotonic() + float(env.get("GPUFLEET_STANDIN_MAX_SECONDS", "600"))
        self.host = (args.hostname or env.get("GPUFLEET_STANDIN_HOSTNAME") or socket.gethostname()).split(".")[0]
        self.control = None
        self.ring = None
        self.log = None
        self.local_rank = 0
        corrupt = args.corrupt_rank
        if corrupt is None and env.get("GPUFLEET_STANDIN_CORRUPT_RANK"):
            corrupt = int(env["GPUFLEET_STANDIN_CORRUPT_RANK"])
        self.corrupt_rank = corrupt

    def print0(self, text):
        if self.rank == 0:
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
        emit(" .. %s pid %d: Test failure common.cu:%d" % (self.host, os.getpid(), 891))
        raise StandinError("no socket interface found", TEST_NCCL_ERROR)

    def main(self):
        args = self.args
        check_args(args)
        address = args.bootstrap or self.env.get("GPUFLEET_STANDIN_BOOTSTRAP")
        if self.nranks > 1 and not address:
            raise StandinError("more than one rank needs GPUFLEET_STANDIN_BOOTSTRAP=HOST:PORT (or --bootstrap)", 2)
        if not 0 <= self.rank < self.nranks:
            raise StandinError("rank %d outside 0..%d" % (self.rank, self.nranks - 1), 2)
        elem_size = TYPES[args.datatype][1]
        step = "%d(factor)" % args.stepfactor if args.stepfactor > 1 else "%d(bytes)" % args.stepbytes
        self.print0("# Collective test starting: all_reduce_perf")
        self.print0(
            "# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d"
            % (args.nthreads, args.ngpus, args.minbytes, args.maxbytes, step, args.warmup_iters, args.iters, args.agg_iters,
               args.check, args.cudagraph)
        )
        self.print0("#")
        if self.nranks > 1:
            self.control = Control(self.rank, self.nranks, address, self.timeout)
        hosts = self.allgather({"host": self.host, "pid": os.getpid()})
        self.local_rank = sum(1 for item in hosts[: self.rank] if item["host"] == self.host)
        self.log = NcclLog(self.host, self.local_rank, self.env)
        self.print0("# Using devices")
        for rank, item in enumerate(hosts):
            local = sum(1 for other in hosts[:rank] if other["host"] == item["host"])
            fields = (rank, 0, item["pid"], item["host"], local, 0, DEVICE_NAME)
            self.print0("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s" % fields)
        try:
            self.init_comm()
            self.benchmark(elem_size)
        finally:
            if self.ring is not None:
                self.ring.close()
            if self.control is not None:
                self.control.close()
        return self.exit_status

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
        """ncclGetUniqueId on rank 0, then ncclCommInitRank on every rank."""
        log = self.log
        unique = None
        if self.rank == 0:
            found = self.interfaces(1)
            if not found:
                self.nccl_failure("bootstrap.cc:45", "Bootstrap : no socket interface found", 934, ("init.cc:82", "init.cc:101"))
            log.info("Bootstrap : Using %s:%s<0>" % found[0])
            unique = {"commId": "0x%016x" % (hash((self.host, os.getpid(), time.time())) & 0xFFFFFFFFFFFFFFFF)}
        unique = self.bcast(unique)
        if self.rank != 0:
            found = self.interfaces(1)
            if not found:
                self.nccl_failure("bootstrap.cc:45", "Bootstrap : no socket interface found", 1005, ("init.cc:1617",))
            log.info("Bootstrap : Using %s:%s<0>" % found[0])
        log.info("NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory")
        log.info("NET/Plugin : No plugin found, using internal implementation")
        if self.rank == 0:
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
        log.info("comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId 0 commId %s - Init START"
                 % (comm, self.rank, self.nranks, self.local_rank, self.local_rank, unique["commId"]))
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind((socket_ifs[0][1], 0))
            listener.listen(4)
            me = {"data_addr": socket_ifs[0][1], "data_port": listener.getsockname()[1]}
            table = self.allgather(me)
            if self.rank == 0:
                log.info("Channel 00/01 : " + "".join("%4d" % rank for rank in range(self.nranks)))
            log.info("Trees [0] -1/-1/-1->%d->-1" % self.rank)
            if self.nranks > 1:
                prev, nxt = (self.rank - 1) % self.nranks, (self.rank + 1) % self.nranks
                log.info("Channel 00/0 : %d[0] -> %d[0] [receive] via NET/Socket/0" % (prev, self.rank))
                log.info("Channel 00/0 : %d[0] -> %d[0] [send] via NET/Socket/0" % (self.rank, nxt))
                self.ring = Ring(self.rank, self.nranks, listener, table, self.timeout)
                self.ring.corrupt = False
            log.info("Connected all rings")
            log.info("comm %s rank %d nranks %d cudaDev %d nvmlDev %d busId 0 commId %s - Init COMPLETE"
                     % (comm, self.rank, self.nranks, self.local_rank, self.local_rank, unique["commId"]))
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
        root = self.args.sysfs_root or self.env.get("GPUFLEET_STANDIN_SYSFS_ROOT") or "/sys"
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
        if after and self.rows_done >= int(after) and self.rank == int(self.env.get("GPUFLEET_STANDIN_HANG_RANK", "1")):
            while True:
                time.sleep(3600)

    rows_done = 0

    def check_time(self):
        if time.monotonic() > self.deadline:
            raise StandinError("rank %d: GPUFLEET_STANDIN_MAX_SECONDS exceeded" % self.rank)

    def run_once(self, dtype, src, dst, count):
        if self.ring is not None:
            self.ring.allreduce(dtype, src, dst, count)
        elif dst is not src:
            dst[:] = src

    def time_test(self, dtype, count, in_place):
        """(time in us averaged over ranks, #wrong summed over ranks or None)."""
        args = self.args
        data = make_input(dtype, count, self.nranks, self.rank, 0)
        work = data if in_place else bytearray(len(data))
        for _warm in range(args.warmup_iters):
            self.run_once(dtype, data, work, count)
            self.check_time()
        self.barrier()
        start = time.perf_counter()
        for _iter in range(args.iters):
            self.run_once(dtype, data, work, count)
        elapsed = (time.perf_counter() - start) / args.iters
        self.check_time()
        seconds = combine_times(self.allgather(elapsed), args.average)
        wrong = None
        if args.check:
            rep = 1 + (1 if in_place else 0)
            fresh = make_input(dtype, count, self.nranks, self.rank, rep)
            work = fresh if in_place else bytearray(len(fresh))
            if self.ring is not None:
                self.ring.corrupt = self.corrupt_rank == self.rank
            self.run_once(dtype, fresh, work, count)
            if self.ring is not None:
                self.ring.corrupt = False
            mine = count_wrong(dtype, work, make_expected(dtype, count, self.nranks, rep))
            wrong = sum(self.allgather(mine))
        return seconds * 1.0e6, wrong

    def benchmark(self, elem_size):
        args = self.args
        dtype = args.datatype
        self.print0("#")
        self.print0("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""))
        self.print0("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s"
                    % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"))
        self.print0("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s"
                    % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
        factor = 2.0 * (self.nranks - 1) / self.nranks
        busbws = []
        errors = 0
        for nbytes in sizes(args, elem_size):
            count = nbytes // elem_size
            line = "%12d  %12d  %8s  %6s  %6d" % (count * elem_size, count, dtype, args.op, -1)
            for in_place in (False, True):
                usec, wrong = self.time_test(dtype, count, in_place)
                algbw = (count * elem_size) / 1.0e9 / (usec / 1.0e6) if usec > 0 else 0.0
                busbw = algbw * factor
                busbws.append(busbw)
                if wrong is None:
                    line += "  %7s  %6.2f  %6.2f  %5s" % (time_str(usec), algbw, busbw, "N/A")
                else:
                    errors += wrong
                    line += "  %7s  %6.2f  %6.2f  %5g" % (time_str(usec), algbw, busbw, float(wrong))
            self.print0(line)
            self.maybe_hang()
        avg = sum(busbws) / len(busbws) if busbws else 0.0
        self.print0("# Out of bounds values : %d %s" % (errors, "FAILED" if errors else "OK"))
        self.print0("# Avg bus bandwidth    : %g" % avg)
        self.print0("#")
        self.print0("# Collective test concluded: all_reduce_perf")
        self.print0("#")
        self.barrier()
        self.exit_status = 1 if errors else 0

    exit_status = 0


def main(argv=None, env=None):
    env = dict(os.environ) if env is None else env
    args = build_parser().parse_args(argv)
    run = Run(args, env)
    try:
        return run.main()
    except StandinError as exc:
        if exc.status != TEST_NCCL_ERROR:
            sys.stderr.write("all_reduce_perf_standin (test double): %s\n" % exc)
        return exc.status
    except (OSError, ValueError) as exc:
        if isinstance(exc, ConnectionError) and run.rank != 0:
            # Rank 0 went away (in nccl-tests the others would sit in MPI_Bcast until mpirun
            # kills them): give the launcher a moment to report rank 0's own status first.
            time.sleep(2)
        sys.stderr.write("all_reduce_perf_standin (test double): rank %d: %s\n" % (run.rank, exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
