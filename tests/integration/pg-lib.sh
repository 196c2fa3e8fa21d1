# A PostgreSQL server of the test's own, for the store's PostgreSQL backend. POSIX sh; source
# it after lib.sh:
#     . "${top_srcdir:-.}/tests/integration/lib.sh"
#     . "${top_srcdir:-.}/tests/integration/pg-lib.sh"
#
#   hf_pg_start      initdb + pg_ctl in a temp dir: 127.0.0.1 on a free port (and a unix socket
#                    in that dir), SCRAM password auth; stopped and removed on exit, also when the
#                    test fails. Sets HF_PG_URI (postgresql://holdfast@127.0.0.1:PORT/holdfast?...,
#                    no password in it), exports PGPASSFILE (the password, mode 0600: libpq reads
#                    it there), HF_PG_STOP_CMD / HF_PG_START_CMD (shell commands that stop and
#                    start the server again), HF_PG_FREEZE_CMD / HF_PG_THAW_CMD (SIGSTOP and
#                    SIGCONT to this server's postmaster and its children only, found through
#                    its postmaster.pid: a hung server). Skips (77) when the server is not
#                    installed.
#   hf_pg_stop       stops it now (idempotent)
#
# initdb refuses to run as root: as root the server runs as HF_PG_USER (nobody), in a dir of its
# own outside HF_TMP (which is 0700 root's).

hf_pg_bindir() {
    for _hf_d in "$(pg_config --bindir 2>/dev/null)" $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
        [ -x "$_hf_d/initdb" ] && [ -x "$_hf_d/pg_ctl" ] && { echo "$_hf_d"; return 0; }
    done
    return 1
}

# _hf_pg CMD...: runs a server program as the server's user.
_hf_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$HF_PG_USER" -- "$@"
    else
        "$@"
    fi
}

HF_PG_DIR=
hf_pg_start() {
    HF_PG_BIN=$(hf_pg_bindir) || hf_skip "PostgreSQL server not installed (initdb, pg_ctl; deps.sh installs postgresql)"
    command -v psql >/dev/null || hf_skip "psql not installed"
    hf_tmpdir
    HF_PG_USER=${HF_PG_USER:-nobody}
    HF_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hf-pg.XXXXXX") || hf_fail "mktemp -d failed"
    hf_on_exit hf_pg_stop
    [ "$(id -u)" -ne 0 ] || chown "$HF_PG_USER" "$HF_PG_DIR" || hf_fail "chown $HF_PG_USER $HF_PG_DIR"
    HF_PG_PORT=$(hf_free_port)
    _hf_pw=$(openssl rand -hex 24) || hf_fail "openssl rand"
    (umask 077; printf '%s\n' "$_hf_pw" >"$HF_PG_DIR/pw")
    [ "$(id -u)" -ne 0 ] || chown "$HF_PG_USER" "$HF_PG_DIR/pw"
    # --no-sync and fsync=off: this cluster is thrown away with the test, and what the tests
    # check (whole transactions when a client is killed) is the server's atomicity, which does
    # not depend on flushing to disk; they only make it start and commit faster.
    _hf_pg "$HF_PG_BIN/initdb" -D "$HF_PG_DIR/data" -U holdfast --pwfile="$HF_PG_DIR/pw" \
        --auth=scram-sha-256 --no-sync -E UTF8 --locale=C >"$HF_PG_DIR/initdb.log" 2>&1 ||
        { cat "$HF_PG_DIR/initdb.log"; hf_fail "initdb failed"; }
    rm -f "$HF_PG_DIR/pw"
    cat >>"$HF_PG_DIR/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $HF_PG_PORT
unix_socket_directories = '$HF_PG_DIR'
fsync = off
full_page_writes = off
max_connections = 200
EOF
    HF_PG_START_CMD="$(_hf_pg_cmd) -D '$HF_PG_DIR/data' -l '$HF_PG_DIR/server.log' -w -t 30 start >/dev/null"
    HF_PG_STOP_CMD="$(_hf_pg_cmd) -D '$HF_PG_DIR/data' -m fast -w -t 30 stop >/dev/null"
    # The postmaster first: stopped, it forks no child that the second kill would miss.
    _hf_pm="\$(head -n 1 '$HF_PG_DIR/data/postmaster.pid')"
    HF_PG_FREEZE_CMD="pm=$_hf_pm && kill -STOP \$pm && kill -STOP \$(ps -o pid= --ppid \$pm)"
    HF_PG_THAW_CMD="pm=$_hf_pm && kill -CONT \$(ps -o pid= --ppid \$pm) \$pm"
    export HF_PG_START_CMD HF_PG_STOP_CMD HF_PG_FREEZE_CMD HF_PG_THAW_CMD
    sh -c "$HF_PG_START_CMD" || { cat "$HF_PG_DIR/server.log"; hf_fail "pg_ctl start failed"; }
    PGPASSFILE="$HF_TMP/pgpass"
    (umask 077; printf '127.0.0.1:%s:*:holdfast:%s\n' "$HF_PG_PORT" "$_hf_pw" >"$PGPASSFILE")
    export PGPASSFILE
    psql -q -h 127.0.0.1 -p "$HF_PG_PORT" -U holdfast -d postgres -c 'CREATE DATABASE holdfast' \
        >/dev/null || hf_fail "CREATE DATABASE failed"
    # connect_timeout: under valgrind a SCRAM login (4096 PBKDF2 rounds on the client) takes
    # seconds when several threads log in at once; the store's default of 5 s is for servers.
    HF_PG_URI="postgresql://holdfast@127.0.0.1:$HF_PG_PORT/holdfast?connect_timeout=60"
    export HF_PG_URI
}

_hf_pg_cmd() {
    if [ "$(id -u)" -eq 0 ]; then
        echo "runuser -u $HF_PG_USER -- '$HF_PG_BIN/pg_ctl'"
    else
        echo "'$HF_PG_BIN/pg_ctl'"
    fi
}

hf_pg_stop() {
    [ -n "$HF_PG_DIR" ] || return 0
    # A test that failed with the server frozen: stopped processes would not take pg_ctl's signal.
    [ ! -f "$HF_PG_DIR/data/postmaster.pid" ] || sh -c "$HF_PG_THAW_CMD" >/dev/null 2>&1
    [ ! -f "$HF_PG_DIR/data/postmaster.pid" ] ||
        _hf_pg "$HF_PG_BIN/pg_ctl" -D "$HF_PG_DIR/data" -m immediate -w -t 30 stop >/dev/null 2>&1
    [ "${HF_KEEP_TMP:-0}" = 1 ] && echo "PostgreSQL dir kept: $HF_PG_DIR" || rm -rf "$HF_PG_DIR"
    HF_PG_DIR=
}
