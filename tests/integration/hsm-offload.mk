# A slow HSM never blocks gateway threads (issue 14): a local key's XKS encrypts stay fast
# through a one-thread listener while a 300 ms pool key is busy, and its full worker queue
# answers ThrottlingException, audited.
TESTS += tests/integration/hsm-offload.sh
EXTRA_DIST += tests/integration/hsm-offload.sh
