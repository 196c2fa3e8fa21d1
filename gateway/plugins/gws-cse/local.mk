# gws-cse: the Google Workspace CSE key service (KACLS) plugin (specs/gws-cse.md), its two
# libraries as ../plugin.mk says. The pure parts: the op table and request bodies,
# configuration, the checks over claims, the blob payload and resource key hash.
noinst_LTLIBRARIES += gateway/plugins/gws-cse/libhf-cse.la
gateway_plugins_gws_cse_libhf_cse_la_SOURCES = \
	gateway/plugins/gws-cse/request.c gateway/plugins/gws-cse/request.h \
	gateway/plugins/gws-cse/config.c gateway/plugins/gws-cse/config.h \
	gateway/plugins/gws-cse/checks.c gateway/plugins/gws-cse/checks.h \
	gateway/plugins/gws-cse/payload.c gateway/plugins/gws-cse/rkh.c \
	gateway/plugins/gws-cse/payload.h \
	gateway/plugins/gws-cse/minted.c gateway/plugins/gws-cse/minted.h
gateway_plugins_gws_cse_libhf_cse_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_gws_cse_libhf_cse_la_LIBADD = $(HF_PLUGIN_LIBS)

# The plugin.
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
	gateway/plugins/gws-cse/own.c gateway/plugins/gws-cse/own.h \
	gateway/plugins/gws-cse/delegate.c \
	gateway/plugins/gws-cse/certs.c \
	gateway/plugins/gws-cse/rewrap.c
gateway_plugins_gws_cse_gws_cse_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_gws_cse_gws_cse_la_LDFLAGS = $(HF_PLUGIN_LDFLAGS)
gateway_plugins_gws_cse_gws_cse_la_LIBADD = gateway/plugins/gws-cse/libhf-cse.la \
	$(HF_PLUGIN_LIBS) $(PTHREAD_LIBS)

EXTRA_DIST += gateway/plugins/gws-cse/README.md

# The plugin's own tests: adding the plugin is this folder and one include line.
include $(top_srcdir)/tests/unit/cse.mk
include $(top_srcdir)/tests/unit/cse-mint.mk
include $(top_srcdir)/tests/integration/cse.mk
include $(top_srcdir)/tests/integration/cse-rewrap.mk
include $(top_srcdir)/tests/fuzz/cse.mk

# The Gmail (stage 2) operations, their sources and tests.
include $(top_srcdir)/gateway/plugins/gws-cse/gmail.mk
