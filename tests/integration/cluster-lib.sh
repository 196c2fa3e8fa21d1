# The two-node sample of conf/cluster/, made a test's own, for cluster.sh and
# tests/perf/bench-cluster.sh. POSIX sh; source it after lib.sh:
#     . "${top_srcdir:-.}/tests/integration/lib.sh"
#     . "${top_srcdir:-.}/tests/integration/cluster-lib.sh"
#
#   cluster_setup    a PostgreSQL server of its own (pg-lib.sh) holding the store, `holdfast
#                    init`, keys xks-health and k linked for aws-xks, the PKI (pki/ca.pem, a
#                    node certificate, a client certificate for hf-load, curl and HAProxy's
#                    checks), the SigV4 credential (AKID, SEC; HF_LOAD_CREDENTIALS exported) and
#                    the sample's files in T (= HF_TMP) with free ports P1, P2 (the nodes) and
#                    PH (HAProxy), this build's module and plugin. Skips (77) without HAProxy,
#                    PostgreSQL or hf-load. Sets TLS: curl's options for the client certificate.
#   node_start N     starts node N (holdfastd -f) and waits for its /healthz; its PID in PIDN
#   node_stop N      stops node N at once if it runs (SIGINT); both are stopped on exit
#   node_reap N      waits for node N, signalled at t_term: exit status in node_rc, the time
#                    since t_term in node_ms
#   healthz N        node N's /healthz, "BODY CODE"
#   haproxy_start    HAProxy on the sample's config (PID in HAPROXY_PID), once both nodes pass
#                    its checks; stopped on exit
. "${top_srcdir:-.}/tests/integration/pg-lib.sh"

cluster_setup() {
    hf_xks_need
    command -v haproxy >/dev/null || hf_skip "haproxy not installed (deps.sh installs it)"
    hf_load_need
    hf_pg_start
    HF_STORE_LOCATOR=$HF_PG_URI
    hf_store_setup
    T=$HF_TMP
    for _k in xks-health k; do
        "$HF_CLI" key create "$_k" >/dev/null || hf_fail "holdfast key create $_k"
        "$HF_CLI" link add aws-xks "$_k" "$_k" >/dev/null || hf_fail "holdfast link add aws-xks $_k"
    done
    _cluster_pki
    _cluster_sample
    TLS="--cacert $T/pki/ca.pem --cert $T/pki/client.pem --key $T/pki/client.key"
    hf_on_exit "node_stop 1"
    hf_on_exit "node_stop 2"
}

# The nodes' certificate, and one client certificate for hf-load, curl and HAProxy's checks,
# where the sample's paths look for them; the credential both nodes accept.
_cluster_pki() {
    HF_PKI=$T/pki
    hf_pki_ca ca
    hf_pki_cert node 127.0.0.1 ca "subjectAltName=IP:127.0.0.1"
    hf_pki_cert client hf-load ca "extendedKeyUsage=clientAuth"
    cat "$HF_PKI/client.pem" "$HF_PKI/client.key" >"$HF_PKI/check.pem"
    AKID=AKIAIOSFODNN7EXAMPLE
    SEC=FYtE5EFA5FT0mCc3DrGUe2sti527BitkQ0Zr9MO9fvE
    HF_LOAD_CREDENTIALS="$AKID:$SEC"
    export HF_LOAD_CREDENTIALS
    echo "$AKID:$SEC" >"$T/xks.creds"
}

# The sample, in T beside the token it names (state_dir = state): ports, database, module and
# plugin made the test's.
_cluster_sample() {
    _sample=$top_srcdir/conf/cluster
    P1=$(hf_free_port)
    P2=$(hf_free_port)
    PH=$(hf_free_port)
    for _n in 1 2; do
        sed "s|^path = postgresql://.*|path = $HF_PG_URI|" "$_sample/holdfast-node$_n.conf" \
            >"$T/holdfast-node$_n.conf" || hf_fail "no conf/cluster/holdfast-node$_n.conf"
        grep -q "^path = $HF_PG_URI\$" "$T/holdfast-node$_n.conf" ||
            hf_fail "conf/cluster/holdfast-node$_n.conf names no PostgreSQL store"
        _cluster_ports -e "s|^module = .*|module = $HF_MODULE|" "$_sample/node$_n.conf" \
            >"$T/node$_n.conf" || hf_fail "no conf/cluster/node$_n.conf"
        printf '\n[plugin:aws-xks]\npath = %s\n' "$XKS_PLUGIN" >>"$T/node$_n.conf"
    done
    _cluster_ports "$_sample/haproxy.cfg" >"$T/haproxy.cfg" || hf_fail "no conf/cluster/haproxy.cfg"
    (cd "$T" && haproxy -c -q -f haproxy.cfg) || hf_fail "haproxy -c refuses the sample"
}

_cluster_ports() {
    sed -e "s/127.0.0.1:8441/127.0.0.1:$P1/; s/127.0.0.1:8442/127.0.0.1:$P2/" \
        -e "s/127.0.0.1:8443/127.0.0.1:$PH/" "$@"
}

port_of() { [ "$1" = 1 ] && echo "$P1" || echo "$P2"; }

healthz() {
    curl -s $TLS -w ' %{http_code}' "https://127.0.0.1:$(port_of "$1")/healthz" 2>/dev/null
}

node_start() {
    HOLDFAST_CONF=$T/holdfast-node$1.conf "$HOLDFASTD" -f -c "$T/node$1.conf" \
        >>"$T/node$1.out" 2>&1 &
    eval "PID$1=$!"
    _i=0
    until healthz "$1" | grep -q ' 200$'; do
        _i=$((_i + 1))
        [ "$_i" -lt 300 ] || { cat "$T/node$1.out"; hf_fail "node $1 did not answer /healthz in 30 s"; }
        sleep 0.1
    done
}

node_stop() {
    eval "_p=\$PID$1"
    [ -z "$_p" ] || { kill -INT "$_p" 2>/dev/null; wait "$_p" 2>/dev/null; }
    eval "PID$1="
}

node_reap() {
    eval "_p=\$PID$1"
    node_rc=0
    wait "$_p" || node_rc=$?
    node_ms=$(($(hf_now_ms) - t_term))
    eval "PID$1="
}

haproxy_start() {
    (cd "$T" && exec haproxy -db -f haproxy.cfg) >"$T/haproxy.out" 2>&1 &
    HAPROXY_PID=$!
    hf_on_exit "kill $HAPROXY_PID"
    # Every node it may pick up in HAProxy's eyes (rise 2 at 500 ms) before the caller's load.
    _i=0
    until curl -s $TLS -o /dev/null "https://127.0.0.1:$PH/healthz"; do
        _i=$((_i + 1))
        [ "$_i" -lt 100 ] || { cat "$T/haproxy.out"; hf_fail "HAProxy did not pass /healthz in 10 s"; }
        sleep 0.1
    done
    sleep 1.2
}
