#!/usr/bin/env bash
# Headless Chromium and its WebDriver for icepark's browser tests (tests/ui/).
#
#   scripts/chromium.sh install   install Debian's chromium and chromium-driver packages if
#                                 either is missing; a no-op when both are there
#   scripts/chromium.sh status    exit 0 if both are installed
#   scripts/chromium.sh paths     print the browser's and the driver's paths (two lines)
#
# The tests call "install" once per session and skip, naming the reason, only when it fails
# (no root and no sudo, no package source reachable).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="$ROOT/.services/chromium"

log() { echo "chromium.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

browser() {
    local name
    for name in chromium chromium-browser; do
        if command -v "$name" >/dev/null 2>&1; then
            command -v "$name"
            return
        fi
    done
}

driver() {
    if command -v chromedriver >/dev/null 2>&1; then
        command -v chromedriver
    elif [[ -x /usr/lib/chromium/chromedriver ]]; then
        echo /usr/lib/chromium/chromedriver
    fi
}

status() { [[ -n "$(browser)" && -n "$(driver)" ]]; }

install() {
    if status; then
        return
    fi
    log "Chromium or its driver not found: installing Debian's chromium and chromium-driver"
    local sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install chromium first"
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null 2>&1 || die "no apt-get: install chromium and chromedriver"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed"
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver >&2 \
        || die "apt-get install chromium chromium-driver failed"
    status || die "chromium is still missing after apt-get install"
}

paths() {
    status || die "chromium is not installed (run: $0 install)"
    browser
    driver
}

main() {
    mkdir -p "$STATE_DIR"
    case "${1:-}" in
        install)
            # One at a time: parallel test workers may all ask at once.
            exec 9>"$STATE_DIR/lock"
            flock 9
            install
            ;;
        status) status ;;
        paths) paths ;;
        *)
            echo "usage: $0 install|status|paths" >&2
            exit 2
            ;;
    esac
}

main "$@"
