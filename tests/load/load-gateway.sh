# A local holdfastd for hf-load to measure (perf-report.sh, tests/perf/bench-ekm.sh): sourced
# after tests/integration/lib.sh and hf_store_setup (the key store), with HOLDFASTD, HF_CLI and
# HF_LOAD set.
#
#   hf_load_gateway_start PLUGIN...   for each plugin a key and a link of its type, its config
#                       section and its listener (aws-xks alone on one, the bearer-token APIs
#                       gcp-ekm and gws-cse together on another, all TLS with one self-signed
#                       certificate), then holdfastd -f; fails unless /healthz answers in 30 s
#   hf_load_port PLUGIN the port serving PLUGIN
#   hf_load_args API PLUGIN   hf-load's target and API arguments for API of PLUGIN (words)
#
# Secrets and tokens are made for the run: a SigV4 pair in HF_LOAD_CREDENTIALS (exported: hf-load
# reads it, so the secret stays out of the process list), RSA keys k1 (the EKM ID token, the CSE
# authentication token) and k2 (the CSE authorization token, as Google's own issuer signs with
# a key of its own), made by openssl and published in $HF_LOAD_JWKS/jwks.json by hf-load
# --print-jwks, the key set of the very keys it signs with.
# Default threads and audit (durable records before each answer).

HF_LOAD_XKS_PREFIX=perf-report/store1
HF_LOAD_EKM_AGENT=service-hf-load@gcp-sa-ekms.iam.gserviceaccount.com
HF_LOAD_CSE_USER=user@hf-load.test

_hf_load_listener() {
    case $1 in
    gcp-ekm | gws-cse) echo bearer ;;
    *) echo "$1" ;;
    esac
}

hf_load_port() { cat "$HF_TMP/port.$(_hf_load_listener "$1")"; }

hf_load_args() {
    printf -- '--url https://127.0.0.1:%s --api %s --cacert %s ' "$(hf_load_port "$2")" "$1" \
        "$HF_LOAD_PKI/server.pem"
    case $2 in
    aws-xks) echo "--prefix $HF_LOAD_XKS_PREFIX --key-id load-aws-xks-link" ;;
    gcp-ekm) echo "--prefix ekm --key-id load-gcp-ekm-link --token-key $HF_LOAD_JWKS/k1.pem" \
        "--token-kid k1 --audience https://ekm.test --email $HF_LOAD_EKM_AGENT" ;;
    gws-cse) echo "--prefix cse --token-key $HF_LOAD_JWKS/k1.pem --token-kid k1" \
        "--authz-key $HF_LOAD_JWKS/k2.pem --authz-kid k2 --email $HF_LOAD_CSE_USER" ;;
    esac
}

_hf_load_secrets() { # PLUGIN...
    HF_LOAD_PKI=$HF_TMP/pki
    HF_LOAD_JWKS=$HF_TMP/jwks
    mkdir -p "$HF_LOAD_PKI" "$HF_LOAD_JWKS"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout "$HF_LOAD_PKI/server.key" \
        -out "$HF_LOAD_PKI/server.pem" >/dev/null 2>&1 || hf_fail "openssl: no server certificate"
    # AKID 20 of [A-Z2-7], secret 44 of base64.
    HF_LOAD_CREDENTIALS="$(head -c 512 /dev/urandom | tr -dc 'A-Z2-7' | head -c 20):$(openssl rand -base64 33)"
    export HF_LOAD_CREDENTIALS
    for _k in k1 k2; do
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
            -out "$HF_LOAD_JWKS/$_k.pem" 2>/dev/null || hf_fail "openssl: no RSA key $_k"
    done
    "$HF_LOAD" --print-jwks --token-key "$HF_LOAD_JWKS/k1.pem" --token-kid k1 \
        --authz-key "$HF_LOAD_JWKS/k2.pem" --authz-kid k2 >"$HF_LOAD_JWKS/jwks.json" ||
        hf_fail "hf-load --print-jwks"
}

_hf_load_section() { # PLUGIN: its config section
    printf '\n[plugin:%s]\npath = %s\n' "$1" "$top_builddir/gateway/plugins/$1/.libs/$1.so"
    case $1 in
    aws-xks)
        printf '\n[aws-xks]\nhealth_key = load-aws-xks-link\n'
        printf '\n[aws-xks:load]\nprefix = %s\ncredential = %s\nregions = us-east-1\nkeys = *\n' \
            "$HF_LOAD_XKS_PREFIX" "$HF_LOAD_CREDENTIALS"
        ;;
    gcp-ekm)
        printf '\n[gcp-ekm:load]\nprefix = /ekm\naudiences = https://ekm.test\njwks = %s\n' \
            "$HF_LOAD_JWKS/jwks.json"
        printf 'key.load-gcp-ekm-link.allowed_emails = %s\n' "$HF_LOAD_EKM_AGENT"
        ;;
    gws-cse)
        printf '\n[gws-cse:load]\nprefix = /cse\nkacls_url = https://127.0.0.1:%s/cse\n' \
            "$(hf_load_port gws-cse)"
        printf 'kek = load-gws-cse-link\nauthn.load.issuer = https://idp.hf-load.test\n'
        printf 'authn.load.jwks = %s\nauthn.load.audiences = hf-load\nauthz_jwks = %s\n' \
            "$HF_LOAD_JWKS/jwks.json" "$HF_LOAD_JWKS/jwks.json"
        ;;
    esac
}

hf_load_gateway_start() { # PLUGIN...
    _hf_load_secrets "$@"
    for _p; do
        # The CLI links only registered types; holdfastd registers its plugins' at start.
        "$HF_CLI" link type add "$_p" >/dev/null || hf_fail "holdfast link type add $_p"
        "$HF_CLI" key create "load-$_p" >/dev/null || hf_fail "holdfast key create load-$_p"
        "$HF_CLI" link add "$_p" "load-$_p-link" "load-$_p" >/dev/null ||
            hf_fail "holdfast link add $_p"
        _l=$(_hf_load_listener "$_p")
        [ -f "$HF_TMP/port.$_l" ] || hf_free_port >"$HF_TMP/port.$_l"
        echo "$_p" >>"$HF_TMP/plugins.$_l"
    done
    {
        printf '[gateway]\nmax_connections = 8192\n'
        echo "# Every virtual user comes from 127.0.0.1: no per-address limit."
        printf 'max_connections_per_address = 0\nmodule = %s\npin_file = %s\nplugins = %s\nlog = %s\n' \
            "$HF_MODULE" "$HOLDFAST_STATE_DIR/token-gateway.pin" "$(echo "$*" | sed 's/ /, /g')" \
            "$HF_TMP/holdfastd.log"
        for _f in "$HF_TMP"/plugins.*; do
            _l=${_f##*/plugins.}
            printf '\n[listener:%s]\nlisten = 127.0.0.1:%s\ncert = %s\nkey = %s\nplugins = %s\n' \
                "$_l" "$(cat "$HF_TMP/port.$_l")" "$HF_LOAD_PKI/server.pem" \
                "$HF_LOAD_PKI/server.key" "$(paste -sd, "$_f")"
        done
        for _p; do _hf_load_section "$_p"; done
    } >"$HF_TMP/holdfastd.conf"
    chmod 600 "$HF_TMP/holdfastd.conf"
    # hf_gateway_start's curl asks /healthz over TLS: the curl tool (not libcurl, so not
    # holdfastd) takes the certificate from CURL_CA_BUNDLE.
    CURL_CA_BUNDLE=$HF_LOAD_PKI/server.pem
    export CURL_CA_BUNDLE
    hf_gateway_start "https://127.0.0.1:$(hf_load_port "$1")" "$HOLDFASTD" -f \
        -c "$HF_TMP/holdfastd.conf"
    unset CURL_CA_BUNDLE
}
