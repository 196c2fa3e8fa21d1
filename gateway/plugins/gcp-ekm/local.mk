# gcp-ekm: the Google Cloud EKM API v0 plugin (specs/google-ekm.md), its two libraries as
# ../plugin.mk says. The pure parts: request and path parsing, the Key Access Justification
# policy, configuration. The blob is the gateway's (plugin.h's hf_blob_*, gateway/blob.c).
noinst_LTLIBRARIES += gateway/plugins/gcp-ekm/libhf-ekm.la
gateway_plugins_gcp_ekm_libhf_ekm_la_SOURCES = \
	gateway/plugins/gcp-ekm/request.c gateway/plugins/gcp-ekm/request.h \
	gateway/plugins/gcp-ekm/kaj.c gateway/plugins/gcp-ekm/kaj.h \
	gateway/plugins/gcp-ekm/config.c gateway/plugins/gcp-ekm/config.h \
	gateway/plugins/gcp-ekm/policy-file.c
gateway_plugins_gcp_ekm_libhf_ekm_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS) $(INIH_CFLAGS)
gateway_plugins_gcp_ekm_libhf_ekm_la_LIBADD = $(HF_PLUGIN_LIBS) $(INIH_LIBS)

# The plugin.
plugin_LTLIBRARIES += gateway/plugins/gcp-ekm/gcp-ekm.la
gateway_plugins_gcp_ekm_gcp_ekm_la_SOURCES = \
	gateway/plugins/gcp-ekm/internal.h \
	gateway/plugins/gcp-ekm/plugin.c \
	gateway/plugins/gcp-ekm/call.c \
	gateway/plugins/gcp-ekm/auth.c \
	gateway/plugins/gcp-ekm/wrap.c \
	gateway/plugins/gcp-ekm/unwrap.c
gateway_plugins_gcp_ekm_gcp_ekm_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_gcp_ekm_gcp_ekm_la_LDFLAGS = $(HF_PLUGIN_LDFLAGS)
gateway_plugins_gcp_ekm_gcp_ekm_la_LIBADD = gateway/plugins/gcp-ekm/libhf-ekm.la \
	$(HF_PLUGIN_LIBS)

EXTRA_DIST += gateway/plugins/gcp-ekm/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/ekm.mk
include $(top_srcdir)/tests/integration/ekm.mk
include $(top_srcdir)/tests/fuzz/ekm.mk
