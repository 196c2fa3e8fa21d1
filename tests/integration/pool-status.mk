# HSM pools seen from outside (issue 14): holdfastd's aws-xks over pool keys on fault-shim
# members, a member made dead and brought back (XKS health entries, /metrics, the 500 and its
# audit record), a one-slot member throttling (429 ThrottlingException), `holdfast pool show`.
TESTS += tests/integration/pool-status.sh
EXTRA_DIST += tests/integration/pool-status.sh
