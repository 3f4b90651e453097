# shellcheck shell=bash
# The host side of the QEMU rig, shared by rxe-vm (one guest) and rxe-pair (two guests on a
# virtual wire): prerequisites, the cached distribution kernel, the initramfs, the guest's
# environment, the accelerator and the QEMU command line. Sourced after common.sh; callers set
# RXE_PROG, RXE_DIE_STATUS, here (the soft-roce-ci folder), cache and quiet.

info() { [ "${quiet:-0}" = 1 ] || rxe_log "$*"; }

now_ms() { local t=${EPOCHREALTIME/./}; printf '%s\n' $((t / 1000)); }
seconds_since() { local ms=$(( $(now_ms) - $1 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

# How long one apt-get download may take, and how long a run waits for another run's kernel
# download or initramfs build (the cache lock) before giving up with the reason.
RXE_DOWNLOAD_TIMEOUT=${JVERBS_RXE_DOWNLOAD_TIMEOUT:-900}
RXE_LOCK_TIMEOUT=${JVERBS_RXE_LOCK_TIMEOUT:-1200}

# Sets qemu and busybox, and checks the tools the host side needs.
rxe_vm_prerequisites() {
    local arch
    arch=$(uname -m)
    [ "$arch" = x86_64 ] || rxe_die "the QEMU guest route runs Debian's amd64 kernel with qemu-system-x86_64; this machine is $arch, which it does not support (under emulation it would be far too slow): use a runner whose kernel has rdma_rxe (mode native), or an x86-64 one"
    qemu=$(command -v qemu-system-x86_64 || true)
    [ -n "$qemu" ] || rxe_die "qemu-system-x86_64 not found: install the apt package qemu-system-x86 (apt-get install -y qemu-system-x86)"
    busybox=${JVERBS_RXE_BUSYBOX:-}
    if [ -z "$busybox" ]; then
        local candidate
        for candidate in /bin/busybox /usr/bin/busybox "$(command -v busybox || true)"; do
            if [ -n "$candidate" ] && [ -x "$candidate" ]; then busybox=$candidate; break; fi
        done
    fi
    [ -n "$busybox" ] || rxe_die "busybox not found: install the apt package busybox-static (apt-get install -y busybox-static)"
    local ldd_out
    ldd_out=$(LC_ALL=C ldd "$busybox" 2>&1 || true)
    if [[ $ldd_out != *"not a dynamic executable"* ]]; then
        rxe_die "$busybox is dynamically linked; the guest needs a static one: install the apt package busybox-static (apt-get install -y busybox-static)"
    fi
    local tool
    # setpriv gives QEMU a parent-death signal: a SIGKILLed rig leaves no guest running.
    for tool in cpio:cpio modprobe:kmod depmod:kmod apt-get:apt dpkg-deb:dpkg xz:xz-utils gzip:gzip flock:util-linux \
        setpriv:util-linux timeout:coreutils ss:iproute2; do
        command -v "${tool%%:*}" >/dev/null || rxe_die "${tool%%:*} not found: install the apt package ${tool#*:}"
    done
}

# The checkout holding the cwd: git's answer, else the nearest folder with a .git entry
# (git refuses repositories of other users), else the cwd.
rxe_vm_checkout_root() {
    local dir
    if dir=$(git rev-parse --show-toplevel 2>/dev/null) && [ -n "$dir" ]; then
        printf '%s\n' "$dir"
        return
    fi
    dir=$(pwd -P)
    while [ "$dir" != / ]; do
        if [ -e "$dir/.git" ]; then printf '%s\n' "$dir"; return; fi
        dir=$(dirname "$dir")
    done
    pwd -P
}

# Sets share (the folder mounted writable in the guest) from JVERBS_RXE_SHARE or the checkout.
rxe_vm_share() {
    share=${JVERBS_RXE_SHARE:-$(rxe_vm_checkout_root)}
    [ -d "$share" ] || rxe_die "share folder $share does not exist (JVERBS_RXE_SHARE)"
    share=$(cd "$share" && pwd -P)
    [ "$share" != / ] || rxe_die "refusing to share / writable: run inside the checkout or set JVERBS_RXE_SHARE"
}

# The cache folder: JVERBS_RXE_CACHE, else jverbs/rxe-vm in the user's cache folder.
rxe_vm_default_cache() { printf '%s\n' "${JVERBS_RXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jverbs/rxe-vm}"; }

# Creates the cache folders and makes cache absolute.
rxe_vm_cache_init() {
    mkdir -p "$cache/kernels" "$cache/runs" "$cache/resolved" \
        || rxe_die "cannot create the cache folder $cache (set JVERBS_RXE_CACHE)"
    cache=$(cd "$cache" && pwd -P)
}

# Drops run folders older than a day, so the runs folder cannot grow without bound.
rxe_vm_prune_runs() {
    [ ! -d "$cache/runs" ] || find "$cache/runs" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
}

rxe_vm_default_kernel() {
    if grep -qsE '^ID(_LIKE)?=.*ubuntu' /etc/os-release; then echo generic; else echo 6.12; fi
}

rxe_vm_package_field() { # PACKAGE FIELD -> the field of its candidate version
    { apt-cache show --no-all-versions "$1" 2>/dev/null || true; } | sed -n "s/^$2: //p" | head -n 1
}

# Prints the concrete kernel package behind META (itself if it already is one).
rxe_vm_resolve_package() {
    local name=$1 dep
    dep=$(apt-cache depends "$name" 2>/dev/null \
        | sed -n 's/^ *|\{0,1\}Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -n 1)
    if [ -n "$dep" ]; then
        printf '%s\n' "$dep"
    elif [ -n "$(rxe_vm_package_field "$name" Version)" ]; then
        printf '%s\n' "$name"
    else
        return 1
    fi
}

# Takes the cache lock (fd 9), waiting at most RXE_LOCK_TIMEOUT seconds.
rxe_vm_lock() {
    exec 9>"$cache/.lock"
    if ! flock -w "$RXE_LOCK_TIMEOUT" 9; then
        rxe_die "another rig run has held the cache lock $cache/.lock for $RXE_LOCK_TIMEOUT s (a kernel download or initramfs build; JVERBS_RXE_LOCK_TIMEOUT)"
    fi
}
rxe_vm_unlock() { flock -u 9; exec 9>&-; }

# rxe_vm_kernel_meta KERNEL: the package KERNEL (6.12, 6.1, generic or a linux-image-* package) names.
rxe_vm_kernel_meta() {
    case $1 in
        6.12) echo linux-image-6.12-amd64 ;;
        6.1) echo linux-image-amd64 ;;
        generic) echo linux-image-generic ;;
        linux-image-*) echo "$1" ;;
        *) rxe_die "--kernel must be 6.12, 6.1, generic (Ubuntu) or a linux-image-* package name, got '$1'" ;;
    esac
}

# rxe_vm_kernel KERNEL: makes sure the kernel is unpacked in the cache; sets kdir and kver.
# KERNEL: 6.12, 6.1, generic or a linux-image-* package. Call with the cache lock held.
rxe_vm_kernel() {
    local kernel=$1 meta pkg= version= dir
    meta=$(rxe_vm_kernel_meta "$kernel") || exit
    cached_kernel() {
        [ -s "$cache/resolved/$meta" ] || return 1
        dir=$(cat "$cache/resolved/$meta")
        [ -e "$dir/.complete" ] && printf '%s\n' "$dir"
    }
    # Asking apt costs ~1.5 s per run: a resolution younger than a day is trusted.
    if [ -n "$(find "$cache/resolved/$meta" -mmin -1440 2>/dev/null)" ] && kdir=$(cached_kernel); then
        :
    else
        pkg=$(rxe_vm_resolve_package "$meta" || true)
        version=${pkg:+$(rxe_vm_package_field "$pkg" Version)}
        if [ -n "$version" ]; then
            kdir=$cache/kernels/${pkg}_$version
            printf '%s\n' "$kdir" > "$cache/resolved/$meta"
        elif kdir=$(cached_kernel); then
            info "apt cannot resolve $meta (no package lists? try apt-get update); using the cached ${kdir##*/}"
        else
            rxe_die "cannot resolve the kernel package $meta with apt-cache: are this distribution's package lists there (apt-get update)? Debian 12 has linux-image-6.12-amd64 and linux-image-amd64, Ubuntu linux-image-generic"
        fi
    fi
    if [ ! -e "$kdir/.complete" ]; then
        rxe_vm_download_kernel "$pkg" "$version"
    fi
    kver=$(cat "$kdir/kernel-version")
}

# Downloads and unpacks PKG=VERSION (plus Ubuntu's module packages) into kdir.
rxe_vm_download_kernel() {
    local pkg=$1 version=$2 abi extra extra_version size installed need_kb avail_kb deb vmlinuz
    # Debian ships the modules inside linux-image-*; Ubuntu splits them into
    # linux-modules-<abi> and linux-modules-extra-<abi> (which holds rdma_rxe).
    abi=${pkg#linux-image-}
    abi=${abi#unsigned-}
    local packages=("$pkg=$version")
    need_kb=$(( 200 * 1024 ))
    for extra in "$pkg" "linux-modules-$abi" "linux-modules-extra-$abi"; do
        extra_version=$(rxe_vm_package_field "$extra" Version)
        [ -n "$extra_version" ] || continue
        [ "$extra" = "$pkg" ] || packages+=("$extra=$extra_version")
        size=$(rxe_vm_package_field "$extra" Size)
        installed=$(rxe_vm_package_field "$extra" Installed-Size)
        need_kb=$(( need_kb + ${size:-0} / 1024 + ${installed:-0} ))
    done
    avail_kb=$(df -Pk "$cache" | awk 'NR == 2 { print $4 }')
    if [ "$avail_kb" -lt "$need_kb" ]; then
        rxe_die "not enough disk space in $cache: the kernel $pkg needs about $((need_kb / 1024)) MiB, $((avail_kb / 1024)) MiB free (point JVERBS_RXE_CACHE at a bigger disk)"
    fi
    info "downloading ${packages[*]} (once; cached in $cache; at most $RXE_DOWNLOAD_TIMEOUT s)"
    work=$(mktemp -d "$cache/kernels/.download.XXXXXX")
    chmod 755 "$work" # lets apt's _apt user write there (no "unsandboxed" warning)
    # Bounded: a stalled mirror ends in an error, not a hang (apt's own timeout is per connection).
    if ! (cd "$work" && timeout -k 10 "$RXE_DOWNLOAD_TIMEOUT" apt-get -o Acquire::http::Timeout=60 \
            -o Acquire::Retries=2 download "${packages[@]}") >"$work/apt.log" 2>&1; then
        tail -n 5 "$work/apt.log" >&2
        rxe_die "cannot download the kernel package ${packages[*]} with apt-get download within $RXE_DOWNLOAD_TIMEOUT s (network? apt-get update? JVERBS_RXE_DOWNLOAD_TIMEOUT)"
    fi
    for deb in "$work"/*.deb; do
        dpkg-deb -x "$deb" "$work/root" || rxe_die "dpkg-deb -x failed on ${deb##*/}"
        rm -f "$deb"
    done
    if [ ! -d "$work/root/lib/modules" ] && [ -d "$work/root/usr/lib/modules" ]; then
        ln -s usr/lib "$work/root/lib"
    fi
    vmlinuz=$(find "$work/root/boot" -maxdepth 1 -name 'vmlinuz-*' -print -quit 2>/dev/null || true)
    [ -n "$vmlinuz" ] || rxe_die "$pkg holds no boot/vmlinuz-*"
    local v=${vmlinuz##*/vmlinuz-}
    depmod -b "$work/root" "$v" || rxe_die "depmod failed for $v"
    printf '%s\n' "$v" > "$work/root/kernel-version"
    rm -rf "$kdir"
    mv "$work/root" "$kdir"
    rm -rf "$work"
    work=
    touch "$kdir/.complete"
}

# Keeps only what a boot of kdir needs: the kernel image, its version and the initramfs of the
# current key (rxe_vm_initrd); the modules tree (100 to 400 MB) goes. An initramfs of another key
# later downloads the kernel again. Call with the cache lock held, after rxe_vm_initrd.
rxe_vm_prune_kernel() {
    find "$kdir" -mindepth 1 -maxdepth 1 ! -name boot ! -name kernel-version ! -name .complete \
        ! -name "${initrd##*/}" -exec rm -rf {} +
    find "$kdir/boot" -mindepth 1 -maxdepth 1 ! -name "vmlinuz-$kver" -exec rm -rf {} +
}

# The initramfs for kdir/kver: sets initrd. Call with the cache lock held.
rxe_vm_initrd() {
    local required_modules="virtio_pci virtio_net 9p 9pnet_virtio rdma_rxe ib_uverbs rdma_ucm"
    # rxe asks the crypto API for crc32 (older kernels) and nothing can autoload it before the
    # chroot; newer kernels use the crc32 library and have no crc32_generic. sch_netem is the
    # fault tools' loss, delay, reordering and duplication.
    local optional_modules="crc32_generic virtio_rng sch_netem"
    local key module deps n path base
    key=$( { cat "$here/lib/guest-init"; sha256sum < "$busybox"; echo "$kver $required_modules $optional_modules"; } \
        | sha256sum | cut -c1-16)
    initrd=$kdir/initrd-$key.cpio.gz
    [ ! -s "$initrd" ] || return 0
    if [ ! -d "$kdir/lib/modules/$kver" ]; then
        # a kernel kept without its modules (rxe_vm_prune_kernel) for another initramfs: fetch it again
        local name=${kdir##*/}
        info "the cached $name has no modules for this initramfs: downloading it again"
        rxe_vm_download_kernel "${name%%_*}" "${name#*_}"
    fi
    info "building the initramfs for $kver"
    work=$(mktemp -d "$cache/kernels/.initrd.XXXXXX")
    mkdir -p "$work/tree/bin" "$work/tree/lib/rxe-modules" "$work/empty"
    cp "$busybox" "$work/tree/bin/busybox"
    ln -s busybox "$work/tree/bin/sh"
    cp "$here/lib/guest-init" "$work/tree/init"
    chmod 755 "$work/tree/init" "$work/tree/bin/busybox"
    : > "$work/paths"
    for module in $required_modules $optional_modules; do
        if ! deps=$(modprobe -C "$work/empty" -d "$kdir" -S "$kver" --show-depends "$module" 2>&1); then
            case " $optional_modules " in *" $module "*) continue ;; esac
            rm -rf "$work"
            rxe_die "module $module not found in $kver: $deps"
        fi
        printf '%s\n' "$deps" | awk '$1 == "insmod" { print $2 }' >> "$work/paths"
    done
    # Decompressors, checked before the first module needs one (Ubuntu compresses with zstd).
    if grep -q '\.ko\.zst$' "$work/paths" && ! command -v zstd >/dev/null; then
        rm -rf "$work"
        rxe_die "the modules of $kver are zstd-compressed and zstd is missing: install the apt package zstd"
    fi
    n=0
    awk '!seen[$0]++' "$work/paths" | while read -r path; do
        n=$((n + 1))
        base=${path##*/}
        base=$(printf '%02d-%s' "$n" "${base%%.ko*}.ko")
        case $path in
            *.ko.xz) xz -dc "$path" > "$work/tree/lib/rxe-modules/$base" ;;
            *.ko.zst) zstd -qdc "$path" > "$work/tree/lib/rxe-modules/$base" ;;
            *.ko.gz) gzip -dc "$path" > "$work/tree/lib/rxe-modules/$base" ;;
            *) cp "$path" "$work/tree/lib/rxe-modules/$base" ;;
        esac
        printf '%s\n' "$base" >> "$work/tree/lib/rxe-modules/load-order"
    done
    (cd "$work/tree" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 > "$work/initrd"
    mv "$work/initrd" "$initrd"
    # Older initramfs images (another init script): keep recent ones, a run may be starting.
    find "$kdir" -maxdepth 1 -name 'initrd-*.cpio.gz' ! -name "${initrd##*/}" -mmin +60 -delete || true
    rm -rf "$work"
    work=
}

# rxe_vm_run_folder RUN [CONFIG LINES...]: fills a guest's run folder: stage 2, the shared
# helpers, the config (share, cwd, module root, then the extra lines), the host's environment
# and empty stdout/stderr. The command itself is written by the caller (RUN/cmd).
rxe_vm_run_folder() {
    local run=$1 module_root=$kdir name
    shift
    cp "$here/lib/common.sh" "$run/common.sh"
    cp "$here/lib/guest-stage2" "$run/stage2"
    : > "$run/stdout"
    : > "$run/stderr"
    case $kdir in /tmp|/tmp/*) module_root= ;; esac # the guest's /tmp is its own tmpfs
    {
        printf 'RXE_SHARE=%q\n' "$share"
        printf 'RXE_CWD=%q\n' "$(pwd -P)"
        printf 'RXE_MODULE_ROOT=%q\n' "$module_root"
        printf 'RXE_TOOLS=%q\n' "$here"
        local line
        for line in "$@"; do printf '%s\n' "$line"; done
    } > "$run/config"
    # The host's exported environment, minus what only makes sense on the host.
    while read -r name; do
        [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
        case $name in
            PWD|OLDPWD|SHLVL|_|HOSTNAME|TMPDIR|TMP|TEMP|DISPLAY|WAYLAND_DISPLAY|XAUTHORITY) continue ;;
            XDG_RUNTIME_DIR|DBUS_SESSION_BUS_ADDRESS|SSH_*|BASH_*|JVERBS_TEST_*) continue ;;
        esac
        printf 'export %s=%q\n' "$name" "${!name}"
    done < <(compgen -e) > "$run/env"
}

# rxe_vm_write_cmd RUN CMD...: the command the guest runs, quoted.
rxe_vm_write_cmd() {
    local run=$1
    shift
    { printf 'exec'; printf ' %q' "$@"; printf '\n'; } > "$run/cmd"
}

rxe_vm_kvm_accessible() { [ -e /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; }
# A nested guest may expose /dev/kvm without hardware virtualization (no vmx/svm flag):
# QEMU then stops with "KVM internal error", so such a host counts as TCG-only.
rxe_vm_cpu_virtualizes() { grep -qw -e vmx -e svm /proc/cpuinfo; }

# rxe_vm_choose_accel auto|kvm|tcg: sets accel (kvm or tcg) and auto_accel (1 when chosen here).
rxe_vm_choose_accel() {
    accel=$1
    auto_accel=0
    case $accel in
        auto)
            auto_accel=1
            accel=tcg
            if ! rxe_vm_kvm_accessible; then
                if [ -e /dev/kvm ]; then
                    info "/dev/kvm is not read/writable for $(id -un) (add the user to group kvm); using TCG, about 10x slower"
                fi
            elif ! rxe_vm_cpu_virtualizes; then
                info "/dev/kvm exists but the CPU shows no vmx/svm flag (nested virtualization off); using TCG"
            else
                accel=kvm
            fi
            ;;
        kvm) rxe_vm_kvm_accessible || rxe_die "--accel kvm: /dev/kvm is missing or not read/writable for $(id -un)" ;;
        tcg) ;;
        *) rxe_die "--accel must be auto, kvm or tcg, got '$accel'" ;;
    esac
}

# rxe_vm_start_qemu RUN ACCEL CPUS MEM KDIR KVER INITRD DEBUG -- NET-AND-EXTRA-OPTIONS...
# Starts QEMU in the background with the kernel, the console in RUN/console.log and the 9p shares
# (host root read-only, the checkout, the run folder); sets qemu_pid. QEMU gets SIGKILL when
# this shell dies (setpriv --pdeathsig), so a rig killed by SIGKILL leaves no guest behind.
rxe_vm_start_qemu() {
    local run=$1 accel=$2 cpus=$3 mem=$4 k_dir=$5 k_ver=$6 k_initrd=$7 dbg=$8 cpu
    shift 9
    if [ "$accel" = kvm ]; then cpu=host; else cpu=max; fi
    local qemu_extra=()
    read -r -a qemu_extra <<< "${JVERBS_RXE_QEMU_ARGS:-}" # extra QEMU options, split on blanks
    local append="console=ttyS0 panic=-1 rdinit=/init mitigations=off"
    # Under TCG the clocksource watchdog sees the emulated TSC skew against the emulated HPET and,
    # about 14 s after boot, marks the TSC unstable: the guest falls back to the HPET, every
    # clock_gettime becomes a system call plus an emulated MMIO read, and Java's System.nanoTime
    # (unlike C perftest's rdtsc) slows by tens of microseconds a call. QEMU derives the TSC from
    # the host's clock, the same for every vCPU, so it is reliable here.
    if [ "$accel" = tcg ]; then append+=" tsc=reliable"; fi
    if [ "$dbg" = 1 ]; then append+=" loglevel=7"; else append+=" quiet loglevel=1"; fi
    # Extra guest kernel arguments, for experiments (e.g. idle=poll): JVERBS_RXE_KERNEL_ARGS.
    if [ -n "${JVERBS_RXE_KERNEL_ARGS:-}" ]; then append+=" $JVERBS_RXE_KERNEL_ARGS"; fi
    setpriv --pdeathsig KILL "$qemu" -nodefaults -no-user-config -display none -no-reboot \
        -accel "$accel" -cpu "$cpu" -smp "$cpus" -m "$mem" \
        -kernel "$k_dir/boot/vmlinuz-$k_ver" -initrd "$k_initrd" \
        -append "$append" \
        -serial "file:$run/console.log" \
        "$@" \
        -device virtio-rng-pci \
        -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
        -virtfs "local,path=${share//,/,,},mount_tag=checkout,security_model=none,multidevs=remap" \
        -virtfs "local,path=${run//,/,,},mount_tag=rxerun,security_model=none" \
        "${qemu_extra[@]}" \
        </dev/null >/dev/null 2>"$run/qemu.err" &
    qemu_pid=$!
}

# Kills a QEMU: TERM, then KILL.
rxe_vm_kill() {
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill "$pid" 2>/dev/null || true
    local i
    for i in 1 2 3; do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

# Shows the last console lines and QEMU's stderr of a run folder.
rxe_vm_show_console_tail() {
    local run=$1 label=${2:-}
    if [ -s "$run/console.log" ]; then
        rxe_log "last lines of the ${label:+$label }guest console ($run/console.log):"
        tail -n 15 "$run/console.log" | sed 's/^/    /' >&2
    fi
    if [ -s "$run/qemu.err" ]; then
        rxe_log "QEMU${label:+ ($label)} said:"
        sed 's/^/    /' "$run/qemu.err" >&2
    fi
}
