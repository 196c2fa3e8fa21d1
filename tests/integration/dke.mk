# The ms-dke plugin end to end over TLS: holdfastd with the plugin, a JWKS served over HTTPS on
# loopback, Entra-shaped tokens minted by the test (jwt-token.py, python3-cryptography), and
# ciphertexts made with the openssl CLI under the published key.
TESTS += tests/integration/dke.sh
EXTRA_DIST += tests/integration/dke.sh tests/integration/dke-lib.sh
