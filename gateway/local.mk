# holdfastd, the gateway daemon, and libhfgateway.la: every gateway source but main.c, for the
# plugins' unit tests (they link it to build requests and run handlers without a server).
GATEWAY_SOURCES = \
	gateway/plugin.h \
	gateway/base64.c \
	gateway/clock.c \
	gateway/rate.c gateway/rate.h \
	gateway/conf-value.c gateway/conf-value.h \
	gateway/conf-secret.c \
	gateway/json.c gateway/json.h \
	gateway/json-member.c \
	gateway/random.c \
	gateway/why.c gateway/why.h \
	gateway/b64url.c gateway/b64url.h \
	gateway/ssrf.c gateway/ssrf.h \
	gateway/outbound.c gateway/outbound.h \
	gateway/jwks.c gateway/jwks.h \
	gateway/jwks-source.c \
	gateway/jwt.c gateway/jwt.h \
	gateway/jwt-cache.c \
	gateway/jwt-sign.c \
	gateway/jwt-trust.c \
	gateway/config.c gateway/config.h gateway/config-internal.h \
	gateway/config-listener.c \
	gateway/router.c gateway/router.h \
	gateway/request.c gateway/request.h \
	gateway/reply.c \
	gateway/tls.c gateway/tls.h \
	gateway/p11.c gateway/p11.h \
	gateway/p11-pool.c \
	gateway/hsm-workers.c gateway/hsm-workers.h \
	gateway/keys.c gateway/keys.h gateway/keys-internal.h \
	gateway/key-check.c \
	gateway/blob.c gateway/blob.h \
	gateway/blob-gcm.c \
	gateway/p11-crypt.c \
	gateway/error-body.c \
	gateway/uuid-text.c \
	gateway/keys-versions.c \
	gateway/audit.c gateway/audit.h \
	gateway/audit-fields.c \
	gateway/preauth.c gateway/preauth.h \
	gateway/metrics.c gateway/metrics.h \
	gateway/metrics-pool.c \
	gateway/metrics-hsm.c \
	gateway/linger.c gateway/linger.h \
	gateway/log.c gateway/log.h \
	gateway/plugins.c gateway/plugins.h \
	gateway/reload.c gateway/reload.h \
	gateway/server.c gateway/server.h
GATEWAY_CPPFLAGS = $(AM_CPPFLAGS) $(MHD_CFLAGS) $(GNUTLS_CFLAGS) $(JSONC_CFLAGS) $(INIH_CFLAGS) \
	$(CURL_CFLAGS)
GATEWAY_LIBS = $(MHD_LIBS) $(GNUTLS_LIBS) $(JSONC_LIBS) $(INIH_LIBS) $(CURL_LIBS) $(CRYPTO_LIBS) \
	$(PTHREAD_LIBS) -ldl

noinst_LTLIBRARIES += gateway/libhfgateway.la
gateway_libhfgateway_la_SOURCES = $(GATEWAY_SOURCES)
gateway_libhfgateway_la_CPPFLAGS = $(GATEWAY_CPPFLAGS)
gateway_libhfgateway_la_LIBADD = $(GATEWAY_LIBS)

# The daemon compiles the sources itself rather than linking the convenience archive: from an
# archive the linker would drop every object main.c does not reach (base64.o), and plugins
# resolve those hf_* symbols from the executable (-export-dynamic; HF_PLUGIN_EXPORT makes them
# visible despite -fvisibility=hidden).
bin_PROGRAMS += gateway/holdfastd
gateway_holdfastd_SOURCES = gateway/main.c $(GATEWAY_SOURCES)
gateway_holdfastd_CPPFLAGS = $(GATEWAY_CPPFLAGS)
gateway_holdfastd_LDFLAGS = -export-dynamic
gateway_holdfastd_LDADD = $(GATEWAY_LIBS)

EXTRA_DIST += gateway/README.md
