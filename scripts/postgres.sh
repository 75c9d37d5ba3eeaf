#!/usr/bin/env bash
# A private PostgreSQL server for icepark's tests.
#
#   scripts/postgres.sh start   install PostgreSQL (Debian's package) if needed, then start a
#                               private cluster with trust auth on 127.0.0.1 and a database
#                               "icepark_test"; a no-op when it is running already
#   scripts/postgres.sh stop    stop that cluster
#   scripts/postgres.sh status  exit 0 if it accepts connections
#   scripts/postgres.sh url     print its SQLAlchemy URL
#
# Settings (environment): ICEPARK_PG_PORT (default 55432, or the port a previous start chose),
# ICEPARK_PG_DATA (the data directory; default .services/pg/data if the postgres user can
# reach it, else /tmp/icepark-pg-PORT). The server runs as the "postgres" user, since root
# cannot run it; it is tuned for tests (fsync off), not for keeping data.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="$ROOT/.services/pg"
PORT_FILE="$STATE_DIR/port"
DATA_FILE="$STATE_DIR/datadir"
DB_NAME="icepark_test"
PG_USER="postgres"
DEFAULT_PORT=55432

log() { echo "postgres.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

port() {
    if [[ -n "${ICEPARK_PG_PORT:-}" ]]; then
        echo "$ICEPARK_PG_PORT"
    elif [[ -s "$PORT_FILE" ]]; then
        cat "$PORT_FILE"
    else
        echo "$DEFAULT_PORT"
    fi
}

url() { echo "postgresql+psycopg2://$PG_USER@127.0.0.1:$(port)/$DB_NAME"; }

# Run a command as the postgres user.
as_pg() {
    if [[ "$(id -un)" == "$PG_USER" ]]; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u "$PG_USER" -- "$@"
    else
        su "$PG_USER" -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}

# Print the directory holding initdb and pg_ctl, or nothing.
find_bindir() {
    if [[ -n "${ICEPARK_PG_BIN:-}" && -x "$ICEPARK_PG_BIN/initdb" ]]; then
        echo "$ICEPARK_PG_BIN"
        return
    fi
    local dir
    # Debian keeps them under /usr/lib/postgresql/VERSION/bin (pick the newest).
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
        echo "$dir"
        return
    fi
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v initdb)")"
    fi
}

install_postgres() {
    log "PostgreSQL not found: installing Debian's postgresql package"
    local sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install postgresql first"
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >&2
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends postgresql >&2
}

# True if a server on the port accepts our trust login.
accepts() {
    "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1" -U "$PG_USER" -t 2 >/dev/null 2>&1 \
        && "$BIN/psql" -h 127.0.0.1 -p "$1" -U "$PG_USER" -d postgres -w -XtAqc 'SELECT 1' \
            >/dev/null 2>&1
}

# Stop a server on the port whose data directory no longer exists (its clone was removed
# under it): it may still answer, but its files are gone. Found by its command line
# (postgres -D DIR -p PORT).
stop_orphaned() {
    local pid dir tries=0
    for pid in $(pgrep -u "$PG_USER" -f -- "bin/postgres -D .* -p $1\$" 2>/dev/null || true); do
        dir="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n '/^-D$/{n;p;q}')"
        [[ -n "$dir" ]] || continue
        as_pg test -f "$dir/PG_VERSION" && continue
        log "the server on port $1 runs from $dir, which is gone: stopping it"
        kill -INT "$pid" 2>/dev/null || continue
        while port_busy "$1"; do
            tries=$((tries + 1))
            ((tries < 120)) || die "the server on port $1 did not stop"
            sleep 0.5
        done
    done
}

port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") >/dev/null 2>&1
}

ensure_database() {
    local p="$1"
    if [[ "$("$BIN/psql" -h 127.0.0.1 -p "$p" -U "$PG_USER" -d postgres -w -XtAqc \
        "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != 1 ]]; then
        "$BIN/psql" -h 127.0.0.1 -p "$p" -U "$PG_USER" -d postgres -w -Xqc \
            "CREATE DATABASE $DB_NAME" >/dev/null 2>&1 \
            || [[ "$("$BIN/psql" -h 127.0.0.1 -p "$p" -U "$PG_USER" -d postgres -w -XtAqc \
                "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" == 1 ]] \
            || die "could not create database $DB_NAME"
    fi
}

# Choose the data directory for a port: inside the work tree if the postgres user can use it.
choose_datadir() {
    local p="$1"
    if [[ -n "${ICEPARK_PG_DATA:-}" ]]; then
        echo "$ICEPARK_PG_DATA"
        return
    fi
    local dir="$STATE_DIR/data"
    mkdir -p "$dir"
    chown "$PG_USER:" "$dir" 2>/dev/null || true
    chmod 700 "$dir" 2>/dev/null || true
    if as_pg test -w "$dir" 2>/dev/null; then
        echo "$dir"
    else
        rmdir "$dir" 2>/dev/null || true
        echo "/tmp/icepark-pg-$p"
    fi
}

datadir() {
    if [[ -n "${ICEPARK_PG_DATA:-}" ]]; then
        echo "$ICEPARK_PG_DATA"
    elif [[ -s "$DATA_FILE" ]]; then
        cat "$DATA_FILE"
    fi
}

start() {
    BIN="$(find_bindir)"
    if [[ -z "$BIN" ]]; then
        install_postgres
        BIN="$(find_bindir)"
        [[ -n "$BIN" ]] || die "PostgreSQL is still missing after apt-get install"
    fi
    id "$PG_USER" >/dev/null 2>&1 || die "no '$PG_USER' user (the postgresql package makes it)"

    local p data
    p="$(port)"
    data="$(datadir)"

    # Running already (ours, or one left by an earlier clone on the same port, unless its
    # data directory is gone)?
    stop_orphaned "$p"
    if accepts "$p"; then
        ensure_database "$p"
        echo "$p" >"$PORT_FILE"
        return
    fi

    if [[ -z "$data" || ! -f "$data/PG_VERSION" ]]; then
        # Nothing to reuse: find a free port (the default one may be taken by something else).
        if [[ -z "${ICEPARK_PG_PORT:-}" ]]; then
            local tries=0
            while port_busy "$p"; do
                tries=$((tries + 1))
                ((tries < 50)) || die "no free port from $(port) on"
                p=$((p + 1))
            done
        elif port_busy "$p"; then
            die "port $p is in use by something that is not a usable PostgreSQL"
        fi
        data="$(choose_datadir "$p")"
    fi

    if [[ ! -f "$data/PG_VERSION" ]]; then
        log "initialising a cluster in $data (port $p)"
        mkdir -p "$data"
        chown "$PG_USER:" "$data"
        chmod 700 "$data"
        as_pg "$BIN/initdb" -D "$data" -U "$PG_USER" --auth=trust -E UTF8 --locale=C \
            --no-sync >"$STATE_DIR/initdb.log" 2>&1 \
            || { cat "$STATE_DIR/initdb.log" >&2; die "initdb failed"; }
        cat >>"$data/postgresql.conf" <<EOF

# icepark test server
listen_addresses = '127.0.0.1'
unix_socket_directories = '/tmp'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
        cat >"$data/pg_hba.conf" <<EOF
local   all   all                  trust
host    all   all   127.0.0.1/32   trust
host    all   all   ::1/128        trust
EOF
        chown "$PG_USER:" "$data/postgresql.conf" "$data/pg_hba.conf"
    fi

    log "starting PostgreSQL on 127.0.0.1:$p"
    if ! as_pg "$BIN/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
        -o "-p $p" start >/dev/null 9>&-; then  # 9>&-: the server must not keep our lock
        tail -n 30 "$data/server.log" >&2 || true
        die "PostgreSQL did not start"
    fi
    echo "$p" >"$PORT_FILE"
    echo "$data" >"$DATA_FILE"
    accepts "$p" || die "PostgreSQL started but does not accept connections on port $p"
    ensure_database "$p"
}

stop() {
    BIN="$(find_bindir)"
    local data
    data="$(datadir)"
    if [[ -z "$BIN" || -z "$data" || ! -f "$data/PG_VERSION" ]]; then
        return 0
    fi
    if as_pg "$BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        as_pg "$BIN/pg_ctl" -D "$data" -w -t 60 -m fast stop >/dev/null
        log "stopped"
    fi
}

status() {
    BIN="$(find_bindir)"
    [[ -n "$BIN" ]] && accepts "$(port)"
}

main() {
    mkdir -p "$STATE_DIR"
    case "${1:-}" in
        start | stop)
            # One at a time: parallel test workers may all ask for the server at once.
            exec 9>"$STATE_DIR/lock"
            flock 9
            "$1"
            ;;
        status) status ;;
        url) url ;;
        *)
            echo "usage: $0 start|stop|status|url" >&2
            exit 2
            ;;
    esac
}

main "$@"
