#!/bin/sh
# make bench-cluster (issue 15, must-show 5): AWS XKS encrypt on the two-node sample of
# conf/cluster/ (PostgreSQL store, TLS with client certificates, cluster-lib.sh), in one run on
# the same cores:
#   direct   hf-load straight to node 1 (node 2 stopped)
#   1 node   through HAProxy, node 2 stopped: what the balancer adds
#   2 nodes  through HAProxy, both nodes
# Each row: throughput, and the CPU each part spent per request (from /proc: the holdfastd
# nodes, HAProxy, every PostgreSQL process, and the rest of the machine, mostly hf-load), plus
# the store's transactions per second (pg_stat_database).
#
# The model, from those per-request costs: a node serves 1000 / node-ms requests per second per
# core; the store's cost is per transaction, and the request path makes none (the link and key
# caches answer; a node asks the store again for each link it serves at most every
# HF_LINK_CACHE_MS, and when a NOTIFY says something changed), so PostgreSQL's load follows
# nodes x links, not the request rate. The check: the 2-node row's throughput predicted from the
# direct and 1-node rows' costs (every part's ms per request summed, over the cores this machine
# has), against the one measured. On one machine two nodes share its cores with HAProxy, the
# store and the client: the 2-node row can only show that the costs add up, not a speed-up.
#
# Knobs: BENCH_SECONDS (steady seconds per row, 10), BENCH_CONNECTIONS (VUs, 16),
# BENCH_CLUSTER_OUT (default $top_builddir/bench-cluster: bench-cluster.md).
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
seconds=${BENCH_SECONDS:-10}
vus=${BENCH_CONNECTIONS:-16}
OUT=${BENCH_CLUSTER_OUT:-$top_builddir/bench-cluster}

set +u # lib.sh reads unset variables on purpose
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/cluster-lib.sh"
cluster_setup
mkdir -p "$OUT" || hf_fail "cannot make $OUT"
CORES=$(nproc)
TCK=$(getconf CLK_TCK)
echo "bench-cluster: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# CPU ticks (user + system) of the processes given, and of the whole machine.
ticks_of() {
    for _p; do awk '{ print $14 + $15 }' "/proc/$_p/stat" 2>/dev/null; done | awk '{ s += $1 } END { print s + 0 }'
}
pg_pids() {
    _pm=$(head -n 1 "$HF_PG_DIR/data/postmaster.pid")
    echo "$_pm"
    for _s in /proc/[0-9]*/stat; do
        awk -v pm="$_pm" '$4 == pm { print $1 }' "$_s" 2>/dev/null
    done
}
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
pg_xacts() {
    psql -qtA -h 127.0.0.1 -p "$HF_PG_PORT" -U holdfast -d holdfast \
        -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'holdfast'"
}
nodes_pids() { eval "echo \$PID1 \$PID2"; }

# row NAME URL: one hf-load run; appends "NAME ops ops/s node_ms haproxy_ms pg_ms other_ms
# total_ms busy_cores pg_xact/s" to $T/rows.
row() {
    _pg=$(pg_pids)
    _n0=$(ticks_of $(nodes_pids))
    _h0=$(ticks_of $HAPROXY_PID)
    _s0=$(ticks_of $_pg)
    _b0=$(busy_ticks)
    _x0=$(pg_xacts)
    _t0=$(hf_now_ms)
    "$HF_LOAD" --url "$2" --api xks-encrypt --key-id k --vus "$vus" --ramp-up 0 \
        --steady "${seconds}s" --ramp-down 0 --no-progress --quiet $TLS --csv "$T/$1.csv" \
        >"$T/$1.out" 2>&1 || { cat "$T/$1.out"; hf_fail "hf-load ($1) failed"; }
    _ms=$(($(hf_now_ms) - _t0))
    _n=$(($(ticks_of $(nodes_pids)) - _n0))
    _h=$(($(ticks_of $HAPROXY_PID) - _h0))
    _s=$(($(ticks_of $_pg) - _s0))
    _b=$(($(busy_ticks) - _b0))
    _x=$(($(pg_xacts) - _x0))
    _ops=$(awk -F, 'NR == 2 { print $11 }' "$T/$1.csv")
    _errors=$(awk -F, 'NR == 2 { print $22 }' "$T/$1.csv")
    [ "${_errors:-1}" -eq 0 ] || hf_fail "$1: $_errors requests failed"
    awk -v name="$1" -v ops="$_ops" -v ms="$_ms" -v n="$_n" -v h="$_h" -v s="$_s" -v b="$_b" \
        -v x="$_x" -v tck="$TCK" -v secs="$seconds" 'BEGIN {
            per = 1000 / tck / ops
            printf "%s %d %.0f %.4f %.4f %.4f %.4f %.4f %.2f %.1f\n", name, ops, ops / secs,
                n * per, h * per, s * per, (b - n - h - s) * per, b * per, b / tck / (ms / 1000),
                x / (ms / 1000)
        }' >>"$T/rows"
}

# direct and 1 node: node 1 alone; HAProxy up with node 2 down in its eyes.
node_start 1
haproxy_start
sleep 1.5 # fall 2 at 500 ms: node 2 marked down, so no connection is retried past it
row direct "https://127.0.0.1:$P1"
row one-node "https://127.0.0.1:$PH"
node_start 2
sleep 1.5 # rise 2 at 500 ms
row two-nodes "https://127.0.0.1:$PH"
echo "bench-cluster: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

awk -v cores="$CORES" -v vus="$vus" -v secs="$seconds" '
    { name[NR] = $1; rate[NR] = $3; node[NR] = $4; hap[NR] = $5; pg[NR] = $6; other[NR] = $7
      total[NR] = $8; busy[NR] = $9; xps[NR] = $10 }
    END {
        printf "XKS encrypt, %d VUs, %d s per row, TLS with client certificates, %d cores\n\n", vus, secs, cores
        print "| setup | ops/s | node ms/req | HAProxy ms/req | PostgreSQL ms/req | client+rest ms/req | total ms/req | cores busy | store xact/s |"
        print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        for (i = 1; i <= NR; i++)
            printf "| %s | %.0f | %.4f | %.4f | %.4f | %.4f | %.4f | %.2f | %.1f |\n", name[i],
                rate[i], node[i], hap[i], pg[i], other[i], total[i], busy[i], xps[i]
        # The model: per-request costs from the direct row (node, store, client) and the
        # balancer from the 1-node row; the cores the 2-node row kept busy, over their sum.
        cost = node[1] + pg[1] + other[1] + hap[2]
        pred = busy[3] * 1000 / cost
        printf "\nModel: a node costs %.3f ms of CPU per request (%.0f requests/s per core); the store %.4f ms",
            node[1], 1000 / node[1], pg[1]
        printf " (%.1f transactions/s for the whole run: cache refreshes, not requests); HAProxy %.3f ms.\n", xps[1], hap[2]
        printf "2 nodes predicted from those costs on the %.2f cores the run kept busy: %.0f ops/s;", busy[3], pred
        printf " measured %.0f (ratio %.2f).\n", rate[3], rate[3] / pred
        # The store: its CPU per transaction over both HAProxy rows (the most transactions).
        xms = (pg[2] * rate[2] + pg[3] * rate[3]) / (xps[2] + xps[3])
        printf "Store: %.3f ms of PostgreSQL CPU per transaction, %.0f transactions/s per core;", xms, 1000 / xms
        printf " a node made %.1f/s here, serving 2 links: cache refreshes (each link and key read", xps[1]
        printf " again at most every 500 ms) and audit checkpoints, whatever the request rate.\n"
    }' "$T/rows" | tee "$OUT/bench-cluster.md"
cp "$T/rows" "$OUT/bench-cluster.rows"
