# The aws-xks plugin end to end: holdfastd with the plugin, driven by curl --aws-sigv4.
TESTS += tests/integration/xks.sh
EXTRA_DIST += tests/integration/xks.sh tests/integration/xks-body.py
# An unauthenticated flood against a key store whose audit log is on a small tmpfs (root only).
TESTS += tests/integration/audit-full.sh
EXTRA_DIST += tests/integration/audit-full.sh
