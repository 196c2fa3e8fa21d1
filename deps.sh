#!/bin/sh
# Installs the Debian 12 packages Holdfast needs to build, run and test, if any is missing.
# Sourced by demo.sh and check.sh; safe to run again (installs nothing when all are present).
set -e

HF_BUILD_PACKAGES="build-essential autoconf automake libtool autoconf-archive pkg-config
  libssl-dev libp11-kit-dev libsqlite3-dev libinih-dev libjson-c-dev uuid-dev libcunit1-dev
  libmicrohttpd-dev libgnutls28-dev libcurl4-openssl-dev libpq-dev"
HF_RUN_PACKAGES="openssl p11-kit softhsm2 sqlite3"
# postgresql: the server the PostgreSQL store's tests start (initdb and pg_ctl, found through
# pg_config or /usr/lib/postgresql/*/bin); haproxy: the cluster test's balancer.
HF_TEST_PACKAGES="opensc gnutls-bin libnss3-tools valgrind python3 python3-cryptography python3-pykcs11 procps
  psmisc curl gnuplot-nox haproxy postgresql"

hf_missing_packages() {
    for p in $HF_BUILD_PACKAGES $HF_RUN_PACKAGES $HF_TEST_PACKAGES; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
            printf '%s ' "$p"
    done
}

hf_install_deps() {
    missing=$(hf_missing_packages)
    [ -z "$missing" ] && return 0
    echo "holdfast: installing Debian packages: $missing"
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "holdfast: run as root or install: $missing" >&2; exit 1; }
        SUDO=sudo
    fi
    ${SUDO:-} env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    ${SUDO:-} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
}
