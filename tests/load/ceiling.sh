#!/bin/sh
# hf-load's own ceiling: against nginx's static reply on loopback, hf-load must drive at least
# 70% of what wrk drives with the same connections and threads, measured in the same run (rounds
# alternate wrk and hf-load, so a noisy neighbour hurts both alike; medians are compared).
#
#   make perf-ceiling            or    HF_LOAD=path/to/hf-load sh tests/load/ceiling.sh
# Knobs: HF_CEILING_CONNS (50), HF_CEILING_SECS (10), HF_CEILING_ROUNDS (3),
#        HF_CEILING_MIN (0.70), HF_CEILING_TLS (1: also measure https, reported only).
# Exit: 0 the ratio holds over http, 1 it does not, 77 wrk or nginx missing and not installable.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/nginx.sh"

HF_LOAD=${HF_LOAD:-./tests/load/hf-load}
conns=${HF_CEILING_CONNS:-50}
secs=${HF_CEILING_SECS:-10}
rounds=${HF_CEILING_ROUNDS:-3}
min=${HF_CEILING_MIN:-0.70}
threads=$(nproc 2>/dev/null || echo 2)

[ -x "$HF_LOAD" ] || { echo "ceiling: $HF_LOAD not built (make tests/load/hf-load)" >&2; exit 1; }
if ! command -v wrk >/dev/null 2>&1 || [ -z "$(hf_nginx_bin)" ]; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            wrk nginx-light >/dev/null 2>&1 ||
            { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
              DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                  wrk nginx-light >/dev/null; }
    fi
    command -v wrk >/dev/null 2>&1 && [ -n "$(hf_nginx_bin)" ] ||
        { echo "SKIP: wrk and nginx are needed (apt-get install wrk nginx-light)"; exit 77; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hf-ceiling.XXXXXX")
trap 'hf_nginx_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
port=$(free_port)
tls_port=$(free_port)
hf_nginx_start "$tmp/nginx" "$port" "$tls_port" || { echo "ceiling: nginx did not start" >&2;
    cat "$tmp/nginx/error.log" >&2; exit 1; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# measure URL EXTRA_HF_LOAD_ARGS: prints "wrk_median hf_median"
measure() {
    url=$1
    shift
    : >"$tmp/wrk" && : >"$tmp/hf"
    r=1
    while [ "$r" -le "$rounds" ]; do
        wrk -t"$threads" -c"$conns" -d"${secs}s" "$url" >"$tmp/wrk.out" 2>&1
        awk '/^Requests\/sec:/ {print $2}' "$tmp/wrk.out" >>"$tmp/wrk"
        "$HF_LOAD" --url "$url" --api static --vus "$conns" --threads "$threads" \
            --ramp-up 0 --steady "${secs}s" --ramp-down 0 --quiet --no-progress "$@" \
            --csv "$tmp/hf.csv" >"$tmp/hf.out" 2>&1 ||
            { echo "ceiling: hf-load failed:" >&2; cat "$tmp/hf.out" >&2; exit 1; }
        awk -F, 'NR == 2 {print $12}' "$tmp/hf.csv" >>"$tmp/hf"
        printf '  round %d: wrk %s req/s, hf-load %s ops/s\n' "$r" "$(tail -n1 "$tmp/wrk")" \
            "$(tail -n1 "$tmp/hf")" >&2
        r=$((r + 1))
    done
    echo "$(median <"$tmp/wrk") $(median <"$tmp/hf")"
}

echo "hf-load ceiling against nginx's static reply: $conns connections, $threads threads," \
     "$secs s x $rounds rounds each, alternating"
echo "  wrk -t$threads -c$conns -d${secs}s URL"
echo "  hf-load --url URL --api static --vus $conns --threads $threads --ramp-up 0" \
     "--steady ${secs}s --ramp-down 0"
rc=0
for proto in http https; do
    if [ "$proto" = https ]; then
        [ "${HF_CEILING_TLS:-1}" = 1 ] || continue
        set -- "$(measure "https://127.0.0.1:$tls_port/" --insecure)"
    else
        set -- "$(measure "http://127.0.0.1:$port/")"
    fi
    # shellcheck disable=SC2086
    set -- $1
    ratio=$(awk -v a="$2" -v b="$1" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
    verdict=$(awk -v r="$ratio" -v m="$min" 'BEGIN {print (r >= m) ? "ok" : "BELOW"}')
    printf '%-5s  wrk %10.1f req/s   hf-load %10.1f ops/s   ratio %s (needs %s) %s\n' \
        "$proto" "$1" "$2" "$ratio" "$min" "$verdict"
    if [ "$proto" = http ] && [ "$verdict" != ok ]; then rc=1; fi
done
exit $rc
