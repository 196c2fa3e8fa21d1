# gws-cse Gmail (stage 2) end to end: holdfastd with gmail = on and off, tokens from
# jwt-token.py, results checked with openssl. Included from gateway/plugins/gws-cse/gmail.mk.
TESTS += tests/integration/cse-gmail.sh
EXTRA_DIST += tests/integration/cse-gmail.sh
