# CUnit suites: one program per unit, all linked with the shared harness.
if HAVE_CUNIT
check_LTLIBRARIES += libhftest.la
libhftest_la_SOURCES = tests/unit/harness.c tests/unit/harness-env.c tests/unit/harness.h \
	tests/unit/harness-pool.c tests/unit/harness-pool.h
libhftest_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(JSONC_CFLAGS)
libhftest_la_LIBADD = libholdfast-core.la $(CUNIT_LIBS) $(JSONC_LIBS)

UNIT_TESTS = \
	tests/unit/test-key \
	tests/unit/test-store \
	tests/unit/test-config \
	tests/unit/test-crypto \
	tests/unit/test-source-local \
	tests/unit/test-hsm-multiprocess \
	tests/unit/test-pool \
	tests/unit/test-root \
	tests/unit/test-pool-repl \
	tests/unit/test-source-pool \
	tests/unit/test-source-pool-ec \
	tests/unit/test-module-pool-aes \
	tests/unit/test-module-pool-wrap \
	tests/unit/test-audit \
	tests/unit/test-core \
	tests/unit/test-policy \
	tests/unit/test-module-general \
	tests/unit/test-module-pin \
	tests/unit/test-module-opstate \
	tests/unit/test-module-objects \
	tests/unit/test-module-session-objects \
	tests/unit/test-module-cert-data \
	tests/unit/test-module-crypto \
	tests/unit/test-module-symmetric \
	tests/unit/test-module-derive \
	tests/unit/test-module-copy \
	tests/unit/test-module-curves
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CUNIT_CFLAGS) $(SQLITE_CFLAGS) $(JSONC_CFLAGS)
UNIT_LDADD = libhftest.la libholdfast-core.la $(CUNIT_LIBS) $(JSONC_LIBS) $(SQLITE_LIBS)

tests_unit_test_key_SOURCES = tests/unit/test-key.c
tests_unit_test_key_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_key_LDADD = $(UNIT_LDADD)
tests_unit_test_store_SOURCES = tests/unit/test-store.c
tests_unit_test_store_CPPFLAGS = $(UNIT_CPPFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_store_LDADD = $(UNIT_LDADD) $(LIBPQ_LIBS)
# The same suite on PostgreSQL, a server of its own (tests/integration/pg-lib.sh).
TESTS += tests/unit/store-pg.sh
EXTRA_DIST += tests/unit/store-pg.sh tests/integration/pg-lib.sh
# hf_store_migrate (holdfast store migrate), SQLite into a PostgreSQL server of its own.
check_PROGRAMS += tests/unit/test-store-migrate
tests_unit_test_store_migrate_SOURCES = tests/unit/test-store-migrate.c
tests_unit_test_store_migrate_CPPFLAGS = $(UNIT_CPPFLAGS) $(LIBPQ_CFLAGS)
tests_unit_test_store_migrate_LDADD = $(UNIT_LDADD) $(LIBPQ_LIBS)
TESTS += tests/unit/store-migrate-pg.sh
EXTRA_DIST += tests/unit/store-migrate-pg.sh
tests_unit_test_config_SOURCES = tests/unit/test-config.c
tests_unit_test_config_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_config_LDADD = $(UNIT_LDADD)
tests_unit_test_crypto_SOURCES = tests/unit/test-crypto.c
tests_unit_test_crypto_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_crypto_LDADD = $(UNIT_LDADD)
tests_unit_test_source_local_SOURCES = tests/unit/test-source-local.c
tests_unit_test_source_local_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_source_local_LDADD = $(UNIT_LDADD)
tests_unit_test_hsm_multiprocess_SOURCES = tests/unit/test-hsm-multiprocess.c
tests_unit_test_hsm_multiprocess_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_hsm_multiprocess_LDADD = $(UNIT_LDADD)
# The root over a pool: member b a SoftHSMv2 clone behind the fault shim (built by make check).
tests_unit_test_root_SOURCES = tests/unit/test-root.c
tests_unit_test_root_CPPFLAGS = $(UNIT_CPPFLAGS) \
	-DHF_TEST_SHIM='"$(abs_top_builddir)/tests/shim/.libs/hf-fault-shim.so"'
tests_unit_test_root_LDADD = $(UNIT_LDADD)
tests_unit_test_pool_SOURCES = tests/unit/test-pool.c
tests_unit_test_pool_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_pool_LDADD = $(UNIT_LDADD)
# One member behind the fault shim (built by make check), whose generations fail at first.
tests_unit_test_pool_repl_SOURCES = tests/unit/test-pool-repl.c
tests_unit_test_pool_repl_CPPFLAGS = $(UNIT_CPPFLAGS) \
	-DHF_TEST_SHIM='"$(abs_top_builddir)/tests/shim/.libs/hf-fault-shim.so"'
tests_unit_test_pool_repl_LDADD = $(UNIT_LDADD)
tests_unit_test_source_pool_SOURCES = tests/unit/test-source-pool.c tests/unit/module-loader.h
tests_unit_test_source_pool_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_source_pool_LDADD = $(UNIT_LDADD)
tests_unit_test_source_pool_ec_SOURCES = tests/unit/test-source-pool-ec.c tests/unit/module-loader.h
tests_unit_test_source_pool_ec_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_source_pool_ec_LDADD = $(UNIT_LDADD)
# A PIE exports no symbol by default: the sanitizer runtime finds the suite's own options only if
# this one is in the dynamic table (test-source-pool-ec.c says why it has them).
tests_unit_test_source_pool_ec_LDFLAGS = -Wl,--export-dynamic-symbol=__asan_default_options
tests_unit_test_module_pool_aes_SOURCES = tests/unit/test-module-pool-aes.c tests/unit/module-loader.h
tests_unit_test_module_pool_aes_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_pool_aes_LDADD = $(UNIT_LDADD)
# Failover: member b behind a copy of the fault shim (built by make check).
tests_unit_test_module_pool_wrap_SOURCES = tests/unit/test-module-pool-wrap.c \
	tests/unit/module-loader.h
tests_unit_test_module_pool_wrap_CPPFLAGS = $(UNIT_CPPFLAGS) \
	-DHF_TEST_SHIM='"$(abs_top_builddir)/tests/shim/.libs/hf-fault-shim.so"'
tests_unit_test_module_pool_wrap_LDADD = $(UNIT_LDADD)
tests_unit_test_audit_SOURCES = tests/unit/test-audit.c
tests_unit_test_audit_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_audit_LDADD = $(UNIT_LDADD)
tests_unit_test_core_SOURCES = tests/unit/test-core.c
tests_unit_test_core_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_core_LDADD = $(UNIT_LDADD)
tests_unit_test_policy_SOURCES = tests/unit/test-policy.c
tests_unit_test_policy_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_policy_LDADD = $(UNIT_LDADD)
# The module suites load the built holdfast-pkcs11.so with dlopen, as any PKCS#11 program would.
tests_unit_test_module_general_SOURCES = tests/unit/test-module-general.c tests/unit/module-loader.h
tests_unit_test_module_general_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_general_LDADD = $(UNIT_LDADD)
tests_unit_test_module_pin_SOURCES = tests/unit/test-module-pin.c tests/unit/module-loader.h
tests_unit_test_module_pin_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_pin_LDADD = $(UNIT_LDADD)
tests_unit_test_module_opstate_SOURCES = tests/unit/test-module-opstate.c tests/unit/module-loader.h
tests_unit_test_module_opstate_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_opstate_LDADD = $(UNIT_LDADD)
tests_unit_test_module_objects_SOURCES = tests/unit/test-module-objects.c tests/unit/module-loader.h
tests_unit_test_module_objects_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_objects_LDADD = $(UNIT_LDADD)
tests_unit_test_module_session_objects_SOURCES = tests/unit/test-module-session-objects.c \
	tests/unit/module-loader.h
tests_unit_test_module_session_objects_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_session_objects_LDADD = $(UNIT_LDADD)
tests_unit_test_module_cert_data_SOURCES = tests/unit/test-module-cert-data.c \
	tests/unit/module-loader.h
tests_unit_test_module_cert_data_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_cert_data_LDADD = $(UNIT_LDADD)
tests_unit_test_module_crypto_SOURCES = tests/unit/test-module-crypto.c tests/unit/module-loader.h
tests_unit_test_module_crypto_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_crypto_LDADD = $(UNIT_LDADD)
tests_unit_test_module_derive_SOURCES = tests/unit/test-module-derive.c tests/unit/module-loader.h
tests_unit_test_module_derive_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_derive_LDADD = $(UNIT_LDADD)
tests_unit_test_module_copy_SOURCES = tests/unit/test-module-copy.c tests/unit/module-loader.h
tests_unit_test_module_copy_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_copy_LDADD = $(UNIT_LDADD)
tests_unit_test_module_symmetric_SOURCES = tests/unit/test-module-symmetric.c \
	tests/unit/module-loader.h
tests_unit_test_module_symmetric_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_symmetric_LDADD = $(UNIT_LDADD)
tests_unit_test_module_curves_SOURCES = tests/unit/test-module-curves.c tests/unit/module-loader.h
tests_unit_test_module_curves_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_module_curves_LDADD = $(UNIT_LDADD)
endif
