# gcp-ekm: the Google Cloud EKM API v0 plugin (specs/google-ekm.md).
# The pure parts (request and path parsing, the Key Access Justification policy, configuration)
# are a convenience library, so the plugin, its unit tests and the fuzzer link the same code.
# The blob is the gateway's (plugin.h's hf_blob_*, gateway/blob.c).
noinst_LTLIBRARIES += gateway/plugins/gcp-ekm/libhf-ekm.la
gateway_plugins_gcp_ekm_libhf_ekm_la_SOURCES = \
	gateway/plugins/gcp-ekm/request.c gateway/plugins/gcp-ekm/request.h \
	gateway/plugins/gcp-ekm/kaj.c gateway/plugins/gcp-ekm/kaj.h \
	gateway/plugins/gcp-ekm/config.c gateway/plugins/gcp-ekm/config.h
gateway_plugins_gcp_ekm_libhf_ekm_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_gcp_ekm_libhf_ekm_la_LIBADD = $(JSONC_LIBS) $(CRYPTO_LIBS)

# The plugin: plugin.h's hf_* resolve from holdfastd when it loads the module.
plugin_LTLIBRARIES += gateway/plugins/gcp-ekm/gcp-ekm.la
gateway_plugins_gcp_ekm_gcp_ekm_la_SOURCES = \
	gateway/plugins/gcp-ekm/internal.h \
	gateway/plugins/gcp-ekm/plugin.c \
	gateway/plugins/gcp-ekm/call.c \
	gateway/plugins/gcp-ekm/auth.c \
	gateway/plugins/gcp-ekm/wrap.c \
	gateway/plugins/gcp-ekm/unwrap.c
gateway_plugins_gcp_ekm_gcp_ekm_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_gcp_ekm_gcp_ekm_la_LDFLAGS = -module -avoid-version -shared
gateway_plugins_gcp_ekm_gcp_ekm_la_LIBADD = gateway/plugins/gcp-ekm/libhf-ekm.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS)

EXTRA_DIST += gateway/plugins/gcp-ekm/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/ekm.mk
include $(top_srcdir)/tests/integration/ekm.mk
include $(top_srcdir)/tests/fuzz/ekm.mk
