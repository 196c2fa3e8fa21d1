# The HSM pool's failover against real failing HSMs (issue 14): pool-failover runs steady load
# through hf_pool_run; pool-failover.sh gives it a member behind p11-kit server + the fault shim
# (tests/shim/), kills and restarts that server mid-run, then makes the shim fail 5% of calls.
check_PROGRAMS += tests/integration/pool-failover
tests_integration_pool_failover_SOURCES = tests/integration/pool-failover.c
tests_integration_pool_failover_LDADD = libholdfast-core.la $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)
TESTS += tests/integration/pool-failover.sh
EXTRA_DIST += tests/integration/pool-failover.sh
# Clone-mode pools with the real CLI: keys on every member, re-sync after a member comes back.
TESTS += tests/integration/pool-clone.sh
EXTRA_DIST += tests/integration/pool-clone.sh
# Export-mode pools: backups in the store, a replaced member token restored from them.
TESTS += tests/integration/pool-export.sh
EXTRA_DIST += tests/integration/pool-export.sh
# RSA keys in a plain pool: made in a member, SAP HYOK's OAEP decrypt and PSS sign through it.
TESTS += tests/integration/pool-rsa.sh
EXTRA_DIST += tests/integration/pool-rsa.sh
# No lock held across a backend call, no race: the pool's and the workers' suites under helgrind.
TESTS += tests/integration/pool-helgrind.sh
EXTRA_DIST += tests/integration/pool-helgrind.sh
