#!/usr/bin/env bash
# The toolchains of the starters (starters/*/README.md), for their tests:
#   Java   openjdk-17-jdk-headless (javac, java: java.net.http.WebSocket, javax.crypto.Mac)
#   C++    g++ make libwebsocketpp-dev libasio-dev nlohmann-json3-dev libssl-dev
#   Go     golang-go golang-github-gorilla-websocket-dev
#   Node   nodejs npm, then `npm ci` in starters/node (its one package, ws, from the npm registry)
# Debian packages that are missing are installed with apt-get when running as root; otherwise
# it lists them and exits 0 (their tests then skip, naming the package; under CI=true they fail).
# Usage: bash infra/starters.sh          install what is missing (root), npm ci
#        bash infra/starters.sh --check  install nothing; exit 1 when something is missing
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

PACKAGES=(
    openjdk-17-jdk-headless
    g++ make libwebsocketpp-dev libasio-dev nlohmann-json3-dev libssl-dev
    golang-go golang-github-gorilla-websocket-dev
    nodejs npm
)

installed() {  # a Debian package, or the node and npm of another installer
    case "$1" in
        nodejs) command -v node >/dev/null 2>&1 && return 0 ;;
        npm) command -v npm >/dev/null 2>&1 && return 0 ;;
    esac
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "starters.sh: not a Debian system: install the starters' toolchains yourself (starters/*/README.md)" >&2
    MISSING=()
else
    MISSING=()
    for pkg in "${PACKAGES[@]}"; do
        installed "$pkg" || MISSING+=("$pkg")
    done
fi

if [[ ${#MISSING[@]} -gt 0 ]]; then
    if [[ "${1:-}" == --check ]]; then
        echo "starters.sh: missing: ${MISSING[*]}" >&2
        exit 1
    fi
    if [[ "$(id -u)" != 0 ]]; then
        echo "starters.sh: missing ${MISSING[*]}: sudo apt-get install -y ${MISSING[*]} (their starters' tests skip)" >&2
    else
        echo "starters.sh: installing ${MISSING[*]} with apt-get" >&2
        LOG="${TMPDIR:-/tmp}/arena-apt-starters.log"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${MISSING[@]}"; } \
            >"$LOG" 2>&1 || { cat "$LOG" >&2; echo "starters.sh: apt-get install failed" >&2; exit 1; }
    fi
fi

# the Node starter's one dependency, pinned by its package-lock.json
if [[ ! -d starters/node/node_modules/ws ]]; then
    if [[ "${1:-}" == --check ]]; then
        echo "starters.sh: starters/node/node_modules missing (npm ci in starters/node)" >&2
        exit 1
    fi
    if command -v npm >/dev/null 2>&1; then
        (cd starters/node && npm ci --no-audit --no-fund >/dev/null 2>&1) \
            || { echo "starters.sh: npm ci in starters/node failed" >&2; exit 1; }
    fi
fi
