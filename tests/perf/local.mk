# Benchmarks: never part of `make check`. Each prints figures beside a reference measured in the
# same run (raw OpenSSL, SoftHSMv2 called directly).
EXTRA_PROGRAMS = tests/perf/bench-pkcs11
tests_perf_bench_pkcs11_SOURCES = tests/perf/bench-pkcs11.c tests/p11-client.h
tests_perf_bench_pkcs11_LDADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += tests/perf/bench-pkcs11.sh

bench-pkcs11: tests/perf/bench-pkcs11$(EXEEXT) pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' SOFTHSM_MODULE='$(SOFTHSM_MODULE)' \
	  $(SHELL) $(top_srcdir)/tests/perf/bench-pkcs11.sh

.PHONY: bench-pkcs11
