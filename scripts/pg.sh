#!/usr/bin/env bash
# A throwaway PostgreSQL server for the multi-worker test, on a Unix socket only.
#   bash scripts/pg.sh install            # Debian's postgresql package, as root
#   eval "$(bash scripts/pg.sh start)"    # prints: export FASTCOMPACT_PG_URL=...
#   bash scripts/pg.sh stop
set -euo pipefail

DIR="${FASTCOMPACT_PG_DIR:-/tmp/fastcompact-pg}"
PORT="${FASTCOMPACT_PG_PORT:-54329}"

bindir() {
    for d in /usr/lib/postgresql/*/bin; do
        if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
    done
    if command -v initdb >/dev/null; then dirname "$(command -v initdb)"; return 0; fi
    return 1
}

# The server refuses to run as root: run it as the postgres user then.
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
install)
    if bindir >/dev/null; then exit 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    else
        echo "PostgreSQL is not installed and cannot be installed here (not root)" >&2
        exit 1
    fi
    ;;
start)
    if ! BIN=$(bindir); then
        echo "PostgreSQL is not installed: bash scripts/pg.sh install (as root)" >&2
        exit 1
    fi
    as_pg "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
    mkdir -p "$DIR"
    if [ "$(id -u)" = 0 ]; then chown postgres "$DIR"; fi
    as_pg "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
    as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
        -o "-p $PORT -k $DIR -c listen_addresses=''" start >&2
    echo "export FASTCOMPACT_PG_URL='postgresql://postgres@/postgres?host=$DIR&port=$PORT'"
    ;;
stop)
    if BIN=$(bindir) && [ -d "$DIR/data" ]; then
        as_pg "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >&2 || true
    fi
    ;;
*)
    echo "usage: $0 install|start|stop" >&2
    exit 2
    ;;
esac
