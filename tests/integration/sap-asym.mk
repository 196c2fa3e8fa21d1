# sap-hyok's asymmetric routes end to end: every algorithm against OpenSSL on the host, RSA-3072
# and RSA-4096. Included from gateway/plugins/sap-hyok/asym.mk.
TESTS += tests/integration/sap-asym.sh
EXTRA_DIST += tests/integration/sap-asym.sh tests/integration/sap-asym-export.py
