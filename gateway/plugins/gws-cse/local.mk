# gws-cse: the Google Workspace CSE key service (KACLS) plugin (specs/gws-cse.md).
# The pure parts (the op table and request bodies, configuration, the checks over claims, the
# blob payload and resource key hash) are a convenience library, so the plugin, its unit tests
# and the fuzzer link the same code.
noinst_LTLIBRARIES += gateway/plugins/gws-cse/libhf-cse.la
gateway_plugins_gws_cse_libhf_cse_la_SOURCES = \
	gateway/plugins/gws-cse/request.c gateway/plugins/gws-cse/request.h \
	gateway/plugins/gws-cse/config.c gateway/plugins/gws-cse/config.h \
	gateway/plugins/gws-cse/checks.c gateway/plugins/gws-cse/checks.h \
	gateway/plugins/gws-cse/payload.c gateway/plugins/gws-cse/rkh.c \
	gateway/plugins/gws-cse/payload.h
gateway_plugins_gws_cse_libhf_cse_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_gws_cse_libhf_cse_la_LIBADD = $(JSONC_LIBS) $(CRYPTO_LIBS)

# The plugin: plugin.h's hf_* resolve from holdfastd when it loads the module.
plugin_LTLIBRARIES += gateway/plugins/gws-cse/gws-cse.la
gateway_plugins_gws_cse_gws_cse_la_SOURCES = \
	gateway/plugins/gws-cse/internal.h \
	gateway/plugins/gws-cse/plugin.c \
	gateway/plugins/gws-cse/call.c \
	gateway/plugins/gws-cse/tokens.c \
	gateway/plugins/gws-cse/kek.c \
	gateway/plugins/gws-cse/keyblob.c \
	gateway/plugins/gws-cse/wrap.c \
	gateway/plugins/gws-cse/unwrap.c \
	gateway/plugins/gws-cse/digest.c \
	gateway/plugins/gws-cse/status.c \
	gateway/plugins/gws-cse/cors.c \
	gateway/plugins/gws-cse/stubs.c
gateway_plugins_gws_cse_gws_cse_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_gws_cse_gws_cse_la_LDFLAGS = -module -avoid-version -shared
gateway_plugins_gws_cse_gws_cse_la_LIBADD = gateway/plugins/gws-cse/libhf-cse.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)

EXTRA_DIST += gateway/plugins/gws-cse/README.md

# The plugin's own tests: adding the plugin is this folder and one include line.
include $(top_srcdir)/tests/unit/cse.mk
include $(top_srcdir)/tests/fuzz/cse.mk
