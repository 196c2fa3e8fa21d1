#!/usr/bin/env python3
"""The kill switch across nodes, timed (tests/integration/cluster-killswitch.sh; stdlib only).

  killswitch.py --rounds N --port P --cacert CA --client-cert C --client-key K --akid A
                --secret S --key KEY -- CLI...

Round after round, runs `CLI link block aws-xks KEY`, then calls XKS Encrypt on node P back to
back (one keep-alive TLS connection, as KMS holds) until the answer is 400
InvalidStateException; then `CLI link unblock aws-xks KEY` and calls until 200. Each delay is
measured from the moment the CLI process exited (its change committed before that), so it is
what a client of another node sees of a block once the operator's command has returned; a
node that already refuses when the CLI exits counts 0. A call answering anything else, or a
change not seen within --give-up seconds, fails the run.

Prints one line: "rounds=N block_p50_ms=X block_p99_ms=X block_max_ms=X unblock_p50_ms=X
unblock_p99_ms=X unblock_max_ms=X cli_p50_ms=X at_first_call=N/M" (M changes, N of them already
in force on the first call after the CLI returned), and exits 1 on a failure (its reason on
stderr).
"""
import argparse
import importlib.util
import os
import socket
import ssl
import subprocess
import sys
import time

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("xks_attack", os.path.join(_here, "xks-attack.py"))
xks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(xks)


class Node:
    """Sequential XKS Encrypt calls on one keep-alive connection, reconnecting when needed."""

    def __init__(self, a):
        self.a, self.s, self.calls = a, None, 0
        self.ctx = ssl.create_default_context(cafile=a.cacert)
        self.ctx.check_hostname = False
        self.ctx.load_cert_chain(a.client_cert, a.client_key)

    def call(self):
        """(status, errorName) of one call; (0, reason) when the connection failed."""
        self.calls += 1
        try:
            if self.s is None:
                raw = socket.create_connection((self.a.host, self.a.port), timeout=5)
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.s = self.ctx.wrap_socket(raw)
            self.s.sendall(xks.request_bytes(self.a, xks.body_for(self.calls)))
            r = xks.read_response(self.s, time.monotonic() + 5)
        except OSError as e:
            r, why = None, e.__class__.__name__
        else:
            why = "no whole answer"
        if r is None or not r[2]:
            if self.s:
                self.s.close()
            self.s = None
        return (0, why) if r is None else (r[0], r[1])


def until(node, want, give_up):
    """(ms from now until node answers want ((status, errorName)), calls it took); None on
    another answer."""
    t0, calls = time.monotonic(), 0
    while True:
        got = node.call()
        calls += 1
        now = time.monotonic()
        if got == want:
            return (now - t0) * 1000, calls
        if got not in ((200, "-"), (400, "InvalidStateException")):
            sys.stderr.write("killswitch: node answered %r while waiting for %r\n" % (got, want))
            return None
        if now - t0 > give_up:
            sys.stderr.write("killswitch: %r not seen within %.1f s\n" % (want, give_up))
            return None


def cli(a, verb):
    t0 = time.monotonic()
    p = subprocess.run(a.cli + ["link", verb, "aws-xks", a.key], capture_output=True)
    if p.returncode != 0:
        sys.stderr.write("killswitch: CLI link %s exited %d: %s\n"
                         % (verb, p.returncode, p.stderr.decode(errors="replace")))
        return None
    return (time.monotonic() - t0) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cacert", required=True)
    ap.add_argument("--client-cert", required=True)
    ap.add_argument("--client-key", required=True)
    ap.add_argument("--akid", required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--key", required=True, help="the XKS key id (its link's external id)")
    ap.add_argument("--give-up", type=float, default=3.0)
    ap.add_argument("cli", nargs="+")
    a = ap.parse_args()
    node = Node(a)

    blocks, unblocks, clis, at_once = [], [], [], 0
    if until(node, (200, "-"), a.give_up) is None:
        return 1
    for _ in range(a.rounds):
        for verb, want, out in (("block", (400, "InvalidStateException"), blocks),
                                ("unblock", (200, "-"), unblocks)):
            ms = cli(a, verb)
            if ms is None:
                return 1
            clis.append(ms)
            seen = until(node, want, a.give_up)
            if seen is None:
                return 1
            out.append(seen[0])
            at_once += seen[1] == 1
    # at_once: changes already in force on the first call after the CLI returned, whose delay
    # is then that one call's latency.
    print("rounds=%d block_p50_ms=%.1f block_p99_ms=%.1f block_max_ms=%.1f unblock_p50_ms=%.1f "
          "unblock_p99_ms=%.1f unblock_max_ms=%.1f cli_p50_ms=%.1f at_first_call=%d/%d"
          % (a.rounds, xks.pct(blocks, 50), xks.pct(blocks, 99), max(blocks),
             xks.pct(unblocks, 50), xks.pct(unblocks, 99), max(unblocks), xks.pct(clis, 50),
             at_once, 2 * a.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
