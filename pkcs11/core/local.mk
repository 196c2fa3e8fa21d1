# The core: key model, metadata store, key sources, audit. A convenience library linked into the
# PKCS#11 module, the CLI and the unit tests.
noinst_LTLIBRARIES += libholdfast-core.la
libholdfast_core_la_SOURCES = \
	pkcs11/core/annotate.h \
	pkcs11/core/audit.c pkcs11/core/audit.h pkcs11/core/audit-key.c pkcs11/core/audit-key.h \
	pkcs11/core/audit-fields.c pkcs11/core/audit-fields.h \
	pkcs11/core/config.c pkcs11/core/config.h \
	pkcs11/core/core.c pkcs11/core/core.h pkcs11/core/core-internal.h pkcs11/core/core-key.c \
	pkcs11/core/core-object.c pkcs11/core/core-pool.c pkcs11/core/core-pool-status.c \
	pkcs11/core/crypto.c pkcs11/core/crypto.h pkcs11/core/crypto-sym.c pkcs11/core/crypto-sym.h \
	pkcs11/core/crypto-ed25519.c pkcs11/core/crypto-oaep.c \
	pkcs11/core/curve.c pkcs11/core/curve.h \
	pkcs11/core/file.c pkcs11/core/file.h \
	pkcs11/core/hsm.c pkcs11/core/hsm.h pkcs11/core/hsm-providers.c pkcs11/core/hsm-providers.h \
	pkcs11/core/key.c pkcs11/core/key.h \
	pkcs11/core/log.c pkcs11/core/log.h \
	pkcs11/core/pin.c \
	pkcs11/core/pin-attempts.c \
	pkcs11/core/policy.c pkcs11/core/policy.h \
	pkcs11/core/pool.c pkcs11/core/pool.h pkcs11/core/pool-clone.c pkcs11/core/pool-clone.h \
	pkcs11/core/core-pool-sync.c pkcs11/core/core-pool-backup.c \
	pkcs11/core/pool-backup.c pkcs11/core/pool-backup.h \
	pkcs11/core/pool-wrap.c pkcs11/core/pool-wrap.h \
	pkcs11/core/root.c pkcs11/core/root.h pkcs11/core/core-root.c \
	pkcs11/core/secmem.c pkcs11/core/secmem.h \
	pkcs11/core/softhsm-backup.c pkcs11/core/softhsm-backup.h \
	pkcs11/core/source-local.c pkcs11/core/source-local.h \
	pkcs11/core/source-pool.c pkcs11/core/source-pool.h \
	pkcs11/core/store.c pkcs11/core/store.h pkcs11/core/store-internal.h \
	pkcs11/core/store-sqlite.c pkcs11/core/store-pg.c pkcs11/core/pq-api.c pkcs11/core/pq-api.h \
	pkcs11/core/store-migrate.c pkcs11/core/store-migrate.h
libholdfast_core_la_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE_CFLAGS) $(LIBPQ_CFLAGS) $(INIH_CFLAGS) \
	$(JSONC_CFLAGS) $(UUID_CFLAGS)
libholdfast_core_la_LIBADD = $(CRYPTO_LIBS) $(SQLITE_LIBS) $(INIH_LIBS) \
	$(JSONC_LIBS) $(UUID_LIBS) $(PTHREAD_LIBS) $(LIBS)
