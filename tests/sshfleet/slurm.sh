#!/usr/bin/env bash
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Test double's cluster manager: a real Slurm on an SSH fleet (fleet.sh up --slurm calls it; root only).
#
#   slurm.sh up --state DIR [--health-check PROGRAM] [--prolog PROGRAM]   (the fleet in DIR is up with --own-files)
#   slurm.sh down --state DIR
#
# `up` starts, all with Debian's packages (slurmctld slurmd slurm-client munge libpmix-dev):
# - one munged for the fleet, on its own socket DIR/slurm/munge.socket with its own key (AuthInfo names it), so
#   fleets never share credentials or the machine's /run/munge;
# - slurmctld in the root network namespace, in its own UTS namespace named gf<X>ctl (slurmctld refuses to run
#   where the hostname is not its SlurmctldHost), listening on the fleet bridge's address 198.18.X.254, port
#   17000+X (slurmctld binds every address of the port: one port per fleet);
# - one slurmd per host inside that host's network, UTS and mount namespaces (nsenter on its sshd), NodeName its
#   hostname gf<X>h<I>, NodeAddr its address: no name is ever looked up.
# The configuration is DIR/slurm/slurm.conf and cgroup.conf, copied to /etc/slurm/ of each host's own files (what
# srun and sinfo on a node read: fleet.sh --slurm also sets SLURM_CONF=/etc/slurm/slurm.conf in the hosts' sshd
# sessions, so no Slurm command looks a configuration up over DNS). Keys a one-machine cluster needs:
# TmpFS per node (PMIx's spmix_appdir_*), cgroup/v1 with proctrack/linuxproc and task/none (no /sys/fs/cgroup in
# a network namespace), MpiDefault=pmix (Debian's Open MPI has PMIx, no PMI-1/2). It writes DIR/slurm/slurm.env
# (SLURM_CONF=... for the controller's scontrol/sinfo) and returns when every node is idle in `sinfo`.
# --health-check PROGRAM: slurmd runs PROGRAM (a path on the hosts) every 5 s on every node, as root, with only
# SLURMD_NODENAME and PWD set (HealthCheckProgram, HealthCheckInterval=5, HealthCheckNodeState=ANY).
# --prolog PROGRAM: slurmd runs PROGRAM (a path on the hosts) as root before each job on the node (Prolog); a
# non-zero exit refuses the job there.
# `down` ends the daemons (their pid files name DIR, fleet.sh down ends the slurmd with the namespaces) and removes
# DIR/slurm; it is idempotent.
set -euo pipefail

PORT_BASE=17000
# How long `up` waits for every node to register idle (slurmd registers within a second here)
UP_WAIT_S=30

die() {
    echo "slurm.sh: $*" >&2
    exit 1
}

log() {
    echo "slurm.sh: $*" >&2
}

load_fleet() {
    [[ -f "$STATE/fleet.env" ]] || die "$STATE holds no fleet that is up (fleet.sh up --own-files first)"
    STATE="$(cd "$STATE" && pwd)"
    FLEET_ID="$(sed -n 's/^FLEET_ID=\([0-9]*\)$/\1/p' "$STATE/fleet.env")"
    HOSTS="$(sed -n 's/^HOSTS=\([0-9]*\)$/\1/p' "$STATE/fleet.env")"
    NET="$(sed -n 's/^NET=\([0-9.]*\)$/\1/p' "$STATE/fleet.env")"
    SLURM="$STATE/slurm"
}

write_conf() {
    local i
    mkdir -p "$SLURM/ctld" "$SLURM/spool" "$SLURM/tmp" "$SLURM/log"
    for i in $(seq 1 "$HOSTS"); do
        mkdir -p "$SLURM/spool/gf${FLEET_ID}h$i" "$SLURM/tmp/gf${FLEET_ID}h$i"
    done
    cat > "$SLURM/slurm.conf" <<EOF
# gpufleet test fleet $FLEET_ID (written by tests/sshfleet/slurm.sh)
ClusterName=gf$FLEET_ID
SlurmctldHost=gf${FLEET_ID}ctl($NET.254)
SlurmctldPort=$((PORT_BASE + FLEET_ID))
SlurmdPort=6818
AuthType=auth/munge
AuthInfo=socket=$SLURM/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SLURM/ctld
SlurmdSpoolDir=$SLURM/spool/%n
SlurmctldPidFile=$SLURM/slurmctld.pid
SlurmdPidFile=$SLURM/spool/%n/slurmd.pid
SlurmctldLogFile=$SLURM/log/slurmctld.log
SlurmdLogFile=$SLURM/log/slurmd.%n.log
TmpFS=$SLURM/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=pmix
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=5
NodeName=DEFAULT CPUs=2 State=UNKNOWN
EOF
    for i in $(seq 1 "$HOSTS"); do
        echo "NodeName=gf${FLEET_ID}h$i NodeAddr=$NET.$i" >> "$SLURM/slurm.conf"
    done
    echo "PartitionName=gpufleet Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$SLURM/slurm.conf"
    if [[ -n "$HEALTH_CHECK" ]]; then
        printf 'HealthCheckProgram=%s\nHealthCheckInterval=5\nHealthCheckNodeState=ANY\n' "$HEALTH_CHECK" \
            >> "$SLURM/slurm.conf"
    fi
    if [[ -n "$PROLOG" ]]; then
        echo "Prolog=$PROLOG" >> "$SLURM/slurm.conf"
    fi
    echo "CgroupPlugin=cgroup/v1" > "$SLURM/cgroup.conf"
    echo "SLURM_CONF=$SLURM/slurm.conf" > "$SLURM/slurm.env"
}

start_munged() {
    # the key: 1 KiB from the kernel's generator (munged's own create-munge-key does the same)
    head -c 1024 /dev/urandom > "$SLURM/munge.key"
    chmod 0400 "$SLURM/munge.key"
    mkdir -p "$STATE/pids"
    setsid munged --foreground --force --socket="$SLURM/munge.socket" --key-file="$SLURM/munge.key" \
        --pid-file="$SLURM/munged.pid" --log-file="$SLURM/log/munged.log" --seed-file="$SLURM/munge.seed" \
        > /dev/null 2>&1 < /dev/null &
    echo $! > "$STATE/pids/munged.pid"
    for _ in $(seq 1 50); do
        [[ -S "$SLURM/munge.socket" ]] && return 0
        sleep 0.1
    done
    die "munged did not come up (log: $SLURM/log/munged.log)"
}

start_slurmctld() {
    # shellcheck disable=SC2016  # the inner sh's arguments, expanded there
    setsid unshare --uts -- sh -c 'hostname "$1" && exec slurmctld -D -f "$2"' sh \
        "gf${FLEET_ID}ctl" "$SLURM/slurm.conf" \
        > "$SLURM/log/slurmctld.out" 2>&1 < /dev/null &
    echo $! > "$STATE/pids/slurmctld.pid"
}

# slurmd of host I inside its namespaces (those of its sshd), its configuration in the host's own /etc/slurm
start_slurmd() {
    local i="$1" pid
    pid="$(tr -dc '0-9' < "$STATE/h$i/sshd.pid")"
    [[ -n "$pid" ]] || die "host $i has no sshd pid"
    # shellcheck disable=SC2016  # the inner sh's arguments, expanded there
    nsenter -t "$pid" -n -u -m -- sh -c 'mkdir -p /etc/slurm && cp "$1" "$2" /etc/slurm/' sh \
        "$SLURM/slurm.conf" "$SLURM/cgroup.conf"
    # shellcheck disable=SC2016  # the inner sh's arguments, expanded there
    SLURM_CONF=/etc/slurm/slurm.conf setsid nsenter -t "$pid" -n -u -m -- sh -c 'exec slurmd -D -f "$1" -d "$2"' sh \
        /etc/slurm/slurm.conf "$(command -v slurmstepd)" > "$SLURM/log/slurmd.h$i.out" 2>&1 < /dev/null &
}

wait_idle() {
    local idle
    for _ in $(seq 1 $((UP_WAIT_S * 10))); do
        idle="$(SLURM_CONF="$SLURM/slurm.conf" sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l)"
        [[ "$idle" -eq "$HOSTS" ]] && return 0
        sleep 0.1
    done
    SLURM_CONF="$SLURM/slurm.conf" sinfo -N >&2 || true
    die "not every node is idle after ${UP_WAIT_S} s (logs: $SLURM/log/)"
}

do_up() {
    [[ "$(id -u)" -eq 0 ]] || die "needs root (the daemons run in the fleet's namespaces)"
    local tool
    for tool in slurmctld slurmd slurmstepd srun sinfo scontrol munged nsenter; do
        command -v "$tool" >/dev/null ||
            die "$tool is missing (make system-packages installs slurmctld slurmd slurm-client munge)"
    done
    load_fleet
    [[ -d "$STATE/h1/fs" ]] || die "the fleet in $STATE has no own files per host: bring it up with --own-files"
    [[ ! -e "$SLURM" ]] || die "$SLURM exists: run 'slurm.sh down --state $STATE' first"
    write_conf
    start_munged
    start_slurmctld
    local i
    for i in $(seq 1 "$HOSTS"); do
        start_slurmd "$i"
    done
    wait_idle
    log "slurm of fleet $FLEET_ID up: $HOSTS nodes idle, SLURM_CONF=$SLURM/slurm.conf"
}

do_down() {
    [[ -d "$STATE" ]] || return 0
    STATE="$(cd "$STATE" && pwd)"
    SLURM="$STATE/slurm"
    local file pid
    for file in "$STATE/pids/slurmctld.pid" "$STATE/pids/munged.pid"; do
        [[ -f "$file" ]] || continue
        pid="$(tr -dc '0-9' < "$file")"
        # only if it still is ours: its command line names the state dir
        if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$STATE"; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$file"
    done
    # the slurmd of each host (and a job's slurmstepd), inside the fleet's namespaces
    local fleet_id ns
    fleet_id="$(sed -n 's/^FLEET_ID=\([0-9]*\)$/\1/p' "$STATE/fleet.env" 2>/dev/null || true)"
    if [[ -n "$fleet_id" ]]; then
        for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^gf${fleet_id}h[0-9]+$" || true); do
            for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
                case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
                    slurmd|slurmstepd) kill -KILL "$pid" 2>/dev/null || true ;;
                esac
            done
        done
    fi
    rm -rf "$SLURM"
}

[[ $# -ge 1 ]] || die "usage: slurm.sh up|down --state DIR"
ACTION="$1"
shift
STATE="" HEALTH_CHECK="" PROLOG=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --state) STATE="${2:?--state needs a value}"; shift 2 ;;
        --health-check) HEALTH_CHECK="${2:?--health-check needs a value}"; shift 2 ;;
        --prolog) PROLOG="${2:?--prolog needs a value}"; shift 2 ;;
        *) die "unknown argument $1" ;;
    esac
done
[[ -n "$STATE" ]] || die "--state DIR is required"
case "$ACTION" in
    up) do_up ;;
    down) do_down ;;
    *) die "usage: slurm.sh up|down --state DIR" ;;
esac
