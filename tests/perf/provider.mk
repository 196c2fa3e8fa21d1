# make bench-provider: signatures through the holdfast OpenSSL provider vs OpenSSL's default
# provider with the same keys (tests/perf/bench-provider.c). Never part of `make check`.
EXTRA_PROGRAMS += tests/perf/bench-provider
tests_perf_bench_provider_SOURCES = tests/perf/bench-provider.c tests/p11-client.h
tests_perf_bench_provider_LDADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)
EXTRA_DIST += tests/perf/bench-provider.sh

bench-provider: tests/perf/bench-provider$(EXEEXT) provider/holdfast.la \
		pkcs11/module/holdfast-pkcs11.la pkcs11/tool/holdfast$(EXEEXT)
	top_builddir='$(abs_top_builddir)' $(SHELL) $(top_srcdir)/tests/perf/bench-provider.sh

.PHONY: bench-provider
