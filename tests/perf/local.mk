# Benchmarks: never part of `make check`. Each prints figures beside a reference measured in the
# same run (raw OpenSSL, SoftHSMv2 called directly).
EXTRA_PROGRAMS = tests/perf/bench-pkcs11 tests/perf/xks-presign tests/perf/mhd-floor \
	tests/perf/bench-jwt \
	tests/perf/bench-audit tests/perf/rsa-oaep-ref tests/perf/hsm-ref
tests_perf_bench_audit_SOURCES = tests/perf/bench-audit.c
tests_perf_bench_audit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit $(CUNIT_CFLAGS)
tests_perf_bench_audit_LDADD = libhftest.la libholdfast-core.la $(CUNIT_LIBS) $(PTHREAD_LIBS)
tests_perf_mhd_floor_SOURCES = tests/perf/mhd-floor.c tests/perf/oaep-fixture.c \
	tests/perf/oaep-fixture.h
tests_perf_mhd_floor_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(GNUTLS_CFLAGS)
tests_perf_mhd_floor_LDADD = $(MHD_LIBS) $(GNUTLS_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)
tests_perf_xks_presign_SOURCES = tests/perf/xks-presign.c
tests_perf_xks_presign_LDADD = gateway/plugins/aws-xks/libhf-sigv4.la $(CRYPTO_LIBS)
tests_perf_bench_pkcs11_SOURCES = tests/perf/bench-pkcs11.c tests/p11-client.h
tests_perf_bench_pkcs11_LDADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += tests/perf/bench-pkcs11.sh

bench-pkcs11: tests/perf/bench-pkcs11$(EXEEXT) pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' SOFTHSM_MODULE='$(SOFTHSM_MODULE)' \
	  $(SHELL) $(top_srcdir)/tests/perf/bench-pkcs11.sh

.PHONY: bench-pkcs11

# The keyed audit chain against the unkeyed one, per record (BENCH_SECONDS per cell).
bench-audit: tests/perf/bench-audit$(EXEEXT)
	tests/perf/bench-audit $${BENCH_SECONDS:-4} $${BENCH_OP_RATE:-0}

.PHONY: bench-audit

EXTRA_DIST += tests/perf/bench-gateway.sh
bench-gateway: tests/perf/xks-presign$(EXEEXT) tests/perf/mhd-floor$(EXEEXT) gateway/holdfastd$(EXEEXT) \
		gateway/plugins/aws-xks/aws-xks.la pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' \
	  $(SHELL) $(top_srcdir)/tests/perf/bench-gateway.sh

.PHONY: bench-gateway

# Cloud EKM wrap (bearer token) against AWS XKS encrypt through one holdfastd, alternating
# hf-load slices (BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_ROUNDS).
EXTRA_DIST += tests/perf/bench-ekm.sh
bench-ekm: tests/load/hf-load$(EXEEXT) gateway/holdfastd$(EXEEXT) gateway/plugins/aws-xks/aws-xks.la \
		gateway/plugins/gcp-ekm/gcp-ekm.la pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' SOFTHSM_MODULE='$(SOFTHSM_MODULE)' \
	  $(SHELL) $(top_srcdir)/tests/perf/bench-ekm.sh

.PHONY: bench-ekm

# hf_jwt_verify cached against uncached, RS256 and ES256.
tests_perf_bench_jwt_SOURCES = tests/perf/bench-jwt.c tests/unit/jwt-mint.c tests/unit/jwt-mint.h
tests_perf_bench_jwt_CPPFLAGS = $(GATEWAY_CPPFLAGS)
tests_perf_bench_jwt_LDADD = gateway/libhfgateway.la $(PTHREAD_LIBS)
bench-jwt: tests/perf/bench-jwt$(EXEEXT)
	./tests/perf/bench-jwt$(EXEEXT)

.PHONY: bench-jwt

# SAP HYOK through holdfastd over mutual TLS (tests/perf/bench-sap.sh): RSA-3072 OAEP decrypt
# against raw OpenSSL (rsa-oaep-ref) and against mhd-floor doing mutual TLS and the same decrypt
# (its floor) on the same cores, and success audit on against off for RSA and AES beside
# mhd-floor's suspend/straight ratio, in one run.
tests_perf_rsa_oaep_ref_SOURCES = tests/perf/rsa-oaep-ref.c tests/perf/oaep-fixture.c \
	tests/perf/oaep-fixture.h
tests_perf_rsa_oaep_ref_LDADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS)
EXTRA_DIST += tests/perf/bench-sap.sh
bench-sap: tests/perf/rsa-oaep-ref$(EXEEXT) tests/perf/mhd-floor$(EXEEXT) tests/load/hf-load$(EXEEXT) \
		gateway/holdfastd$(EXEEXT) pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' SOFTHSM_MODULE='$(SOFTHSM_MODULE)' \
	  $(SHELL) $(top_srcdir)/tests/perf/bench-sap.sh

.PHONY: bench-sap

# XKS encrypt on an HSM pool key through holdfastd (tests/perf/bench-hsm.sh): against SoftHSMv2
# called directly (hsm-ref, AES-GCM C_Encrypt, same threads) with one and two members, then with
# the fault shim adding HSM latency per call, beside Little's law, as a table and a plot.
tests_perf_hsm_ref_SOURCES = tests/perf/hsm-ref.c tests/p11-client.h
tests_perf_hsm_ref_LDADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)
EXTRA_DIST += tests/perf/bench-hsm.sh
bench-hsm: tests/perf/hsm-ref$(EXEEXT) tests/load/hf-load$(EXEEXT) tests/shim/hf-fault-shim.la \
		gateway/holdfastd$(EXEEXT) gateway/plugins/aws-xks/aws-xks.la \
		pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' SOFTHSM_MODULE='$(SOFTHSM_MODULE)' \
	  $(SHELL) $(top_srcdir)/tests/perf/bench-hsm.sh

.PHONY: bench-hsm

# The two-node sample of conf/cluster/ on its PostgreSQL store (tests/perf/bench-cluster.sh):
# node 1 direct, one node behind HAProxy, two nodes behind HAProxy, with each part's CPU per
# request, and the 2-node row predicted from the others' costs.
EXTRA_DIST += tests/perf/bench-cluster.sh
bench-cluster: tests/load/hf-load$(EXEEXT) gateway/holdfastd$(EXEEXT) gateway/plugins/aws-xks/aws-xks.la \
		pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' SOFTHSM_MODULE='$(SOFTHSM_MODULE)' \
	  $(SHELL) $(top_srcdir)/tests/perf/bench-cluster.sh

.PHONY: bench-cluster
