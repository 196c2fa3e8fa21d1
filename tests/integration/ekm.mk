# The gcp-ekm plugin end to end: holdfastd with the plugin, a JWKS served over HTTPS on
# loopback and ID tokens minted by the test (jwt-token.py, python3-cryptography).
TESTS += tests/integration/ekm.sh
EXTRA_DIST += tests/integration/ekm.sh
