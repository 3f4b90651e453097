# shellcheck shell=bash
# Shared helpers for the soft-roce-ci scripts (sourced, bash only).
# Reads only sysfs, so it works the same natively and inside the rxe-vm guest.

rxe_log() { printf '%s: %s\n' "${RXE_PROG:-soft-roce-ci}" "$*" >&2; }
rxe_die() { rxe_log "error: $*"; exit "${RXE_DIE_STATUS:-1}"; }

# Succeeds when the RDMA device exists.
rxe_device_exists() { [ -d "/sys/class/infiniband/$1" ]; }

# Port state number of DEV port 1 (4 = ACTIVE), empty if unknown.
rxe_port_state() {
    local state
    state=$(cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null) || return 0
    printf '%s\n' "${state%%:*}"
}

# Waits up to SECONDS (default 20) for port 1 of DEV to become ACTIVE.
rxe_wait_active() {
    local dev=$1 limit=${2:-20} waited=0
    while [ "$(rxe_port_state "$dev")" != 4 ]; do
        if [ "$waited" -ge $((limit * 10)) ]; then
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

# Prints the index of the RoCE v2 GID of DEV port 1 that holds an IPv4-mapped
# address (::ffff:a.b.c.d); fails when there is none (yet).
rxe_ipv4_gid_index() {
    local dev=$1 path idx gid type
    for path in "/sys/class/infiniband/$dev/ports/1/gids/"*; do
        idx=${path##*/}
        gid=$(cat "$path" 2>/dev/null) || continue
        case $gid in
            0000:0000:0000:0000:0000:ffff:*) ;;
            *) continue ;;
        esac
        # Reading the type of an unused entry fails with EINVAL; skip those.
        type=$(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$idx" 2>/dev/null) || continue
        if [ "$type" = "RoCE v2" ]; then
            printf '%s\n' "$idx"
            return 0
        fi
    done
    return 1
}

# Prints the dotted IPv4 address held in GID INDEX of DEV port 1.
rxe_gid_ipv4() {
    local gid hex
    gid=$(cat "/sys/class/infiniband/$1/ports/1/gids/$2") || return 1
    hex=${gid//:/}
    hex=${hex:24:8}
    printf '%d.%d.%d.%d\n' "0x${hex:0:2}" "0x${hex:2:2}" "0x${hex:4:2}" "0x${hex:6:2}"
}

# Waits up to SECONDS (default 20) for the IPv4 RoCE v2 GID of DEV and prints its index.
rxe_wait_gid_index() {
    local dev=$1 limit=${2:-20} waited=0
    until rxe_ipv4_gid_index "$dev"; do
        if [ "$waited" -ge $((limit * 10)) ]; then
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

# Prints a TCP port that nothing listens on now (random in 20000..60999), so the rig and the
# sanity checks never depend on a fixed port being free. A caller that binds it may still race
# another process: retry with a new one when the bind fails.
rxe_free_port() {
    local port tries=0
    while [ "$tries" -lt 50 ]; do
        port=$((20000 + RANDOM % 41000))
        if ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
            printf '%s\n' "$port"
            return 0
        fi
        tries=$((tries + 1))
    done
    return 1
}

# Succeeds when C perftest's output FILE shows a clock calibration that failed under emulation:
# perftest's r^2 message and no measured first row under #bytes (it prints 0.00 for bandwidths
# and inf for latencies then). COLUMN (1-based) names the figure that must be positive; without
# it any figure after #bytes and #iterations will do.
rxe_perftest_uncalibrated() {
    local file=$1 column=${2:-}
    grep -q Correlation "$file" || return 1
    ! awk -v col="$column" '
        seen && NF > 2 {
            if (col != "") ok = ($col ~ /^[0-9.]+$/ && $col + 0 > 0)
            else for (i = 3; i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $i + 0 > 0) ok = 1
            exit
        }
        /#bytes/ { seen = 1 }
        END { exit !ok }' "$file"
}
