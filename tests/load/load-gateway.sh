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
# The HYOK APIs beyond the seeds' first three each get a listener of their own: oci-ekms (an
# AES-256 key linked as VAULT/KEY_UUID in a vault minted here, IDCS-style tokens signed by k1),
# sap-hyok (mutual TLS: a client CA and certificate made here, the certificate's SHA-256 pinned
# on a keystore minted here; an AES-256 key for sap-decrypt and an RSA-3072 key for
# sap-rsa-decrypt, each linked as KEYSTORE/KEY_UUID) and ms-dke (an RSA-2048 key, Microsoft's
# reference size, linked by its key name; Entra-style tokens signed by k1).
# HF_LOAD_SUCCESS_EVENTS_OFF: plugins whose success audit events are off ([audit]
# success_events.NAME = no; their failures stay recorded), e.g. "sap-hyok" for bench-sap.
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
HF_LOAD_DKE_USER=reader@hf-load.test
HF_LOAD_SAP_TENANT=hf-load-tenant
HF_LOAD_OCI_ISSUER=https://identity.oraclecloud.com/
HF_LOAD_DKE_ISSUER=https://sts.windows.net/00000000-0000-4000-8000-00000000d4e0/

# The UUID of key NAME (the OCI and SAP external key ids).
hf_load_key_uuid() {
    "$HF_CLI" --json key show "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["uuid"])'
}

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
    # The token's defaults are what the vault is configured with: IDCS's issuer, the URL.
    oci-ekms) echo "--vault-id $HF_LOAD_OCI_VAULT --key-id $(cat "$HF_TMP/uuid.load-oci-ekms")" \
        "--token-key $HF_LOAD_JWKS/k1.pem --token-kid k1" ;;
    sap-hyok)
        _k=load-sap-hyok
        [ "$1" = sap-rsa-decrypt ] && _k=load-sap-hyok-rsa
        echo "--keystore-id $HF_LOAD_SAP_KEYSTORE --key-id $(cat "$HF_TMP/uuid.$_k")" \
            "--tenant $HF_LOAD_SAP_TENANT --cert $HF_LOAD_PKI/client.pem --key $HF_LOAD_PKI/client.key"
        ;;
    ms-dke) echo "--prefix dke --key-id load-ms-dke-link --token-key $HF_LOAD_JWKS/k1.pem" \
        "--token-kid k1 --issuer $HF_LOAD_DKE_ISSUER --email $HF_LOAD_DKE_USER" ;;
    esac
}

# SAP's client: a CA of its own (SAP Cloud Root CA's stand-in), a certificate it signed, and
# that certificate's pin (SHA-256 of its DER).
_hf_load_client_pki() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=hf-load client CA" -keyout "$HF_LOAD_PKI/client-ca.key" \
        -out "$HF_LOAD_PKI/client-ca.pem" >/dev/null 2>&1 &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=hf-load-sap \
            -keyout "$HF_LOAD_PKI/client.key" -out "$HF_LOAD_PKI/client.csr" >/dev/null 2>&1 &&
        openssl x509 -req -in "$HF_LOAD_PKI/client.csr" -CA "$HF_LOAD_PKI/client-ca.pem" \
            -CAkey "$HF_LOAD_PKI/client-ca.key" -CAcreateserial -days 2 \
            -out "$HF_LOAD_PKI/client.pem" >/dev/null 2>&1 || hf_fail "openssl: no client certificate"
    HF_LOAD_SAP_PIN=$(openssl x509 -in "$HF_LOAD_PKI/client.pem" -outform DER | sha256sum | cut -d' ' -f1)
}

# A key (ALG) named NAME for PLUGIN, linked as LINK_ID; its UUID in $HF_TMP/uuid.NAME.
_hf_load_key() { # PLUGIN NAME ALG LINK_ID (LINK_ID may hold UUID for the key's own)
    "$HF_CLI" key create "$2" --alg "$3" >/dev/null || hf_fail "holdfast key create $2"
    hf_load_key_uuid "$2" >"$HF_TMP/uuid.$2" || hf_fail "no UUID for key $2"
    "$HF_CLI" link add "$1" "$(echo "$4" | sed "s/UUID/$(cat "$HF_TMP/uuid.$2")/")" "$2" \
        >/dev/null || hf_fail "holdfast link add $1 $4"
}

_hf_load_keys() { # PLUGIN: its keys and links
    case $1 in
    oci-ekms) _hf_load_key "$1" "load-$1" AES-256 "$HF_LOAD_OCI_VAULT/UUID" ;;
    sap-hyok)
        _hf_load_key "$1" "load-$1" AES-256 "$HF_LOAD_SAP_KEYSTORE/UUID"
        _hf_load_key "$1" "load-$1-rsa" RSA-3072 "$HF_LOAD_SAP_KEYSTORE/UUID"
        ;;
    ms-dke) _hf_load_key "$1" "load-$1" RSA-2048 "load-$1-link" ;;
    *)
        "$HF_CLI" key create "load-$1" >/dev/null || hf_fail "holdfast key create load-$1"
        "$HF_CLI" link add "$1" "load-$1-link" "load-$1" >/dev/null ||
            hf_fail "holdfast link add $1"
        ;;
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
    HF_LOAD_OCI_VAULT=$("$HF_CLI" uuid)
    HF_LOAD_SAP_KEYSTORE=$("$HF_CLI" uuid)
    _hf_load_client_pki
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
    oci-ekms)
        printf '\n[oci-ekms:load]\nvault_id = %s\nissuer = %s\naudience = https://127.0.0.1:%s/\n' \
            "$HF_LOAD_OCI_VAULT" "$HF_LOAD_OCI_ISSUER" "$(hf_load_port oci-ekms)"
        printf 'jwks = %s\n' "$HF_LOAD_JWKS/jwks.json"
        ;;
    sap-hyok)
        printf '\n[sap-hyok:%s]\ntenant = %s\npins = %s\n' "$HF_LOAD_SAP_KEYSTORE" \
            "$HF_LOAD_SAP_TENANT" "$HF_LOAD_SAP_PIN"
        ;;
    ms-dke)
        printf '\n[ms-dke]\nprefix = /dke\nbase_url = https://127.0.0.1:%s/dke\nissuers = %s\n' \
            "$(hf_load_port ms-dke)" "$HF_LOAD_DKE_ISSUER"
        printf 'jwks = %s\nkey.load-ms-dke-link.allowed_emails = %s\n' \
            "$HF_LOAD_JWKS/jwks.json" "$HF_LOAD_DKE_USER"
        ;;
    esac
}

_hf_load_listener_extra() { # LISTENER: what its TLS adds (SAP: the client certificate)
    case $1 in
    sap-hyok) printf 'client_ca = %s\nclient_certificate = required\n' "$HF_LOAD_PKI/client-ca.pem" ;;
    esac
}

hf_load_gateway_start() { # PLUGIN...
    _hf_load_secrets "$@"
    for _p; do
        # The CLI links only registered types; holdfastd registers its plugins' at start.
        "$HF_CLI" link type add "$_p" >/dev/null || hf_fail "holdfast link type add $_p"
        _hf_load_keys "$_p"
        _l=$(_hf_load_listener "$_p")
        [ -f "$HF_TMP/port.$_l" ] || hf_free_port >"$HF_TMP/port.$_l"
        echo "$_p" >>"$HF_TMP/plugins.$_l"
    done
    HF_LOAD_PLUGINS=$*
    _hf_load_run
}

# The same gateway again (same keys, ports and secrets) with the config rewritten, e.g. after
# HF_LOAD_SUCCESS_EVENTS_OFF changed.
hf_load_gateway_restart() {
    hf_gateway_stop || true
    _hf_load_run
}

_hf_load_conf() {
    printf '[gateway]\nmax_connections = 8192\n'
    echo "# Every virtual user comes from 127.0.0.1: no per-address limit."
    printf 'max_connections_per_address = 0\nmodule = %s\npin_file = %s\nplugins = %s\nlog = %s\n' \
        "$HF_MODULE" "$HOLDFAST_STATE_DIR/token-gateway.pin" \
        "$(echo "$HF_LOAD_PLUGINS" | sed 's/ /, /g')" "$HF_TMP/holdfastd.log"
    for _f in "$HF_TMP"/plugins.*; do
        _l=${_f##*/plugins.}
        printf '\n[listener:%s]\nlisten = 127.0.0.1:%s\ncert = %s\nkey = %s\nplugins = %s\n' \
            "$_l" "$(cat "$HF_TMP/port.$_l")" "$HF_LOAD_PKI/server.pem" \
            "$HF_LOAD_PKI/server.key" "$(paste -sd, "$_f")"
        _hf_load_listener_extra "$_l"
    done
    if [ -n "${HF_LOAD_SUCCESS_EVENTS_OFF:-}" ]; then
        printf '\n[audit]\n'
        for _p in $HF_LOAD_SUCCESS_EVENTS_OFF; do printf 'success_events.%s = no\n' "$_p"; done
    fi
    for _p in $HF_LOAD_PLUGINS; do _hf_load_section "$_p"; done
}

_hf_load_run() {
    _hf_load_conf >"$HF_TMP/holdfastd.conf"
    chmod 600 "$HF_TMP/holdfastd.conf"
    # hf_gateway_start's curl asks /healthz over TLS: the curl tool (not libcurl, so not
    # holdfastd) takes the certificate from CURL_CA_BUNDLE, and the client certificate a SAP
    # listener requires from the .curlrc in CURL_HOME (offered to the others, which ignore it).
    mkdir -p "$HF_TMP/curl-home"
    printf 'cert = "%s"\nkey = "%s"\n' "$HF_LOAD_PKI/client.pem" "$HF_LOAD_PKI/client.key" \
        >"$HF_TMP/curl-home/.curlrc"
    CURL_CA_BUNDLE=$HF_LOAD_PKI/server.pem CURL_HOME=$HF_TMP/curl-home
    export CURL_CA_BUNDLE CURL_HOME
    set -- $HF_LOAD_PLUGINS
    hf_gateway_start "https://127.0.0.1:$(hf_load_port "$1")" "$HOLDFASTD" -f \
        -c "$HF_TMP/holdfastd.conf"
    unset CURL_CA_BUNDLE CURL_HOME
}
