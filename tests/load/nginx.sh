# Starts nginx as a load target on loopback, for hf-load's tests and its ceiling measurement.
# POSIX sh, sourced:
#   hf_nginx_start DIR PORT [TLS_PORT]   nginx with its config, logs and pid in DIR, answering
#                                        every request with a static 200 "hello" on 127.0.0.1:PORT
#                                        (and over TLS on TLS_PORT with DIR/cert.pem, a fresh
#                                        self-signed certificate for 127.0.0.1). Sets HF_NGINX_PID.
#   hf_nginx_stop                        stops it (by its pid file)
# nginx is not a Holdfast dependency: the callers skip (or install it, as root) when missing.

hf_nginx_bin() {
    command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; }
}

hf_nginx_start() {
    _d=$1 _port=$2 _tls_port=${3:-}
    _nginx=$(hf_nginx_bin) || return 1
    mkdir -p "$_d/tmp" || return 1
    _tls_server=""
    if [ -n "$_tls_port" ]; then
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
            -keyout "$_d/key.pem" -out "$_d/cert.pem" >/dev/null 2>&1 || return 1
        _tls_server="server {
        listen 127.0.0.1:$_tls_port ssl;
        ssl_certificate $_d/cert.pem;
        ssl_certificate_key $_d/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / { return 200 \"hello\\n\"; }
    }"
    fi
    # One worker per core, keep-alive without a request cap: what a benchmark target should be.
    cat >"$_d/nginx.conf" <<NGINX
worker_processes auto;
pid $_d/nginx.pid;
error_log $_d/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    client_body_temp_path $_d/tmp;
    proxy_temp_path $_d/tmp;
    fastcgi_temp_path $_d/tmp;
    uwsgi_temp_path $_d/tmp;
    scgi_temp_path $_d/tmp;
    server {
        listen 127.0.0.1:$_port;
        location / { return 200 "hello\n"; }
    }
    $_tls_server
}
NGINX
    "$_nginx" -p "$_d" -e "$_d/error.log" -c "$_d/nginx.conf" || return 1
    HF_NGINX_PIDFILE=$_d/nginx.pid
    # Ready when it answers.
    _i=0
    while [ $_i -lt 50 ]; do
        if [ -s "$HF_NGINX_PIDFILE" ] &&
            curl -s -o /dev/null "http://127.0.0.1:$_port/" 2>/dev/null; then
            HF_NGINX_PID=$(cat "$HF_NGINX_PIDFILE")
            return 0
        fi
        sleep 0.1
        _i=$((_i + 1))
    done
    return 1
}

hf_nginx_stop() {
    # The pid taken at start: the pid file may be gone with its directory by now.
    _pid=${HF_NGINX_PID:-}
    if [ -z "$_pid" ] && [ -n "${HF_NGINX_PIDFILE:-}" ] && [ -s "$HF_NGINX_PIDFILE" ]; then
        _pid=$(cat "$HF_NGINX_PIDFILE")
    fi
    [ -n "$_pid" ] || return 0
    kill "$_pid" 2>/dev/null || return 0
    _i=0
    while kill -0 "$_pid" 2>/dev/null && [ $_i -lt 50 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
}
