# ms-dke: the Microsoft Purview Double Key Encryption key service plugin (specs/ms-dke.md).
# The pure parts (path and body parsing, the caller's identity and the key's allowlist,
# configuration) are a convenience library, so the plugin, its unit tests and the fuzzer link
# the same code.
noinst_LTLIBRARIES += gateway/plugins/ms-dke/libhf-dke.la
gateway_plugins_ms_dke_libhf_dke_la_SOURCES = \
	gateway/plugins/ms-dke/request.c gateway/plugins/ms-dke/request.h \
	gateway/plugins/ms-dke/authz.c gateway/plugins/ms-dke/authz.h \
	gateway/plugins/ms-dke/config.c gateway/plugins/ms-dke/config.h
gateway_plugins_ms_dke_libhf_dke_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_ms_dke_libhf_dke_la_LIBADD = $(JSONC_LIBS) $(CRYPTO_LIBS)

# The plugin: plugin.h's hf_* resolve from holdfastd when it loads the module.
plugin_LTLIBRARIES += gateway/plugins/ms-dke/ms-dke.la
gateway_plugins_ms_dke_ms_dke_la_SOURCES = \
	gateway/plugins/ms-dke/internal.h \
	gateway/plugins/ms-dke/plugin.c \
	gateway/plugins/ms-dke/auth.c \
	gateway/plugins/ms-dke/key.c \
	gateway/plugins/ms-dke/decrypt.c
gateway_plugins_ms_dke_ms_dke_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_ms_dke_ms_dke_la_LDFLAGS = -module -avoid-version -shared
gateway_plugins_ms_dke_ms_dke_la_LIBADD = gateway/plugins/ms-dke/libhf-dke.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS)

EXTRA_DIST += gateway/plugins/ms-dke/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/dke.mk
include $(top_srcdir)/tests/integration/dke.mk
include $(top_srcdir)/tests/fuzz/dke.mk
