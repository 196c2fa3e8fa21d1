#!/bin/sh
# hf-fault-shim (tests/shim/): HSMs that fail, for HSM pool tests. Two copies of the shim over
# one SoftHSMv2 token dir are independent members: keygen, listing and encryption through a copy
# give what SoftHSMv2 gives directly; a dead file makes a copy answer CKR_DEVICE_ERROR until it
# goes, the other copy unaffected; fail_permille = 500 fails some calls and passes others, each
# failure counted in the stats file; latency_us slows a call. In one long-lived process (a python3
# ctypes client) a changed config, the dead file and a dump request take effect mid-run. Last, a
# network HSM: p11-kit server + a copy of p11-kit-client.so behind the shim, whose server is
# killed and restarted (what the client sees then is asserted, and written in
# tests/shim/README.md).
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/shim-lib.sh"

command -v pkcs11-tool >/dev/null || hf_skip "pkcs11-tool (OpenSC) not installed"
shim_need
hf_tmpdir
T=$HF_TMP
shim_tokens "shim A" "shim B"
shim_copy shimcopy1
S1=$SHIM_COPY
shim_copy shimcopy2
S2=$SHIM_COPY
conf "$S1"
conf "$S2"

# p11 MODULE TOKEN ARGS...: pkcs11-tool on one token, its output in $HF_OUT and $HF_ERR.
p11() {
    _m=$1 _t=$2
    shift 2
    HF_OUT="$T/p11.out" HF_ERR="$T/p11.err"
    OPENSSL_CONF=/dev/null hf_ext pkcs11-tool --module "$_m" --token-label "$_t" "$@" \
        >"$HF_OUT" 2>"$HF_ERR"
}
p11_ok() { p11 "$@" || hf_fail "pkcs11-tool $*: $(cat "$HF_ERR")"; }
# stat_of COPY KEY: a counter from COPY's stats file, written by the last process that used it.
stat_of() { sed -n "s/^$2 = //p" "$1.stats"; }

# 1. Through the two copies, one token each: what SoftHSMv2 itself does.
p11_ok "$S1" "shim A" --login --pin 1234 --keygen --key-type AES:32 --label k1 --id 01
p11_ok "$S2" "shim B" --login --pin 1234 --keygen --key-type AES:32 --label k2 --id 02
p11_ok "$S1" "shim A" --login --pin 1234 --list-objects
grep -q "label: *k1" "$HF_OUT" || hf_fail "copy 1 does not list k1: $(cat "$HF_OUT")"
p11_ok "$SOFTHSM_MODULE" "shim A" --login --pin 1234 --list-objects --type secrkey
grep -q "label: *k1" "$HF_OUT" || hf_fail "SoftHSMv2 does not list k1 made through the shim"
head -c 100 /dev/urandom >"$T/plain"
iv=000102030405060708090a0b0c0d0e0f
for via in "$S1" "$SOFTHSM_MODULE"; do
    p11_ok "$via" "shim A" --login --pin 1234 --encrypt -m AES-CBC-PAD --iv $iv --id 01 \
        -i "$T/plain" -o "$T/ct.$(basename "$via")"
done
cmp -s "$T/ct.shimcopy1.so" "$T/ct.$(basename "$SOFTHSM_MODULE")" ||
    hf_fail "AES-CBC-PAD through the shim differs from SoftHSMv2's"
p11_ok "$S2" "shim B" --login --pin 1234 --list-objects
grep -q "label: *k2" "$HF_OUT" || hf_fail "copy 2 does not list k2"
check "$(stat_of "$S2" injected)" 0 "faults injected with none configured"

# 2. The dead file: copy 1 answers CKR_DEVICE_ERROR, copy 2 works on; removed, copy 1 works.
touch "$S1.dead"
p11 "$S1" "shim A" --login --pin 1234 --list-objects && hf_fail "a dead copy 1 listed objects"
grep -q CKR_DEVICE_ERROR "$HF_ERR" || hf_fail "dead copy 1: no CKR_DEVICE_ERROR: $(cat "$HF_ERR")"
[ "$(stat_of "$S1" injected_dead)" -ge 1 ] || hf_fail "stats count no dead-file failure"
p11_ok "$S2" "shim B" --login --pin 1234 --list-objects
grep -q "label: *k2" "$HF_OUT" || hf_fail "copy 2 stopped working while copy 1 is dead"
rm "$S1.dead"
p11_ok "$S1" "shim A" --login --pin 1234 --list-objects
grep -q "label: *k1" "$HF_OUT" || hf_fail "copy 1 did not come back when its dead file went"
p11_ok "$S2" "shim B" --login --pin 1234 --list-objects

# 3. fail_permille = 500. --generate-random makes one call that may fail (C_OpenSession), so
# each run is one coin toss: 40 runs all alike has odds 2^-39. Every failure is counted.
conf "$S1" "fail_permille = 500"
pass=0 fail=0 injected=0
for i in $(seq 40); do
    if p11 "$S1" "shim A" --generate-random 16; then
        pass=$((pass + 1))
    else
        grep -q CKR_DEVICE_ERROR "$HF_ERR" || hf_fail "run $i failed otherwise: $(cat "$HF_ERR")"
        fail=$((fail + 1))
    fi
    injected=$((injected + $(stat_of "$S1" injected_random)))
done
echo "fail_permille = 500: $pass of 40 runs passed, $fail failed, $injected failures injected"
[ "$pass" -gt 0 ] && [ "$fail" -gt 0 ] || hf_fail "fail_permille = 500: $pass passed, $fail failed"
check "$injected" "$fail" "failures the stats files count"
conf "$S1" "fail_permille = 0"
for i in $(seq 10); do
    p11_ok "$S1" "shim A" --generate-random 16
    check "$(stat_of "$S1" injected)" 0 "failures injected with fail_permille = 0"
done

# 4. latency_us = 200000: the one C_OpenSession of a run sleeps 0.2 s first.
conf "$S1" "latency_us = 200000"
t0=$(date +%s%N)
p11_ok "$S1" "shim A" --generate-random 16
ms=$((($(date +%s%N) - t0) / 1000000))
# Its stats measure those sleeps under the latency asked: every delayed call, each at least
# 0.2 s, all of them within the run.
set -- $(stat_of "$S1" op_slept_at_200000_us)
check "${1:-none}" "$(stat_of "$S1" op_forwarded)" "delayed calls measured at latency_us = 200000"
[ "$2" -ge $(($1 * 200000)) ] && [ "$2" -le $((ms * 1000)) ] ||
    hf_fail "the sleeps of $1 calls at 200000 us measured $2 us, in a run of $ms ms"
conf "$S1"
t0=$(date +%s%N)
p11_ok "$S1" "shim A" --generate-random 16
base=$((($(date +%s%N) - t0) / 1000000))
echo "latency_us = 200000: a run took $ms ms (without: $base ms)"
[ "$ms" -ge 200 ] || hf_fail "latency_us = 200000, yet a run took $ms ms"

# A long-lived client (python3 ctypes, no PKCS#11 binding needed): each argument is a step,
# each step prints "STEP RV" with RV in hex. open: C_OpenSession on the first slot (and close);
# open*N: N of them, printing how many failed and the milliseconds taken; sh:CMD runs CMD.
command -v python3 >/dev/null || hf_skip "python3 not installed (steps 1-4 passed)"
client() {
    OPENSSL_CONF=/dev/null hf_ext python3 - "$@" <<'PY'
import ctypes, os, subprocess, sys, time
u = ctypes.c_ulong
lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_LOCAL)
fl = ctypes.c_void_p()
assert lib.C_GetFunctionList(ctypes.byref(fl)) == 0
table = ctypes.cast(fl.value + 8, ctypes.POINTER(ctypes.c_void_p))  # after CK_VERSION, aligned
def fn(i, *args):
    return ctypes.CFUNCTYPE(u, *args)(table[i])
C_Initialize, C_Finalize = fn(0, ctypes.c_void_p), fn(1, ctypes.c_void_p)
C_GetSlotList = fn(4, ctypes.c_ubyte, ctypes.c_void_p, ctypes.POINTER(u))
C_OpenSession = fn(12, u, u, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(u))
C_CloseSession = fn(13, u)
def open_one():
    n = u(8)
    slots = (u * 8)()
    rv = C_GetSlotList(1, slots, ctypes.byref(n))
    if rv != 0 or n.value == 0:
        return rv or 0xFFFFFFFF
    h = u()
    rv = C_OpenSession(slots[0], 4, None, None, ctypes.byref(h))  # CKF_SERIAL_SESSION
    if rv == 0:
        C_CloseSession(h)
    return rv
for step in sys.argv[2:]:
    if step == "init":
        print(step, hex(C_Initialize(None)))
    elif step == "fini":
        print(step, hex(C_Finalize(None)))
    elif step == "open":
        print(step, hex(open_one()))
    elif step.startswith("open*"):
        t0 = time.monotonic()
        failed = sum(open_one() != 0 for _ in range(int(step[5:])))
        print(step, failed, int((time.monotonic() - t0) * 1000))
    elif step.startswith("sh:"):
        subprocess.run(step[3:], shell=True, check=True)
    sys.stdout.flush()
PY
}
# step OUTPUT NAME: the answer of the first step NAME in OUTPUT, or of its INDEXth with NAME#INDEX.
step() { printf '%s\n' "$1" | awk -v s="${2%#*}" -v i="${2#*#}" \
    '$1 == s { n++; if (n == (i == s ? 1 : i)) { $1 = ""; sub(/^ /, ""); print; exit } }'; }

# 5. In one process: a changed config counts within 100 ms, so do the dead file and a dump
# request; nothing waits for C_Finalize.
out=$(client "$S1" init "open*20" \
    "sh:printf 'module = $SOFTHSM_MODULE\nfail_permille = 1000\n' >'$S1.conf.new'; mv '$S1.conf.new' '$S1.conf'; sleep 0.2" \
    "open*20" "sh:touch '$S1.dump'; sleep 0.2" \
    "sh:printf 'module = $SOFTHSM_MODULE\nlatency_us = 50000\ndead_file = $S1.dead\n' >'$S1.conf.new'; mv '$S1.conf.new' '$S1.conf'; sleep 0.2" \
    "open*4" "sh:touch '$S1.dead'; sleep 0.2" open "sh:rm '$S1.dead'; sleep 0.2" open fini) ||
    hf_fail "the long-lived client failed: $out"
echo "$out"
check "$(step "$out" init)" 0x0 "C_Initialize"
check "$(step "$out" 'open*20#1' | cut -d' ' -f1)" 0 "failures before the config changed"
check "$(step "$out" 'open*20#2' | cut -d' ' -f1)" 20 "failures after fail_permille = 1000 was written"
[ ! -e "$S1.dump" ] || hf_fail "the dump request was not answered"
check "$(stat_of "$S1" injected_random)" 20 "injected failures in the mid-run dump"
check "$(step "$out" 'open*4' | cut -d' ' -f1)" 0 "failures after fail_permille went"
[ "$(step "$out" 'open*4' | cut -d' ' -f2)" -ge 200 ] ||
    hf_fail "4 calls at latency_us = 50000 took $(step "$out" 'open*4' | cut -d' ' -f2) ms"
check "$(step "$out" open#1)" 0x30 "C_GetSlotList while the dead file exists"
check "$(step "$out" open#2)" 0x0 "C_OpenSession once the dead file went"
check "$(step "$out" fini)" 0x0 "C_Finalize"
check "$(stat_of "$S1" injected_dead)" 1 "dead-file failures in the stats of C_Finalize"
conf "$S1"

# A missing config: C_Initialize answers CKR_GENERAL_ERROR (0x5) with one line on stderr.
cp "$SHIM" "$T/noconf.so"
out=$(client "$T/noconf.so" init 2>"$T/noconf.err") || hf_fail "a missing config crashed: $out"
check "$out" "init 0x5" "C_Initialize without a config"
check "$(wc -l <"$T/noconf.err" | tr -d ' ')" 1 "lines on stderr without a config"

# Not in a sanitizer build: the client's steps run with the ASan runtime preloaded (hf_ext),
# under which its shell steps that kill and restart p11-kit server fail (pkcs11-certs.sh saw
# p11-kit hang under that runtime). pool-failover.sh kills and restarts a p11-kit server under
# load in every build.
if [ -n "$HF_SANITIZED" ]; then
    echo "fault-shim: the network HSM part is not run in a sanitizer build"
    echo "fault-shim: all checks passed"
    exit 0
fi

# 6. A network HSM: p11-kit server over token "shim A", a copy of p11-kit-client.so behind a
# third shim copy. The server forks a p11-kit-remote per connection: killing the listener alone
# leaves open connections served, so an HSM dies here when both go (server_stop).
p11kit_need
SOCK="$T/p11-kit.sock"
hf_on_exit "server_stop server"
server_start server "$SOCK" "shim%20A"
net_copy net "$SOCK"
NET=$SHIM_COPY
p11_ok "$S1" "shim A" --login --pin 1234 --keypairgen --key-type EC:prime256v1 --label ec --id 03
p11_ok "$NET" "shim A" --list-token-slots
grep -q "token label *: shim A" "$HF_OUT" || hf_fail "the network HSM lists no token: $(cat "$HF_OUT")"
echo data >"$T/data"
p11_ok "$NET" "shim A" --login --pin 1234 --sign -m ECDSA --id 03 -i "$T/data" -o "$T/sig"
[ -s "$T/sig" ] || hf_fail "no signature through the network HSM"

# Killed: a process already connected gets CKR_DEVICE_ERROR (0x30) from every call, also after
# the server is back; C_Finalize + C_Initialize reconnects. (python ignores SIGPIPE; a process
# that does not dies of it on its first call after the kill: README.md.)
export SOCK T
out=$(SOFTHSM2_CONF="$SOFTHSM2_CONF" client "$NET" init open \
    "sh:kill \$(pgrep -P \$(cat \"\$T/server.pid\")) \$(cat \"\$T/server.pid\"); sleep 0.3" \
    open "sh:$(command -v p11-kit) server --provider '$SOFTHSM_MODULE' -f -n \"\$SOCK\" 'pkcs11:token=shim%20A' >\"\$T/server.out\" 2>&1 & echo \$! >\"\$T/server.pid\"; sleep 1" \
    open fini init open fini) || hf_fail "the network client failed: $out"
echo "$out"
check "$(step "$out" open#1)" 0x0 "network HSM: C_OpenSession before the kill"
check "$(step "$out" open#2)" 0x30 "network HSM: first call after the kill"
check "$(step "$out" open#3)" 0x30 "network HSM: same process once the server is back"
check "$(step "$out" init#2)" 0x0 "network HSM: C_Initialize again"
check "$(step "$out" open#4)" 0x0 "network HSM: C_OpenSession after re-initialising"

# A new process while the server is down: p11-kit-client initialises and shows no slot.
server_stop server
sleep 0.3
p11 "$NET" "shim A" --list-token-slots && hf_fail "pkcs11-tool found a token with the server down"
grep -q "No slots" "$HF_ERR" "$HF_OUT" || hf_fail "server down: $(cat "$HF_ERR")"
server_start server "$SOCK" "shim%20A"
p11_ok "$NET" "shim A" --login --pin 1234 --sign -m ECDSA --id 03 -i "$T/data" -o "$T/sig"
echo "fault-shim: all checks passed"
