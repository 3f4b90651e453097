# Sourced by .ci/run and the README's commands: makes sure the Debian/Ubuntu packages (and a JDK 25)
# they need are installed. As root it installs what is missing; otherwise it prints the one command
# that would, and fails (unless JVERBS_USE_SUDO=1, as in CI, where it runs that command with sudo).

# What building, testing and the rxe rig need (the C perftest and tools are the reference peers).
JVERBS_PACKAGES=(gcc make libibverbs-dev librdmacm-dev ibverbs-providers rdma-core ibverbs-utils rdmacm-utils perftest
                 python3-clang-15 libclang1-15 qemu-system-x86 busybox-static cpio kmod iproute2 xz-utils zstd maven)

# jverbs_require_packages WHO PKG...   (WHO names the caller in messages)
jverbs_require_packages() {
    local who=$1 p need_jdk=0
    shift
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    ( . "$(dirname "${BASH_SOURCE[0]}")/java-env.sh" ) >/dev/null 2>&1 || need_jdk=1
    [ "$need_jdk" -eq 0 ] || missing+=(temurin-25-jdk)
    [ ${#missing[@]} -gt 0 ] || return 0
    local cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
    if [ "$(id -u)" -ne 0 ] && [ "${JVERBS_USE_SUDO:-0}" != 1 ]; then
        echo "$who: missing packages; run this once, then run me again:" >&2
        echo "  sudo sh -c '$cmd'" >&2
        [ "$need_jdk" -eq 0 ] || echo "  (temurin-25-jdk comes from Adoptium's apt repository, https://adoptium.net; or set JAVA_HOME to a JDK 25)" >&2
        return 1
    fi
    local sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    echo "== $who: installing ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -q
    if [ "$need_jdk" -eq 1 ] && ! apt-cache show temurin-25-jdk >/dev/null 2>&1; then
        echo "$who: no JDK 25 here and no apt package for one: install Temurin 25 (https://adoptium.net) and set JAVA_HOME" >&2
        return 1
    fi
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}
