# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side helper of the role gpufleet.acceptance.burn_in: ``probe``, ``loop`` and ``torch`` (one file, one copy).

``probe``  which GPU load tools the node can run; one JSON object on stdout, exit 0 whatever it finds::

    {"dcgmi": {"path", "usable", "reason"}, "gpu_burn": {"path", "usable", "reason"},
     "torch": {"python", "usable", "reason"}, "build": {"make", "nvcc", "usable", "reason"},
     "ib_write_bw": {"path"}}

  dcgmi counts when ``dcgmi discovery -l`` answers (it needs nv-hostengine); torch when
  ``<python> -c "import torch; torch.cuda.is_available()"`` says yes.

``loop``  the interconnect load: several commands, each over and over, all at the same time, until a
  deadline. The spec (``--spec FILE`` or ``--spec-json TEXT``) is a JSON list of ``{"name", "argv", "env"}``; each command runs
  in its own session and process group and, at the deadline (or on SIGTERM/SIGINT), its whole group
  gets SIGTERM, then SIGKILL after ``--grace`` seconds. A command that ends before the deadline is
  started again (after ``--retry-delay`` s when it failed: an ``ib_write_bw`` client started before
  its server listens). Output goes to ``<out-dir>/<name>.log`` with a header line per run; at the end
  one JSON object goes to stdout::

    {"seconds", "stopped", "loads": [{"name", "argv", "runs", "ok", "failed", "cut", "missing", "last_failure", "log"}]}

  ``runs`` counts starts, ``ok`` runs that exited 0, ``failed`` runs that exited otherwise before the
  deadline, ``cut`` the run ended by the deadline, ``missing`` the program is not there (that loop
  stops at once).

``torch``  a matrix-multiply load on every visible GPU through PyTorch for ``--seconds`` (the fallback
  when neither DCGM nor gpu-burn is there). Like gpu-burn it checks its own results: each GPU
  multiplies the same two random matrices again and again and compares every product with the first
  (``torch.allclose``, and finite); a GPU whose product changes is FAULTY. One line per GPU at the
  end (``GPU 0: OK iterations=1234 tflops=48.2`` or ``GPU 1: FAULTY ... mismatches=3``); exit 0 every
  GPU OK, 1 a GPU FAULTY, 2 no CUDA device or no PyTorch.

Every command is an argv list (never a shell). Python 3.8+; ``probe`` and ``loop`` use the standard
library only (they run on a bare rented node), ``torch`` imports torch from the Python it runs under.
"""

from __future__ import absolute_import, division, print_function

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time


def _load_process_group():
    """module_utils/process_group.py (standard library only), which ends a process group: the role copies it beside
    this file on the node; in the collection's own tree it is in plugins/module_utils."""
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (here, os.path.join(here, "..", "..", "..", "..", "plugins", "module_utils")):
        path = os.path.join(folder, "process_group.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("gpufleet_process_group", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise ImportError("process_group.py is neither beside %s nor in the collection's plugins/module_utils" % __file__)


PROCESS_GROUP = _load_process_group()
STOP = threading.Event()
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


def _stop(signum, frame):  # pylint: disable=unused-argument
    STOP.set()


def _which(name, path=None):
    """Absolute path of ``name`` (a path, or a name looked up on PATH), or None."""
    if not name:
        return None
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name, path=path)


def _last_line(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


# --- probe ------------------------------------------------------------------------------------


def _run(argv, timeout):
    """(rc, text) of ``argv``; rc None when it could not start or ran past ``timeout``."""
    env = dict(os.environ, LC_ALL="C")
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, "no answer within %ss" % timeout
    except OSError as exc:
        return None, "could not start: %s" % (exc.strerror or exc)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def probe_dcgmi(name, timeout):
    path = _which(name)
    if path is None:
        return {"path": None, "usable": False, "reason": "%s not found" % name}
    rc, text = _run([path, "discovery", "-l"], timeout)
    if rc != 0:
        said = "exited %s" % rc if rc is not None else "failed"
        return {"path": path, "usable": False, "reason": "%s discovery -l %s (is nv-hostengine running?): %s" % (path, said, _last_line(text))}
    return {"path": path, "usable": True, "reason": ""}


def probe_gpu_burn(path):
    found = _which(path)
    if found is None:
        return {"path": None, "usable": False, "reason": "%s not built" % path}
    return {"path": found, "usable": True, "reason": ""}


def probe_torch(python, timeout):
    found = _which(python)
    if found is None:
        return {"python": None, "usable": False, "reason": "%s not found" % python}
    rc, text = _run([found, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"], timeout)
    if rc == 0:
        return {"python": found, "usable": True, "reason": ""}
    if rc == 3:
        return {"python": found, "usable": False, "reason": "torch.cuda.is_available() is False under %s" % found}
    return {"python": found, "usable": False, "reason": "import torch under %s: %s" % (found, _last_line(text) or "exit status %s" % rc)}


def probe_build(make, nvcc):
    make_path, nvcc_path = _which(make), _which(nvcc)
    missing = [name for name, path in ((make, make_path), (nvcc, nvcc_path)) if path is None]
    return {"make": make_path, "nvcc": nvcc_path, "usable": not missing, "reason": "" if not missing else "not found: %s" % ", ".join(missing)}


def cmd_probe(args):
    result = {
        "dcgmi": probe_dcgmi(args.dcgmi, args.timeout),
        "gpu_burn": probe_gpu_burn(args.gpu_burn),
        "torch": probe_torch(args.torch_python, args.timeout),
        "build": probe_build(args.make, args.nvcc),
        "ib_write_bw": {"path": _which(args.ib_write_bw)},
    }
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return 0


# --- loop -------------------------------------------------------------------------------------


def end_group(proc, grace):
    """SIGTERM to the process group ``proc`` leads, SIGKILL after ``grace`` s; reaps ``proc``."""
    PROCESS_GROUP.end_group(proc, proc.pid, grace)


def _log_tail(path, start):
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            return _last_line(handle.read(1 << 20).decode("utf-8", "replace"))
    except OSError:
        return ""


def run_loop(load, deadline, out_dir, grace, retry_delay, summary):
    """Start ``load`` again and again until ``deadline`` (monotonic) or STOP; fill ``summary``."""
    log = os.path.join(out_dir, load["name"] + ".log")
    summary.update({"name": load["name"], "argv": load["argv"], "runs": 0, "ok": 0, "failed": 0, "cut": 0,
                    "missing": False, "last_failure": "", "log": log})
    env = dict(os.environ)
    env.update({str(key): str(value) for key, value in (load.get("env") or {}).items()})
    with open(log, "wb"):
        pass  # this run's log only (the work directory outlives a run)
    program = load["argv"][0]
    resolved = _which(program, path=env.get("PATH"))
    if resolved is None:
        summary["missing"] = True
        summary["last_failure"] = "%s: not found (or not executable) on the node" % program
        return
    while not STOP.is_set() and time.monotonic() < deadline:
        with open(log, "ab") as handle:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            handle.write(("# gpufleet run %d of %s at %s\n" % (summary["runs"] + 1, load["name"], stamp)).encode("utf-8"))
            handle.flush()
            start = handle.tell()
            try:
                proc = subprocess.Popen([resolved] + list(load["argv"][1:]), stdin=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                                        stdout=handle, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            except OSError as exc:
                summary["missing"] = True
                summary["last_failure"] = "%s: could not start: %s" % (program, exc.strerror or exc)
                return
            summary["runs"] += 1
            while proc.poll() is None and not STOP.is_set() and time.monotonic() < deadline:
                time.sleep(0.1)
            if proc.poll() is None:
                end_group(proc, grace)
                summary["cut"] += 1
                return
            end_group(proc, grace)  # the leader exited: whatever it left in its group goes too
        if proc.returncode == 0:
            summary["ok"] += 1
            continue
        summary["failed"] += 1
        summary["last_failure"] = "exit status %s: %s" % (proc.returncode, _log_tail(log, start))
        STOP.wait(min(retry_delay, max(deadline - time.monotonic(), 0)))


def read_spec(path=None, text=None):
    """The loads of ``--spec FILE`` or ``--spec-json TEXT``, checked."""
    if text is None:
        with open(path, "r", encoding="utf-8") as handle:
            text = handle.read()
    spec = json.loads(text)
    if not isinstance(spec, list):
        raise ValueError("the spec must be a JSON list")
    names = set()
    for item in spec:
        if not isinstance(item, dict) or not isinstance(item.get("argv"), list) or not item["argv"]:
            raise ValueError("every entry needs a non-empty argv list: %r" % (item,))
        if not _NAME.match(str(item.get("name") or "")) or item["name"] in names:
            raise ValueError("every entry needs a unique name of letters, digits and ._-: %r" % (item.get("name"),))
        names.add(item["name"])
        item["argv"] = [str(part) for part in item["argv"]]
    return spec


def cmd_loop(args):
    try:
        spec = read_spec(args.spec, args.spec_json)
    except (OSError, ValueError) as exc:
        print("loop: %s: %s" % (args.spec or "--spec-json", exc), file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    deadline = time.monotonic() + args.seconds
    summaries = [{} for _load in spec]
    threads = [threading.Thread(target=run_loop, args=(load, deadline, args.out_dir, args.grace, args.retry_delay, summary))
               for load, summary in zip(spec, summaries)]
    for thread in threads:
        thread.daemon = True
        thread.start()
    while any(thread.is_alive() for thread in threads):
        for thread in threads:
            thread.join(0.2)
    sys.stdout.write(json.dumps({"seconds": args.seconds, "stopped": STOP.is_set(), "loads": summaries}, sort_keys=True) + "\n")
    return 0


# --- torch ------------------------------------------------------------------------------------


def cmd_torch(args):  # pylint: disable=too-many-locals
    try:
        import torch  # pylint: disable=import-outside-toplevel,import-error
    except ImportError as exc:
        print("cannot import torch: %s" % exc, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch.cuda.is_available() is False: no CUDA device", file=sys.stderr)
        return 2
    devices = [int(item) for item in args.devices.split(",") if item.strip()] or list(range(torch.cuda.device_count()))
    dtype = getattr(torch, args.dtype)
    torch.backends.cuda.matmul.allow_tf32 = False  # compare identical float32 products
    state = []
    for index in devices:
        device = torch.device("cuda", index)
        generator = torch.Generator(device=device)
        generator.manual_seed(1234 + index)
        left = torch.rand((args.size, args.size), device=device, dtype=dtype, generator=generator)
        right = torch.rand((args.size, args.size), device=device, dtype=dtype, generator=generator)
        state.append({"index": index, "device": device, "a": left, "b": right, "ref": torch.matmul(left, right), "iterations": 0, "mismatches": 0})
        print("GPU %d: %s, %dx%d %s" % (index, torch.cuda.get_device_name(device), args.size, args.size, args.dtype), flush=True)
    for item in state:
        torch.cuda.synchronize(item["device"])
    tolerance = 1e-3 if args.dtype == "float32" else 1e-2
    started = time.monotonic()
    deadline = started + args.seconds
    next_report = started + 10.0
    while time.monotonic() < deadline and not STOP.is_set():
        products = []
        for item in state:
            with torch.cuda.device(item["device"]):
                product = None
                for _repeat in range(args.batch):
                    product = torch.matmul(item["a"], item["b"])  # queued: all GPUs work at once
                products.append(product)
        for item, product in zip(state, products):
            item["iterations"] += args.batch
            same = bool(torch.isfinite(product).all()) and bool(torch.allclose(product, item["ref"], rtol=tolerance, atol=tolerance))
            if not same:
                item["mismatches"] += 1
        now = time.monotonic()
        if now >= next_report:
            next_report = now + 10.0
            print("%.0fs: %s" % (now - started, " ".join("GPU %d %d" % (item["index"], item["iterations"]) for item in state)), flush=True)
    elapsed = max(time.monotonic() - started, 1e-9)
    faulty = False
    for item in state:
        tflops = item["iterations"] * 2.0 * args.size ** 3 / elapsed / 1e12
        if item["mismatches"]:
            faulty = True
            print("GPU %d: FAULTY iterations=%d tflops=%.1f mismatches=%d" % (item["index"], item["iterations"], tflops, item["mismatches"]))
        else:
            print("GPU %d: OK iterations=%d tflops=%.1f" % (item["index"], item["iterations"], tflops))
    if STOP.is_set():
        print("stopped by a signal after %.1fs" % elapsed)
    return 1 if faulty else 0


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    probe = commands.add_parser("probe", help="which GPU load tools the node can run")
    probe.add_argument("--dcgmi", default="dcgmi")
    probe.add_argument("--gpu-burn", default="gpu_burn")
    probe.add_argument("--torch-python", default="python3")
    probe.add_argument("--make", default="make")
    probe.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    probe.add_argument("--ib-write-bw", default="ib_write_bw")
    probe.add_argument("--timeout", type=float, default=120.0)
    loop = commands.add_parser("loop", help="run commands over and over until a deadline")
    given = loop.add_mutually_exclusive_group(required=True)
    given.add_argument("--spec", help="JSON file: [{name, argv, env}]")
    given.add_argument("--spec-json", help="the same JSON as text")
    loop.add_argument("--seconds", type=float, required=True)
    loop.add_argument("--out-dir", required=True)
    loop.add_argument("--grace", type=float, default=10.0)
    loop.add_argument("--retry-delay", type=float, default=2.0)
    burn = commands.add_parser("torch", help="matrix-multiply load through PyTorch")
    burn.add_argument("--seconds", type=float, required=True)
    burn.add_argument("--size", type=int, default=8192, help="matrix dimension (square)")
    burn.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default="float32")
    burn.add_argument("--devices", default="", help="comma-separated CUDA device indices (default: all)")
    burn.add_argument("--batch", type=int, default=8, help="products queued per GPU between checks")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("name a command: probe, loop or torch")
    if args.command == "torch" and (args.seconds <= 0 or args.size < 16 or args.batch < 1):
        parser.error("torch: --seconds must be > 0, --size >= 16, --batch >= 1")
    if args.command == "loop" and args.seconds <= 0:
        parser.error("loop: --seconds must be > 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.command in ("loop", "torch"):
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    return {"probe": cmd_probe, "loop": cmd_loop, "torch": cmd_torch}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
