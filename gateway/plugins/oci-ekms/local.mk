# oci-ekms: the OCI External KMS (EKMS vendor API) plugin (specs/oci-ekms.md).
# The pure parts (paths, bodies, scopes, configuration) are a convenience library, so the
# plugin, its unit tests and the fuzzer link the same code. The blob is the gateway's.
noinst_LTLIBRARIES += gateway/plugins/oci-ekms/libhf-oci.la
gateway_plugins_oci_ekms_libhf_oci_la_SOURCES = \
	gateway/plugins/oci-ekms/request.c gateway/plugins/oci-ekms/request.h \
	gateway/plugins/oci-ekms/config.c gateway/plugins/oci-ekms/config.h
gateway_plugins_oci_ekms_libhf_oci_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_oci_ekms_libhf_oci_la_LIBADD = $(JSONC_LIBS) $(CRYPTO_LIBS)

# The plugin: plugin.h's hf_* resolve from holdfastd when it loads the module.
plugin_LTLIBRARIES += gateway/plugins/oci-ekms/oci-ekms.la
gateway_plugins_oci_ekms_oci_ekms_la_SOURCES = \
	gateway/plugins/oci-ekms/internal.h \
	gateway/plugins/oci-ekms/plugin.c \
	gateway/plugins/oci-ekms/call.c \
	gateway/plugins/oci-ekms/auth.c \
	gateway/plugins/oci-ekms/metadata.c \
	gateway/plugins/oci-ekms/crypt.c \
	gateway/plugins/oci-ekms/random.c
gateway_plugins_oci_ekms_oci_ekms_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_oci_ekms_oci_ekms_la_LDFLAGS = -module -avoid-version -shared
gateway_plugins_oci_ekms_oci_ekms_la_LIBADD = gateway/plugins/oci-ekms/libhf-oci.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS)

EXTRA_DIST += gateway/plugins/oci-ekms/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/oci.mk
include $(top_srcdir)/tests/integration/oci.mk
include $(top_srcdir)/tests/fuzz/oci.mk
