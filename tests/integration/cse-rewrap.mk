# The tokens the gws-cse plugin issues itself, end to end: rewrap between two holdfastd over
# TLS (and against misbehaving peers), delegate and the delegated token, /certs across a
# rotation. Included from gateway/plugins/gws-cse/local.mk.
TESTS += tests/integration/cse-rewrap.sh
EXTRA_DIST += tests/integration/cse-rewrap.sh tests/integration/cse-peer.py
