# The oci-ekms plugin end to end: holdfastd over TLS with the plugin, a JWKS served over HTTPS
# on loopback and IDCS-shaped tokens minted by the test (jwt-token.py, python3-cryptography).
TESTS += tests/integration/oci.sh
EXTRA_DIST += tests/integration/oci.sh tests/integration/oci-lib.sh
