#!/usr/bin/env python3
"""Hostile and well-behaved XKS clients for tests/integration/xks-conn.sh (stdlib only).

Every call is a SigV4-signed XKS Encrypt on raw sockets, so headers can be repeated and bodies
sent as the test wants. Every loop is bounded in count and in time.

  xks-attack.py call [--dup HEADER] [--body-file F]
        one call; prints "STATUS ERRORNAME" (ERRORNAME "-" on success)
  xks-attack.py slowloris --conns N --seconds S
        up to N connections from --attack-from trickle header bytes (one per connection every
        0.5 s, never finishing) for S seconds while a client on --from calls; the figures
  xks-attack.py slots --conns N --seconds S
        --attack-from keeps up to N connections open, sending nothing, while a client on
        --from calls; the figures
  xks-attack.py keepalive --seconds S
        two calls on one connection S seconds apart; prints "kept 200 200" when the second
        went over the same connection, "closed 200" when the gateway had closed it
  xks-attack.py trickle --seconds S
        one connection, a header byte every 0.2 s; prints "cut SECONDS" (from the connect)
        when the gateway closes it, "held SECONDS" after S
  xks-attack.py slowbody --seconds S
        headers at once, then a body at 2 bytes a second; prints "cut SECONDS" when the gateway
        closes the connection, "STATUS - SECONDS" if it answers, "held SECONDS" after S
  xks-attack.py chunked --max-mb M
        an endless chunked body (64 KiB chunks, at most M MiB and 20 s); prints
        "STATUS ERRORNAME SENT_BYTES SECONDS" or "none - SENT SECONDS" when no answer came

Figures (slowloris, slots): "calls=N ok=N p50_ms=X p99_ms=X max_ms=X attack_opened=N cut=N
still_held=N recover_s=X after_ms=X after_status=S": the client's calls during the attack and
their latencies (a failed call counts as 2000 ms), the connections the attack opened and those
the gateway closed; once the attack stops opening (its open ones still trickle), how long until
the gateway had closed them all (at most --recover-wait, 10 s; "never" if not), and a call
made then.

Common: --port P --host H (127.0.0.1) --from ADDR (127.0.0.2) --attack-from ADDR (127.0.0.1)
--akid A --secret S --region R (us-east-1) --key K (k1) --prefix P (""), --fresh (the
client's calls each on a new connection, as a KMS host that has none open yet: the attack must
leave slots free, not only spare a connection that was open before it).
"""
import argparse
import datetime
import hashlib
import hmac
import json
import socket
import ssl
import sys
import threading
import time

SERVICE = "kms-xks-proxy"


def body_for(n):
    return json.dumps({
        "requestMetadata": {
            "awsPrincipalArn": "arn:aws:iam::111122223333:user/Alice",
            "kmsKeyArn": "arn:aws:kms:us-east-1:111122223333:key/x",
            "kmsOperation": "Encrypt",
            "kmsRequestId": "conn-test-%d" % n,
        },
        "plaintext": "SGVsbG8gV29ybGQh",
        "encryptionAlgorithm": "AES_GCM",
    }, separators=(",", ":")).encode()


def signed_headers(a, path, body):
    host = "%s:%d" % (a.host, a.port)
    amzdate = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    date = amzdate[:8]
    h = {"content-type": "application/json", "host": host, "x-amz-date": amzdate}
    names = ";".join(sorted(h))
    canon = "".join("%s:%s\n" % (k, h[k]) for k in sorted(h))
    creq = "\n".join(["POST", path, "", canon, names, hashlib.sha256(body).hexdigest()])
    scope = "%s/%s/%s/aws4_request" % (date, a.region, SERVICE)
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + a.secret).encode()
    for m in (date, a.region, SERVICE, "aws4_request"):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return [("Host", host), ("Content-Type", "application/json"), ("X-Amz-Date", amzdate),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
             % (a.akid, scope, names, sig))]


def encrypt_path(a):
    return "%s/kms/xks/v1/keys/%s/encrypt" % (a.prefix, a.key)


def request_bytes(a, body, dup=None, n=0):
    path = encrypt_path(a)
    hdrs = signed_headers(a, path, body)
    if dup:
        hdrs += [(k, v) for k, v in hdrs if k.lower() == dup.lower()]
    lines = ["POST %s HTTP/1.1" % path] + ["%s: %s" % kv for kv in hdrs]
    lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_response(s, deadline):
    """(status, errorName or "-", keep_alive) or None when nothing whole came by deadline."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = s.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdr = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdr[k.strip().lower()] = v.strip()
    want = int(hdr.get("content-length", "0"))
    while len(rest) < want:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    name = "-"
    if status >= 300 and rest:
        try:
            name = json.loads(rest[:want]).get("errorName", "-")
        except ValueError:
            name = "?"
    return status, name, hdr.get("connection", "").lower() != "close"


def connect(a, src, timeout=2.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.bind((src, 0))
    s.settimeout(timeout)
    s.connect((a.host, a.port))
    if a.tls_ca:
        ctx = ssl.create_default_context(cafile=a.tls_ca)
        ctx.check_hostname = False
        s = ctx.wrap_socket(s)
    return s


def cmd_call(a):
    body = open(a.body_file, "rb").read() if a.body_file else body_for(0)
    try:
        s = connect(a, getattr(a, "from"))
        s.sendall(request_bytes(a, body, a.dup))
        r = read_response(s, time.monotonic() + 5)
        s.close()
    except OSError as e:
        print("none %s" % e.__class__.__name__)
        return 0
    print("none -" if r is None else "%d %s" % (r[0], r[1]))
    return 0


class Client:
    """Sequential keep-alive calls (as KMS makes them), reconnecting when needed."""

    def __init__(self, a):
        self.a, self.s, self.n = a, None, 0
        self.lat, self.ok, self.calls = [], 0, 0

    def one(self):
        self.n += 1
        self.calls += 1
        t0 = time.monotonic()
        try:
            if self.s is None:
                self.s = connect(self.a, getattr(self.a, "from"))
            self.s.sendall(request_bytes(self.a, body_for(self.n)))
            r = read_response(self.s, t0 + 2.0)
        except OSError:
            r = None
        ms = (time.monotonic() - t0) * 1000
        if r is None or not r[2] or self.a.fresh:
            if self.s:
                self.s.close()
            self.s = None
        if r is not None and r[0] == 200:
            self.ok += 1
            self.lat.append(ms)
        else:
            self.lat.append(max(ms, 2000.0))  # a failed call counts as over any limit
        return ms, r

    def close(self):
        if self.s:
            self.s.close()


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100.0))]


def attack(a, mode):
    """The attacker keeps up to --conns connections open from --attack-from for --seconds
    (reopening what the gateway closes, at most 20 a second), while the client calls."""
    socks, lock = [], threading.Lock()
    start = time.monotonic()
    stop_open, stop_feed = threading.Event(), threading.Event()
    state = {"opened": 0, "cut": 0, "last_cut": 0.0}

    def gone(s):
        with lock:
            if s in socks:
                socks.remove(s)
                state["cut"] += 1
                state["last_cut"] = time.monotonic()
        s.close()

    def opener():
        for _ in range(20000):
            if stop_open.is_set():
                break
            with lock:
                full = len(socks) >= a.conns
            if not full:
                try:
                    s = connect(a, a.attack_from, timeout=1.0)
                    s.setblocking(False)
                    with lock:
                        socks.append(s)
                        state["opened"] += 1
                    if state["opened"] <= a.conns:
                        continue  # the first round as fast as it goes
                except OSError:
                    pass
            time.sleep(0.05)

    def feeder():
        # slowloris: one more header byte per connection every half second, never the end;
        # slots: nothing at all after the connect (a read shows whether it is still open).
        line = ("POST %s HTTP/1.1\r\nHost: x\r\nX-Pad: " % encrypt_path(a)).encode()
        pos = {}
        while not stop_feed.is_set():
            with lock:
                live = list(socks)
            for s in live:
                try:
                    if mode == "slowloris":
                        i = pos.get(s, 0)
                        s.send(line[i:i + 1] if i < len(line) else b"a")
                        pos[s] = i + 1
                    try:
                        if s.recv(1) == b"":
                            gone(s)
                    except BlockingIOError:
                        pass
                except OSError:
                    gone(s)
            time.sleep(0.5 if mode == "slowloris" else 0.1)
    threads = [threading.Thread(target=opener), threading.Thread(target=feeder)]
    for t in threads:
        t.start()

    c = Client(a)
    for _ in range(40):  # let the attack take its slots first (at most 2 s)
        with lock:
            if state["opened"] >= a.conns:
                break
        time.sleep(0.05)
    time.sleep(0.3)
    while time.monotonic() - start < a.seconds and c.calls < 100000:
        c.one()
        time.sleep(0.05)
    # The attack stops opening; what it holds keeps trickling until the gateway closes it.
    stop_open.set()
    threads[0].join(5)
    t_end = time.monotonic()
    while time.monotonic() - t_end < a.recover_wait:
        with lock:
            if not socks:
                break
        time.sleep(0.05)
    stop_feed.set()
    threads[1].join(5)
    with lock:
        held = len(socks)
        for s in socks:
            s.close()
        socks.clear()
    recover = "%.2f" % max(0.0, state["last_cut"] - t_end) if held == 0 else "never"
    rec_ms, r = c.one()
    c.close()
    lat = c.lat[:-1]
    ok = c.ok - (1 if r is not None and r[0] == 200 else 0)
    print("calls=%d ok=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f attack_opened=%d cut=%d "
          "still_held=%d recover_s=%s after_ms=%.1f after_status=%s" % (
              len(lat), ok, pct(lat, 50), pct(lat, 99), max(lat) if lat else 0,
              state["opened"], state["cut"], held, recover, rec_ms, r[0] if r else "none"))
    return 0


def cmd_keepalive(a):
    """Two calls on one connection --seconds apart: "kept STATUS STATUS" when the second went
    over the same connection, "closed STATUS" when the gateway had closed it."""
    s = connect(a, getattr(a, "from"))
    s.sendall(request_bytes(a, body_for(1)))
    r1 = read_response(s, time.monotonic() + 3)
    time.sleep(a.seconds)
    try:
        s.sendall(request_bytes(a, body_for(2)))
        r2 = read_response(s, time.monotonic() + 3)
    except OSError:
        r2 = None
    s.close()
    print("kept %s %s" % (r1[0] if r1 else "none", r2[0]) if r2 else
          "closed %s" % (r1[0] if r1 else "none"))
    return 0


def cmd_trickle(a):
    """One connection, a header byte every 0.2 s, never the end: "cut SECONDS" when the gateway
    closes it (SECONDS from the connect), "held SECONDS" after --seconds."""
    line = ("POST %s HTTP/1.1\r\nHost: x\r\nX-Pad: " % encrypt_path(a)).encode()
    s = connect(a, getattr(a, "from"))
    t0 = time.monotonic()
    s.settimeout(0.2)
    i = 0
    while time.monotonic() - t0 < a.seconds:
        try:
            s.send(line[i:i + 1] if i < len(line) else b"a")
            i += 1
            if s.recv(1) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    else:
        print("held %.2f" % (time.monotonic() - t0))
        s.close()
        return 0
    print("cut %.2f" % (time.monotonic() - t0))
    s.close()
    return 0


def cmd_slowbody(a):
    """Headers at once, then a 4000-byte body at 2 bytes a second: "cut SECONDS" when the
    gateway closes the connection, "STATUS NAME SECONDS" if it answers, "held SECONDS"."""
    path = encrypt_path(a)
    head = ("POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
            "Content-Length: 4000\r\n\r\n" % (path, a.host, a.port)).encode()
    s = connect(a, getattr(a, "from"))
    s.sendall(head)
    t0 = time.monotonic()
    s.settimeout(0.5)
    while time.monotonic() - t0 < a.seconds:
        try:
            s.send(b"  ")
            got = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            got = b""
        el = time.monotonic() - t0
        if got.startswith(b"HTTP/"):
            print("%s - %.2f" % (got.split()[1].decode(), el))
        else:
            print("cut %.2f" % el)
        s.close()
        return 0
    print("held %.2f" % (time.monotonic() - t0))
    s.close()
    return 0


def cmd_chunked(a):
    path = encrypt_path(a)
    head = ("POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" % (path, a.host, a.port)).encode()
    chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
    s = connect(a, getattr(a, "from"))
    t0 = time.monotonic()
    sent = 0
    s.sendall(head + b"2\r\n{\"\r\n")
    s.setblocking(False)
    got = b""
    while sent < a.max_mb * 1024 * 1024 and time.monotonic() - t0 < 20:
        try:
            got += s.recv(65536)
            if b"\r\n\r\n" in got:
                break
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except OSError:
            break
        try:
            sent += s.send(chunk)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            time.sleep(0.01)
        except OSError:
            break
    s.setblocking(True)
    try:
        r = read_response(_Prefixed(s, got), time.monotonic() + 3)
    except OSError:
        r = None
    s.close()
    el = time.monotonic() - t0
    if r is None:
        print("none - %d %.2f" % (sent, el))
    else:
        print("%d %s %d %.2f" % (r[0], r[1], sent, el))
    return 0


class _Prefixed:
    """A socket whose first reads return bytes already received."""

    def __init__(self, s, first):
        self.s, self.first = s, first

    def settimeout(self, t):
        self.s.settimeout(t)

    def recv(self, n):
        if self.first:
            b, self.first = self.first, b""
            return b
        return self.s.recv(n)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["call", "slowloris", "slots", "chunked", "slowbody",
                                      "trickle", "keepalive"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--from", default="127.0.0.2")
    p.add_argument("--attack-from", default="127.0.0.1")
    p.add_argument("--akid", default="")
    p.add_argument("--secret", default="")
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--key", default="k1")
    p.add_argument("--prefix", default="")
    p.add_argument("--dup")
    p.add_argument("--body-file")
    p.add_argument("--conns", type=int, default=32)
    p.add_argument("--seconds", type=float, default=6)
    p.add_argument("--max-mb", type=int, default=16)
    p.add_argument("--recover-wait", type=float, default=10)
    p.add_argument("--tls-ca", help="TLS, trusting this CA file (for chunked and call)")
    p.add_argument("--fresh", action="store_true",
                   help="the client opens a new connection for every call")
    a = p.parse_args()
    a.conns = min(a.conns, 2000)
    a.seconds = min(a.seconds, 60)
    a.recover_wait = min(a.recover_wait, 60)
    if a.cmd == "call":
        return cmd_call(a)
    if a.cmd == "chunked":
        return cmd_chunked(a)
    if a.cmd == "slowbody":
        return cmd_slowbody(a)
    if a.cmd == "trickle":
        return cmd_trickle(a)
    if a.cmd == "keepalive":
        return cmd_keepalive(a)
    return attack(a, a.cmd)


if __name__ == "__main__":
    sys.exit(main())
