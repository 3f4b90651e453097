# Sourced by jverbs scripts: sets JAVA_HOME to a JDK 25 or later, or explains where to get one.
# The JDK's feature version (25), or 0 when it cannot be read or is a 1.x version.
# Read from the JDK's release file when it has one (no JVM started: seconds under emulation).
jverbs_java_major() {
    local v=''
    [ -f "$1/release" ] && v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release")
    [ -n "$v" ] || v=$("$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
    case "$v" in ''|*[!0-9]*) echo 0 ;; *) echo "$v" ;; esac
}
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/java" ] || [ "$(jverbs_java_major "$JAVA_HOME")" -lt 25 ]; then
    for candidate in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25-jdk-arm64 /usr/lib/jvm/java-25-openjdk-amd64 /usr/lib/jvm/jdk-25*; do
        if [ -x "$candidate/bin/java" ]; then JAVA_HOME=$candidate; break; fi
    done
fi
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/java" ] || [ "$(jverbs_java_major "$JAVA_HOME")" -lt 25 ]; then
    echo "jverbs needs JDK 25: set JAVA_HOME to one (Debian/Ubuntu: Adoptium's temurin-25-jdk, installed in /usr/lib/jvm/temurin-25-jdk-amd64)" >&2
    exit 1
fi
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"
# Charts (JFreeChart, through AWT) load fonts through fontconfig, which prints "Fontconfig error:
# No writable cache directories" once per font lookup when it cannot write its cache — in the rig's
# guest the host's root, home included, is read-only. A cache under the temporary folder then.
jverbs_cache=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}
if ! { mkdir -p "$jverbs_cache/fontconfig" 2>/dev/null && [ -w "$jverbs_cache/fontconfig" ]; }; then
    export XDG_CACHE_HOME="${TMPDIR:-/tmp}/jverbs-cache"
    mkdir -p "$XDG_CACHE_HOME" 2>/dev/null || true
fi
unset jverbs_cache
