#!/usr/bin/env bash
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Test double: a multi-host SSH fleet on this machine (root only).
#
#   fleet.sh up --hosts N --state DIR [--node-files F1,F2,...] [--own-files]
#                [--slurm [--slurm-health PROGRAM] [--slurm-prolog PROGRAM]]
#   fleet.sh down --state DIR
#   fleet.sh throttle --state DIR --host I --rate 1gbit [--delay 5ms]
#   fleet.sh throttle --state DIR --host I --peer J --rate 200mbit   (only the link I-J, both ways)
#   fleet.sh unthrottle --state DIR --host I
#
# `up` creates one network namespace per host (gf<X>h<I>), a veth from each to the bridge
# gf<X>br in the root namespace (198.18.<X>.254/24; host I is 198.18.<X>.<I>/24, RFC 2544
# benchmarking range), and in each namespace (and its own UTS namespace, hostname gf<X>h<I>)
# an sshd with its own host key, config and pid file: key auth only, root login with the
# fleet key, listening on the host's address only. Each host gets its own replay node
# (tests/replay/build_fleet.py wrappers). X is the first free fleet number, so fleets coexist.
# It writes DIR/inventory.yml (tool paths pointing at that host's wrappers) and DIR/hostfile.
# --own-files: each host also gets its own mount namespace in which OWN_DIRS (below) are overlays of
# this machine's directories with a writable layer of the host's own (DIR/h<I>/fs), so what a role
# writes with its default paths (/opt/gpufleet, /etc/nccl.conf, /var/lib/gpufleet, ~/.ssh) stays on that
# host, as on separate machines, and never touches this machine's files; the host's sshd also reads
# ~/.ssh/authorized_keys (sshd's default) besides the fleet key, and its host key is in /etc/ssh too.
# --slurm (implies --own-files): a real Slurm cluster on the fleet (slurm.sh: munged, slurmctld, one slurmd per host),
# and SLURM_CONF=/etc/slurm/slurm.conf in every SSH session of a host (no Slurm command looks a configuration up
# over DNS); the controller's is in DIR/slurm/slurm.env. --slurm-health PROGRAM: slurmd's HealthCheckProgram,
# --slurm-prolog PROGRAM: its Prolog (slurm.sh).
# `down` removes everything `up` made, by name and by pid, also after a failed `up`; it is
# idempotent. Traffic only ever goes to these namespaces.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
SSHD="${GPUFLEET_SSHD:-/usr/sbin/sshd}"
MAX_HOSTS=64
# --own-files: the directories each host sees through its own overlay (what provisioning writes to)
# (/usr/lib: where a distribution's mpicc says Open MPI's headers are, e.g. /usr/lib/x86_64-linux-gnu/openmpi/include)
OWN_DIRS=(/etc /opt /root /usr/local /usr/include /usr/lib /var/lib)

die() {
    echo "fleet.sh: $*" >&2
    exit 1
}

log() {
    echo "fleet.sh: $*" >&2
}

controller_python() {
    if [[ -n "${GPUFLEET_PYTHON:-}" ]]; then
        echo "$GPUFLEET_PYTHON"
    elif [[ -x "$REPO_ROOT/.venv/bin/python" ]]; then
        echo "$REPO_ROOT/.venv/bin/python"
    else
        command -v python3
    fi
}

usage() {
    sed -n '5,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# ---------------------------------------------------------------------------------------
# down: everything by name (namespaces, links) and by pid (pid files, namespace members)
# ---------------------------------------------------------------------------------------

# A process that still runs. kill -0 also succeeds for a zombie (exited, not yet reaped: its parent may be a killed
# `up`, and the reaper is not ours to hurry), which holds no socket, file or namespace: that one is gone for us.
alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)"
    [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# wait_gone SECONDS PID...: until none of them is alive, polling every 0.1 s; 1 when some still are at the end.
wait_gone() {
    local pid
    for _ in $(seq 1 $(($1 * 10))); do
        pid=""
        for pid in "${@:2}"; do
            if alive "$pid"; then break; fi
            pid=""
        done
        [[ -n "$pid" ]] || return 0
        sleep 0.1
    done
    return 1
}

# kill_pids PID...: TERM, wait up to 5 s, then KILL what is left and wait (up to 5 s more) until it has died: `down`
# returns when no process of the fleet runs any more.
kill_pids() {
    local pid
    local -a left=()
    for pid in "$@"; do
        [[ "$pid" =~ ^[0-9]+$ ]] || continue
        [[ "$pid" -ne $$ ]] || continue
        if alive "$pid"; then
            kill -TERM "$pid" 2>/dev/null || true
            left+=("$pid")
        fi
    done
    [[ ${#left[@]} -gt 0 ]] || return 0
    wait_gone 5 "${left[@]}" && return 0
    for pid in "${left[@]}"; do
        if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    done
    wait_gone 5 "${left[@]}" || log "still running after SIGKILL: ${left[*]}"
}

# A pid file's process, only if its command line still names the state dir (a recycled pid
# belongs to someone else).
pid_from_file() {
    local file="$1" pid
    [[ -f "$file" ]] || return 0
    pid="$(tr -dc '0-9' 2>/dev/null < "$file")"
    [[ -n "$pid" ]] || return 0
    if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -qF -- "$STATE"; then
        echo "$pid"
    fi
}

# ssh connection-sharing masters the controller left (ansible's ControlPersist) on sockets in DIR/cp.
ssh_masters() {
    local proc cmd
    for proc in /proc/[0-9]*; do
        cmd="$(tr '\0' ' ' 2>/dev/null < "$proc/cmdline" || true)"
        if [[ "$cmd" == "ssh: $STATE/cp/"* ]]; then
            echo "${proc#/proc/}"
        fi
    done
}

fleet_namespaces() {
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^gf${FLEET_ID}h[0-9]+$" || true
}

do_down() {
    [[ -d "$STATE" ]] || { log "no state dir $STATE: nothing to tear down"; return 0; }
    STATE="$(cd "$STATE" && pwd)"
    FLEET_ID=""
    if [[ -f "$STATE/fleet_id" ]]; then
        FLEET_ID="$(tr -dc '0-9' < "$STATE/fleet_id")"
    fi
    local -a pids=()
    local file ns sock link
    # Slurm's daemons first (slurmctld and munged by pid; slurmd also go with the namespaces below)
    "$HERE/slurm.sh" down --state "$STATE" || log "slurm.sh down failed"
    for file in "$STATE"/pids/*.pid "$STATE"/h*/sshd.pid; do
        [[ -e "$file" ]] || continue
        while read -r pid; do pids+=("$pid"); done < <(pid_from_file "$file")
    done
    if [[ -n "$FLEET_ID" ]]; then
        for ns in $(fleet_namespaces); do
            while read -r pid; do pids+=("$pid"); done < <(ip netns pids "$ns" 2>/dev/null || true)
        done
    fi
    if [[ -d "$STATE/cp" ]]; then
        for sock in "$STATE"/cp/*; do
            if [[ -S "$sock" ]]; then
                ssh -o ControlPath="$sock" -O exit fleet >/dev/null 2>&1 || true
            fi
        done
    fi
    while read -r pid; do pids+=("$pid"); done < <(ssh_masters)
    kill_pids "${pids[@]+"${pids[@]}"}"
    # a process of the namespaces may have started a child between the listing and its end (a module run that a
    # thawed or reconnected node resumes spawns its next tool): list the namespaces again until nothing runs there
    local round
    for round in 1 2 3 4 5; do
        pids=()
        if [[ -n "$FLEET_ID" ]]; then
            for ns in $(fleet_namespaces); do
                while read -r pid; do pids+=("$pid"); done < <(ip netns pids "$ns" 2>/dev/null || true)
            done
        fi
        [[ ${#pids[@]} -gt 0 ]] || break
        log "round $round: ${#pids[@]} process(es) started during the teardown, ending them"
        kill_pids "${pids[@]}"
    done
    if [[ -n "$FLEET_ID" ]]; then
        for ns in $(fleet_namespaces); do
            ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
        done
        rm -rf "/tmp/gf${FLEET_ID}h"[0-9]*
        for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^gf${FLEET_ID}(h[0-9]+v|br)$" || true); do
            ip link del "$link" 2>/dev/null || true
        done
    fi
    rm -rf "$STATE/fleet_id" "$STATE/fleet_id.new" "$STATE"/h[0-9]* "$STATE/pids" "$STATE/cp" "$STATE/replay" \
        "$STATE/tmp" \
        "$STATE/fleet_key" "$STATE/fleet_key.pub" "$STATE/authorized_keys" "$STATE/known_hosts" \
        "$STATE/inventory.yml" "$STATE/hostfile" "$STATE/fleet.env"
    rmdir "$STATE" 2>/dev/null || true
    log "fleet ${FLEET_ID:-?} in $STATE is down"
}

# ---------------------------------------------------------------------------------------
# up
# ---------------------------------------------------------------------------------------

# Claim the first fleet number whose bridge does not exist and whose /24 no interface uses:
# creating the bridge is the atomic claim.
claim_fleet_id() {
    local id
    for id in $(seq 1 250); do
        if ip -o -4 addr show 2>/dev/null | grep -qF " 198.18.$id."; then
            continue
        fi
        if ip link add "gf${id}br" type bridge 2>/dev/null; then
            # written whole, then renamed: a reader (a test watching `up`) never sees the file empty
            echo "$id" > "$STATE/fleet_id.new" && mv -f "$STATE/fleet_id.new" "$STATE/fleet_id"
            FLEET_ID="$id"
            return 0
        fi
    done
    die "no free fleet number (198.18.1-250.0/24 all taken)"
}

wait_for_sshd() {
    local i="$1" addr="$2"
    for _ in $(seq 1 100); do
        if [[ -s "$STATE/h$i/sshd.pid" ]] && ip netns exec "gf${FLEET_ID}h$i" bash -c "exec 3<>/dev/tcp/$addr/22" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    die "sshd of host $i did not come up (log: $STATE/h$i/sshd.log)"
}

# EXIT trap of `up`: a failed or interrupted `up` takes down what it had made.
rollback() {
    local rc=$?
    trap - EXIT
    if [[ "$UP_STARTED" == 1 && "$UP_DONE" != 1 ]]; then
        log "up failed (rc $rc): rolling back"
        do_down || true
    fi
    exit "$rc"
}

# start_own_files_sshd I NS: host I's sshd in its own mount namespace, OWN_DIRS overlaid (upper layer
# DIR/h<I>/fs/upper/<dir>); the namespace, and so the overlays, end with the host's last process.
start_own_files_sshd() {
    local i="$1" ns="$2" dir name
    local -a mounts=()
    for dir in "${OWN_DIRS[@]}"; do
        name="$(echo "${dir#/}" | tr / -)"
        mkdir -p "$STATE/h$i/fs/upper/$name" "$STATE/h$i/fs/work/$name"
        mounts+=("$dir" "$STATE/h$i/fs/upper/$name" "$STATE/h$i/fs/work/$name")
    done
    # root's shell start-up files are a bare node's (written into the host's own layer): this machine's ~/.bashrc runs
    # `pyenv init`, whose rehash takes a lock file in ~/.pyenv/shims; through the overlay, a lock this machine took and
    # dropped after the mount reads as still there, and every SSH command waited 60 s for it (and failed a 60 s bound)
    # shellcheck disable=SC2016  # the inner sh's arguments, expanded there
    ip netns exec "$ns" unshare --uts --mount --propagation private -- sh -c '
        host="$1" sshd="$2" config="$3" log="$4" key="$5"; shift 5
        hostname "$host" || exit 1
        while [ $# -ge 3 ]; do
            mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3" "$1" || exit 1
            shift 3
        done
        mkdir -p /etc/ssh && cp "$key" "$key.pub" /etc/ssh/ || exit 1
        printf "# ~/.bashrc of a bare rented node (tests/sshfleet/fleet.sh --own-files)\n" > /root/.bashrc || exit 1
        printf "# ~/.profile of a bare rented node (tests/sshfleet/fleet.sh --own-files)\n" > /root/.profile || exit 1
        exec "$sshd" -f "$config" -E "$log"' \
        sh "$ns" "$SSHD" "$STATE/h$i/sshd_config" "$STATE/h$i/sshd.log" "$STATE/h$i/ssh_host_ed25519_key" "${mounts[@]}"
}

do_up() {
    [[ "$HOSTS" =~ ^[0-9]+$ && "$HOSTS" -ge 1 && "$HOSTS" -le "$MAX_HOSTS" ]] || die "--hosts must be 1..$MAX_HOSTS"
    [[ "$(id -u)" -eq 0 ]] || die "needs root (network namespaces, sshd)"
    local tool
    for tool in ip "$SSHD" ssh-keygen unshare; do
        command -v "$tool" >/dev/null || die "$tool is missing"
    done
    mkdir -p "$STATE"
    STATE="$(cd "$STATE" && pwd)"
    [[ ! -e "$STATE/fleet_id" ]] || die "$STATE already holds a fleet: run 'fleet.sh down --state $STATE' first"
    UP_DONE=0
    UP_STARTED=1
    mkdir -p "$STATE/pids" "$STATE/cp"
    chmod 0700 "$STATE"
    claim_fleet_id
    local net="198.18.$FLEET_ID" br="gf${FLEET_ID}br"
    ip addr add "$net.254/24" dev "$br"
    ip link set "$br" up
    ssh-keygen -q -t ed25519 -N '' -C "gpufleet-sshfleet-$FLEET_ID" -f "$STATE/fleet_key"
    cp "$STATE/fleet_key.pub" "$STATE/authorized_keys"
    chmod 0600 "$STATE/authorized_keys"
    : > "$STATE/known_hosts"
    # sshd's privilege separation directory (Debian's unit creates it at boot)
    mkdir -p /run/sshd
    chmod 0755 /run/sshd
    local i ns veth addr
    for i in $(seq 1 "$HOSTS"); do
        ns="gf${FLEET_ID}h$i"
        veth="${ns}v"
        addr="$net.$i"
        mkdir -p "$STATE/h$i"
        ip netns add "$ns"
        ip link add "$veth" type veth peer name eth0 netns "$ns"
        ip link set "$veth" master "$br"
        ip link set "$veth" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$addr/24" dev eth0
        ip -n "$ns" link set eth0 up
        ssh-keygen -q -t ed25519 -N '' -C "$ns" -f "$STATE/h$i/ssh_host_ed25519_key"
        echo "$addr $(cut -d' ' -f1,2 "$STATE/h$i/ssh_host_ed25519_key.pub")" >> "$STATE/known_hosts"
        # the host's own temporary directory (separate machines do not share /tmp): Open MPI keeps its session
        # directory there, and in a shared /tmp/ompi.<hostname>.<uid> one fleet's job ending removed it while another
        # fleet's job was starting ("orte_session_dir failed"). Short: Open MPI's sockets live under it.
        mkdir -p "/tmp/gf${FLEET_ID}h$i"
        chmod 0700 "/tmp/gf${FLEET_ID}h$i"
        # SHLVL=1: the login shell (root's bash) counts as nested, so it does not source ~/.bashrc for each command
        # sshd runs (bash does for a top-level shell started by sshd). This machine's root .bashrc runs `pyenv init`,
        # about 70 processes and 0.1 CPU-s per command: every module run over SSH paid it, a rented node's does not.
        cat > "$STATE/h$i/sshd_config" <<EOF
# gpufleet test fleet $FLEET_ID, host $i (written by tests/sshfleet/fleet.sh)
SetEnv TMPDIR=/tmp/gf${FLEET_ID}h$i SHLVL=1${SLURM:+ SLURM_CONF=/etc/slurm/slurm.conf}
ListenAddress $addr
Port 22
HostKey $STATE/h$i/ssh_host_ed25519_key
PidFile $STATE/h$i/sshd.pid
AuthorizedKeysFile $STATE/authorized_keys${OWN_FILES:+ .ssh/authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitUserEnvironment no
X11Forwarding no
AllowTcpForwarding no
MaxSessions 64
MaxStartups 64:30:128
Subsystem sftp internal-sftp
EOF
        # own UTS namespace too, so `hostname` on host I answers gf<X>h<I>
        if [[ -n "$OWN_FILES" ]]; then
            start_own_files_sshd "$i" "$ns"
        else
            # shellcheck disable=SC2016  # $1..$4 are the inner sh's arguments, expanded there
            ip netns exec "$ns" unshare --uts -- sh -c 'hostname "$1" && exec "$2" -f "$3" -E "$4"' \
                sh "$ns" "$SSHD" "$STATE/h$i/sshd_config" "$STATE/h$i/sshd.log"
        fi
        wait_for_sshd "$i" "$addr"
    done
    local -a node_args=()
    if [[ -n "$NODE_FILES" ]]; then
        node_args=(--node-files "$NODE_FILES")
    fi
    "$(controller_python)" "$HERE/fleet_inventory.py" --state "$STATE" --fleet-id "$FLEET_ID" --hosts "$HOSTS" \
        "${node_args[@]+"${node_args[@]}"}"
    cat > "$STATE/fleet.env" <<EOF
FLEET_ID=$FLEET_ID
HOSTS=$HOSTS
NET=$net
BRIDGE=$br
EOF
    if [[ -n "$SLURM" ]]; then
        "$HERE/slurm.sh" up --state "$STATE" ${SLURM_HEALTH:+--health-check "$SLURM_HEALTH"} \
            ${SLURM_PROLOG:+--prolog "$SLURM_PROLOG"}
    fi
    UP_DONE=1
    log "fleet $FLEET_ID up: $HOSTS hosts on $net.0/24, inventory $STATE/inventory.yml"
}

# ---------------------------------------------------------------------------------------
# throttle / unthrottle: tc on both ends of host I's link (traffic to and from the host)
# ---------------------------------------------------------------------------------------
# With --peer J only the traffic between hosts I and J is limited (a bad link, not a bad host): on
# both devices of host I an htb qdisc whose one class 1:1 has the rate, and a u32 filter sending the
# packets to J (eth0 inside I: destination J) and from J (I's veth, towards I: source J) to that
# class; htb sends all other traffic on directly, unlimited (no default class). This kernel has
# htb, tbf and u32 but no prio, netem or flower.

load_state() {
    [[ -f "$STATE/fleet.env" ]] || die "$STATE holds no fleet that is up"
    STATE="$(cd "$STATE" && pwd)"
    FLEET_ID="$(sed -n 's/^FLEET_ID=\([0-9]*\)$/\1/p' "$STATE/fleet.env")"
    HOSTS="$(sed -n 's/^HOSTS=\([0-9]*\)$/\1/p' "$STATE/fleet.env")"
    [[ "$HOST" =~ ^[0-9]+$ && "$HOST" -ge 1 && "$HOST" -le "$HOSTS" ]] || die "--host must be 1..$HOSTS"
}

# tc_both ARGS...: run `tc ARGS` for the host-side veth (towards the host) and, inside the
# namespace, for eth0 (from the host). DEV is replaced by the device name.
tc_both() {
    local ns="gf${FLEET_ID}h$HOST" word
    local -a outside=() inside=()
    for word in "$@"; do
        if [[ "$word" == DEV ]]; then
            outside+=("${ns}v")
            inside+=(eth0)
        else
            outside+=("$word")
            inside+=("$word")
        fi
    done
    tc "${outside[@]}"
    ip netns exec "$ns" tc "${inside[@]}"
}

do_unthrottle() {
    local ns="gf${FLEET_ID}h$HOST"
    tc qdisc del dev "${ns}v" root 2>/dev/null || true
    ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
}

# throttle_peer: the --peer variant of do_throttle (rate only).
throttle_peer() {
    [[ "$PEER" =~ ^[0-9]+$ && "$PEER" -ge 1 && "$PEER" -le "$HOSTS" && "$PEER" -ne "$HOST" ]] || die "--peer must be 1..$HOSTS and not --host"
    [[ -n "$RATE" && -z "$DELAY" ]] || die "throttle --peer needs --rate (and takes no --delay)"
    [[ "$RATE" =~ ^[0-9]+(\.[0-9]+)?([kmg]?bit|[KMG]?bps)$ ]] || die "bad --rate $RATE (e.g. 1gbit, 500mbit)"
    local ns="gf${FLEET_ID}h$HOST" peer_addr
    peer_addr="$(sed -n 's/^NET=\([0-9.]*\)$/\1/p' "$STATE/fleet.env").$PEER"
    do_unthrottle
    # htb with no default class: unclassified traffic leaves directly, unlimited; class 1:1 only what the filter sends there
    tc_both qdisc add dev DEV root handle 1: htb
    tc_both class add dev DEV parent 1: classid 1:1 htb rate "$RATE" ceil "$RATE" burst 256kb cburst 256kb quantum 60000
    tc filter add dev "${ns}v" parent 1: protocol ip prio 1 u32 match ip src "$peer_addr/32" flowid 1:1
    ip netns exec "$ns" tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst "$peer_addr/32" flowid 1:1
    log "link between hosts $HOST and $PEER of fleet $FLEET_ID: rate $RATE"
}

do_throttle() {
    if [[ -n "$PEER" ]]; then
        throttle_peer
        return
    fi
    [[ -n "$RATE" || -n "$DELAY" ]] || die "throttle needs --rate and/or --delay"
    [[ -z "$RATE" || "$RATE" =~ ^[0-9]+(\.[0-9]+)?([kmg]?bit|[KMG]?bps)$ ]] || die "bad --rate $RATE (e.g. 1gbit, 500mbit)"
    [[ -z "$DELAY" || "$DELAY" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || die "bad --delay $DELAY (e.g. 5ms)"
    do_unthrottle
    if [[ -n "$DELAY" ]] && ! tc qdisc add dev "gf${FLEET_ID}h${HOST}v" root handle 1: netem delay "$DELAY" 2>/dev/null; then
        die "this kernel has no netem qdisc (sch_netem): --delay is not available; host $HOST left unthrottled"
    fi
    do_unthrottle
    # tbf: burst large enough for GSO segments at multi-gigabit rates, queue up to 100 ms
    local -a tbf=(tbf rate "$RATE" burst 256kb latency 100ms)
    if [[ -n "$DELAY" && -n "$RATE" ]]; then
        tc_both qdisc add dev DEV root handle 1: netem delay "$DELAY" limit 100000
        tc_both qdisc add dev DEV parent 1:1 handle 10: "${tbf[@]}"
    elif [[ -n "$DELAY" ]]; then
        tc_both qdisc add dev DEV root handle 1: netem delay "$DELAY" limit 100000
    else
        tc_both qdisc add dev DEV root handle 1: "${tbf[@]}"
    fi
    log "host $HOST of fleet $FLEET_ID: rate ${RATE:-unlimited}, delay ${DELAY:-none}"
}

# ---------------------------------------------------------------------------------------

[[ $# -ge 1 ]] || usage
ACTION="$1"
shift
STATE="" HOSTS="" NODE_FILES="" HOST="" PEER="" RATE="" DELAY="" FLEET_ID="" UP_DONE=0 UP_STARTED=0 OWN_FILES="" SLURM="" SLURM_HEALTH="" SLURM_PROLOG=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --state) STATE="${2:?--state needs a value}"; shift 2 ;;
        --hosts) HOSTS="${2:?--hosts needs a value}"; shift 2 ;;
        --node-files) NODE_FILES="${2:?--node-files needs a value}"; shift 2 ;;
        --host) HOST="${2:?--host needs a value}"; shift 2 ;;
        --peer) PEER="${2:?--peer needs a value}"; shift 2 ;;
        --rate) RATE="${2:?--rate needs a value}"; shift 2 ;;
        --delay) DELAY="${2:?--delay needs a value}"; shift 2 ;;
        --own-files) OWN_FILES=1; shift ;;
        --slurm) OWN_FILES=1; SLURM=1; shift ;;
        --slurm-health) OWN_FILES=1; SLURM=1; SLURM_HEALTH="${2:?--slurm-health needs a value}"; shift 2 ;;
        --slurm-prolog) OWN_FILES=1; SLURM=1; SLURM_PROLOG="${2:?--slurm-prolog needs a value}"; shift 2 ;;
        -h|--help) usage ;;
        *) die "unknown argument $1" ;;
    esac
done
[[ -n "$STATE" ]] || die "--state DIR is required"

case "$ACTION" in
    up)
        trap rollback EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        do_up
        ;;
    down) do_down ;;
    throttle) load_state; do_throttle ;;
    unthrottle) load_state; do_unthrottle ;;
    *) usage ;;
esac
