#!/usr/bin/env bash
# The system programs the test suite needs, and the Debian packages that bring them: the one list
# (`make test` runs this first, as `make system-packages`; tests/tools/system_programs.py reads the
# table below to name the package in a test's failure).
#
# All present: exit 0, silent. Some missing, run as root with apt-get: installs their packages, then
# checks again (exit 1 if still missing). Otherwise (not root, no apt-get, or the dry run below):
# exit 2, naming the missing programs and the one command that installs them.
#
# GPUFLEET_SYSTEM_PACKAGES_DRY_RUN=1: never installs, answers as if it could not (the tests use it).
# PYTHON: the interpreter `make venv` uses (default python3).
set -euo pipefail

# program:package. make and git drive the suite; python3-venv backs `python3 -m venv` on Debian's
# python (without it ensurepip is missing); ca-certificates is a file, not a program (HTTPS for git
# and the package downloads). The SSH test fleet needs ip/tc/ss (iproute2), sshd, ssh and ssh-keygen,
# unshare, iperf3 and OpenMPI's mpirun. The shellcheck package lets ansible-test sanity lint the
# fleet's shell scripts; chromium renders the report in the browser test; gcc (with libc6-dev's
# headers) builds the fake libnvidia-ml.so of the NVML sampler tests; prometheus brings promtool,
# which checks the health check's textfile metrics; sqlite3 is the shell for looking into the history
# store's SQLite database (no test calls it).
SYSTEM_PROGRAMS=(
    make:make
    git:git
    ca-certificates:ca-certificates
    venv:python3-venv
    ip:iproute2
    tc:iproute2
    ss:iproute2
    sshd:openssh-server
    ssh:openssh-client
    ssh-keygen:openssh-client
    unshare:util-linux
    iperf3:iperf3
    mpirun:openmpi-bin
    shellcheck:shellcheck
    chromium:chromium
    gcc:gcc
    libc6-dev:libc6-dev
    promtool:prometheus
    sqlite3:sqlite3
    slurmctld:slurmctld
    slurmd:slurmd
    srun:slurm-client
    munged:munge
    libpmix:libpmix-dev
)

me=tests/tools/system_packages.sh

present() {
    case "$1" in
        sshd) [ -x /usr/sbin/sshd ] ;;
        venv) "${PYTHON:-python3}" -c 'import ensurepip, venv' >/dev/null 2>&1 ;;
        ca-certificates) [ -e /etc/ssl/certs/ca-certificates.crt ] ;;
        libc6-dev) [ -e /usr/include/stdio.h ] ;;
        # Slurm's mpi/pmix plugin loads the unversioned library (without it --mpi=pmix steps fail)
        libpmix) compgen -G "/usr/lib/*/libpmix.so" >/dev/null ;;
        *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

# Sets missing_programs (program (package) ...) and missing_packages (each package once, in table order).
find_missing() {
    missing_programs=()
    missing_packages=()
    local entry program package known
    for entry in "${SYSTEM_PROGRAMS[@]}"; do
        program=${entry%%:*}
        package=${entry#*:}
        present "$program" && continue
        missing_programs+=("$program ($package)")
        for known in "${missing_packages[@]}"; do
            [ "$known" = "$package" ] && continue 2
        done
        missing_packages+=("$package")
    done
}

find_missing
[ "${#missing_programs[@]}" -eq 0 ] && exit 0

joined_programs=$(printf '%s, ' "${missing_programs[@]}")
echo "$me: missing: ${joined_programs%, }" >&2

if [ "${GPUFLEET_SYSTEM_PACKAGES_DRY_RUN:-}" = 1 ]; then
    why="dry run (GPUFLEET_SYSTEM_PACKAGES_DRY_RUN=1), nothing installed"
elif [ "$EUID" -ne 0 ]; then
    why="not root"
elif ! command -v apt-get >/dev/null 2>&1; then
    why="no apt-get here"
else
    why=
fi
if [ -n "$why" ]; then
    echo "$me: $why; install them with:" >&2
    echo "sudo apt-get install -y --no-install-recommends ${missing_packages[*]}" >&2
    exit 2
fi

echo "$me: installing ${missing_packages[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Only the packages' files are wanted, not their services (prometheus would start a server on :9090):
# policy-rc.d answers "not allowed" to every service start for the length of the install.
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
    trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null
if [ -n "$own_policy" ]; then rm -f "$policy"; trap - EXIT; fi

find_missing
if [ "${#missing_programs[@]}" -ne 0 ]; then
    joined_programs=$(printf '%s, ' "${missing_programs[@]}")
    echo "$me: still missing after the install: ${joined_programs%, }" >&2
    exit 1
fi
