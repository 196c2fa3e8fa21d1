# The sap-hyok plugin end to end: holdfastd with the plugin on a TLS listener requiring client
# certificates (a CA and client certificates the test makes with openssl, sap-lib.sh).
TESTS += tests/integration/sap.sh
EXTRA_DIST += tests/integration/sap.sh tests/integration/sap-lib.sh
