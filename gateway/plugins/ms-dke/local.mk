# ms-dke: the Microsoft Purview Double Key Encryption key service plugin (specs/ms-dke.md),
# its two libraries as ../plugin.mk says. The pure parts: path and body parsing, the caller's
# identity and the key's allowlist, configuration.
noinst_LTLIBRARIES += gateway/plugins/ms-dke/libhf-dke.la
gateway_plugins_ms_dke_libhf_dke_la_SOURCES = \
	gateway/plugins/ms-dke/request.c gateway/plugins/ms-dke/request.h \
	gateway/plugins/ms-dke/authz.c gateway/plugins/ms-dke/authz.h \
	gateway/plugins/ms-dke/config.c gateway/plugins/ms-dke/config.h
gateway_plugins_ms_dke_libhf_dke_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_ms_dke_libhf_dke_la_LIBADD = $(HF_PLUGIN_LIBS)

# The plugin.
plugin_LTLIBRARIES += gateway/plugins/ms-dke/ms-dke.la
gateway_plugins_ms_dke_ms_dke_la_SOURCES = \
	gateway/plugins/ms-dke/internal.h \
	gateway/plugins/ms-dke/plugin.c \
	gateway/plugins/ms-dke/auth.c \
	gateway/plugins/ms-dke/key.c \
	gateway/plugins/ms-dke/decrypt.c
gateway_plugins_ms_dke_ms_dke_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_ms_dke_ms_dke_la_LDFLAGS = $(HF_PLUGIN_LDFLAGS)
gateway_plugins_ms_dke_ms_dke_la_LIBADD = gateway/plugins/ms-dke/libhf-dke.la \
	$(HF_PLUGIN_LIBS)

EXTRA_DIST += gateway/plugins/ms-dke/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/dke.mk
include $(top_srcdir)/tests/integration/dke.mk
include $(top_srcdir)/tests/fuzz/dke.mk
