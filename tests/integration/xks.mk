# The aws-xks plugin end to end: holdfastd with the plugin, driven by curl --aws-sigv4.
TESTS += tests/integration/xks.sh
EXTRA_DIST += tests/integration/xks.sh tests/integration/xks-body.py
# An unauthenticated flood against a key store whose audit log is on a small tmpfs (root only).
TESTS += tests/integration/audit-full.sh
EXTRA_DIST += tests/integration/audit-full.sh
# holdfastd under hostile connections and bodies (slowloris, one address holding every slot,
# an endless chunked body, a body under the rate floor), strict parsing, plain-HTTP listeners.
TESTS += tests/integration/xks-conn.sh
EXTRA_DIST += tests/integration/xks-conn.sh tests/integration/xks-attack.py
# Relative paths in a plugin section are the config file's (hf_conf_path), through holdfastd -t.
TESTS += tests/integration/conf-path.sh
EXTRA_DIST += tests/integration/conf-path.sh
