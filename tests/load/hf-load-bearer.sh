#!/bin/sh
# hf-load's bearer-token builders against the real plugins, in the holdfastd that
# `make perf-report` measures (load-gateway.sh): every ekm-wrap, cse-wrap and cse-unwrap call of a
# short run is accepted (its minted tokens pass the plugin's checks, its blob and key checks pass,
# no errors), so the report cannot quietly measure refusals. A plugin that is not built is left
# out; none built skips.
. "${top_srcdir:-.}/tests/integration/lib.sh"

HF_LOAD=${HF_LOAD:-$top_builddir/tests/load/hf-load}
HOLDFASTD=${HOLDFASTD:-$top_builddir/gateway/holdfastd}
[ -x "$HF_LOAD" ] || hf_fail "$HF_LOAD is not built"
[ -x "$HOLDFASTD" ] || hf_skip "$HOLDFASTD not built"
for p in curl openssl; do
    command -v "$p" >/dev/null || hf_skip "$p not installed"
done
plugins=""
for p in gcp-ekm gws-cse; do
    [ -f "$top_builddir/gateway/plugins/$p/.libs/$p.so" ] && plugins="$plugins $p"
done
[ -n "$plugins" ] || hf_skip "neither gcp-ekm nor gws-cse is built"
hf_store_setup
. "$top_srcdir/tests/load/load-gateway.sh"
# shellcheck disable=SC2086
hf_load_gateway_start $plugins

for p in $plugins; do
    case $p in gcp-ekm) apis=ekm-wrap ;; gws-cse) apis="cse-wrap cse-unwrap" ;; esac
    for api in $apis; do
        # shellcheck disable=SC2046
        hf_expect_exit 0 "$HF_LOAD" $(hf_load_args "$api" "$p") --vus 4 --ramp-up 0 --steady 1s \
            --ramp-down 0 --pause 0 --no-progress --csv "$HF_TMP/$api.csv"
        awk -F, -v api="$api" 'NR == 2 {
            printf "hf-load %s, 4 VUs for 1 s: %s ops, p99 %s ms, %s errors\n", api, $11, $19, $22
            exit !($11 > 0 && $22 == 0) }' "$HF_TMP/$api.csv" ||
            hf_fail "hf-load $api: not every call accepted: $(cat "$HF_OUT" "$HF_ERR")"
    done
done
# The setup wraps of cse-unwrap are audited like every call: the log verifies.
"$HF_CLI" audit verify >/dev/null || hf_fail "holdfast audit verify"
