# The gws-cse plugin end to end: holdfastd with the plugin over TLS, JWKS served over HTTPS on
# loopback and tokens minted by the test (jwt-token.py, python3-cryptography). Included from
# gateway/plugins/gws-cse/local.mk.
TESTS += tests/integration/cse.sh
EXTRA_DIST += tests/integration/cse.sh
