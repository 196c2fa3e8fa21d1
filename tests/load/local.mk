# hf-load: the HYOK load tester (tests/load/README.md). Its parts live in a convenience library so
# the unit tests drive the same statistics and argument code as the program.
noinst_LTLIBRARIES += tests/load/libhf-load.la
tests_load_libhf_load_la_SOURCES = tests/load/load.h tests/load/load-stats.c \
	tests/load/load-buf.c tests/load/load-args.c tests/load/load-api.c \
	tests/load/load-client.c tests/load/load-report.c \
	gateway/clock.c
tests_load_libhf_load_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
# The bearer-token builders (Cloud EKM, Workspace CSE) and the tokens they mint, signed by the
# gateway's JWT test fixture (OpenSSL only).
tests_load_libhf_load_la_SOURCES += tests/load/load-ekm.c tests/load/load-cse.c \
	tests/load/load-jwt.c tests/unit/jwt-mint.c tests/unit/jwt-mint.h
# The OCI, SAP and DKE builders; load-rsa.c: the OAEP encryption SAP's and DKE's prepare with.
tests_load_libhf_load_la_SOURCES += tests/load/load-oci.c tests/load/load-sap.c \
	tests/load/load-dke.c tests/load/load-rsa.c
# configure checks libcrypto only; libssl comes with the same libssl-dev package.
tests_load_libhf_load_la_LIBADD = gateway/plugins/aws-xks/libhf-sigv4.la $(JSONC_LIBS) \
	-lssl $(CRYPTO_LIBS) $(PTHREAD_LIBS) -lm

bin_PROGRAMS += tests/load/hf-load
tests_load_hf_load_SOURCES = tests/load/hf-load.c
tests_load_hf_load_LDADD = tests/load/libhf-load.la

if HAVE_CUNIT
LOAD_UNIT_TESTS = tests/load/test-load-stats tests/load/test-load-args tests/load/test-load-jwt \
	tests/load/test-load-hyok
check_PROGRAMS += $(LOAD_UNIT_TESTS)
UNIT_TESTS += $(LOAD_UNIT_TESTS)
tests_load_test_load_stats_SOURCES = tests/load/test-load-stats.c
tests_load_test_load_stats_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS)
tests_load_test_load_stats_LDADD = libhftest.la tests/load/libhf-load.la $(CUNIT_LIBS)
tests_load_test_load_args_SOURCES = tests/load/test-load-args.c
tests_load_test_load_args_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
tests_load_test_load_args_LDADD = libhftest.la tests/load/libhf-load.la $(CUNIT_LIBS) $(JSONC_LIBS)
# The bearer-token builders against the gateway's own JWT verifier.
tests_load_test_load_jwt_SOURCES = tests/load/test-load-jwt.c
tests_load_test_load_jwt_CPPFLAGS = $(GATEWAY_CPPFLAGS) $(CUNIT_CFLAGS)
tests_load_test_load_jwt_LDADD = libhftest.la tests/load/libhf-load.la gateway/libhfgateway.la \
	$(CUNIT_LIBS) $(JSONC_LIBS)
# The OCI, SAP and DKE builders: request shapes, tokens through the gateway's verifier, the
# ciphertexts they prepare opened by the test's own private key.
tests_load_test_load_hyok_SOURCES = tests/load/test-load-hyok.c
tests_load_test_load_hyok_CPPFLAGS = $(GATEWAY_CPPFLAGS) $(CUNIT_CFLAGS)
tests_load_test_load_hyok_LDADD = libhftest.la tests/load/libhf-load.la gateway/libhfgateway.la \
	$(CUNIT_LIBS) $(JSONC_LIBS)
endif

# Runs hf-load briefly against nginx (skips without it): errors, TLS, output formats.
TESTS += tests/load/hf-load.sh
# hf-load's EKM and CSE builders against the real plugins (skips when neither is built).
TESTS += tests/load/hf-load-bearer.sh
# hf-load's OCI, SAP and DKE builders against the real plugins, audit records counted (skips when
# none is built).
TESTS += tests/load/load-hyok.sh
EXTRA_DIST += tests/load/README.md tests/load/hf-load.sh tests/load/hf-load-bearer.sh tests/load/load-hyok.sh tests/load/ceiling.sh \
	tests/load/perf-report.sh tests/load/load-gateway.sh tests/load/nginx.sh

# Not part of `make check`: each takes minutes and wants the machine to itself.
# perf-ceiling: hf-load against wrk on nginx's static reply (same connections, same run).
perf-ceiling: tests/load/hf-load$(EXEEXT)
	HF_LOAD='$(abs_top_builddir)/tests/load/hf-load$(EXEEXT)' \
	  $(SHELL) $(top_srcdir)/tests/load/ceiling.sh

# perf-report: the seeds' sweep against a local holdfastd for each API present; writes
# perf-report/REPORT.md with its plots into the build tree.
perf-report: all
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' \
	  HF_LOAD_SEEDS="$${HF_LOAD_SEEDS:-$(abs_top_srcdir)/../shared/seeds}" \
	  $(SHELL) $(top_srcdir)/tests/load/perf-report.sh '$(abs_top_builddir)/perf-report'

.PHONY: perf-ceiling perf-report
