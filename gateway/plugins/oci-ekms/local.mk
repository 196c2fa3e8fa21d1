# oci-ekms: the OCI External KMS (EKMS vendor API) plugin (specs/oci-ekms.md), its two
# libraries as ../plugin.mk says. The pure parts: paths, bodies, scopes, configuration. The
# blob is the gateway's.
noinst_LTLIBRARIES += gateway/plugins/oci-ekms/libhf-oci.la
gateway_plugins_oci_ekms_libhf_oci_la_SOURCES = \
	gateway/plugins/oci-ekms/request.c gateway/plugins/oci-ekms/request.h \
	gateway/plugins/oci-ekms/config.c gateway/plugins/oci-ekms/config.h
gateway_plugins_oci_ekms_libhf_oci_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_oci_ekms_libhf_oci_la_LIBADD = $(HF_PLUGIN_LIBS)

# The plugin.
plugin_LTLIBRARIES += gateway/plugins/oci-ekms/oci-ekms.la
gateway_plugins_oci_ekms_oci_ekms_la_SOURCES = \
	gateway/plugins/oci-ekms/internal.h \
	gateway/plugins/oci-ekms/plugin.c \
	gateway/plugins/oci-ekms/call.c \
	gateway/plugins/oci-ekms/auth.c \
	gateway/plugins/oci-ekms/metadata.c \
	gateway/plugins/oci-ekms/crypt.c \
	gateway/plugins/oci-ekms/random.c
gateway_plugins_oci_ekms_oci_ekms_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_oci_ekms_oci_ekms_la_LDFLAGS = $(HF_PLUGIN_LDFLAGS)
gateway_plugins_oci_ekms_oci_ekms_la_LIBADD = gateway/plugins/oci-ekms/libhf-oci.la \
	$(HF_PLUGIN_LIBS)

EXTRA_DIST += gateway/plugins/oci-ekms/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/oci.mk
include $(top_srcdir)/tests/integration/oci.mk
include $(top_srcdir)/tests/fuzz/oci.mk
