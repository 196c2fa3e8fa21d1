# sap-hyok: the SAP HYOK plugin, SAP Data Custodian's customer-managed keystore
# (specs/sap-hyok.md). The pure parts (request parsing, paging, RFC 3339, configuration) and the
# AES-GCM layout (gcm.c, over plugin.h's hf_gcm_seal/open) are a convenience library, so the
# plugin, its unit tests and the fuzzer link the same code.
noinst_LTLIBRARIES += gateway/plugins/sap-hyok/libhf-sap.la
gateway_plugins_sap_hyok_libhf_sap_la_SOURCES = \
	gateway/plugins/sap-hyok/request.c gateway/plugins/sap-hyok/request.h \
	gateway/plugins/sap-hyok/config.c gateway/plugins/sap-hyok/config.h \
	gateway/plugins/sap-hyok/gcm.c gateway/plugins/sap-hyok/gcm.h
gateway_plugins_sap_hyok_libhf_sap_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_sap_hyok_libhf_sap_la_LIBADD = $(JSONC_LIBS) $(CRYPTO_LIBS)

# The plugin: plugin.h's hf_* resolve from holdfastd when it loads the module. asym.c (the
# asymmetric routes) is written against internal.h's contract.
plugin_LTLIBRARIES += gateway/plugins/sap-hyok/sap-hyok.la
gateway_plugins_sap_hyok_sap_hyok_la_SOURCES = \
	gateway/plugins/sap-hyok/internal.h \
	gateway/plugins/sap-hyok/plugin.c \
	gateway/plugins/sap-hyok/call.c \
	gateway/plugins/sap-hyok/keystore.c \
	gateway/plugins/sap-hyok/metadata.c \
	gateway/plugins/sap-hyok/versions.c \
	gateway/plugins/sap-hyok/symmetric.c \
	gateway/plugins/sap-hyok/asym.c
gateway_plugins_sap_hyok_sap_hyok_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_sap_hyok_sap_hyok_la_LDFLAGS = -module -avoid-version -shared
gateway_plugins_sap_hyok_sap_hyok_la_LIBADD = gateway/plugins/sap-hyok/libhf-sap.la \
	$(JSONC_LIBS) $(CRYPTO_LIBS)

EXTRA_DIST += gateway/plugins/sap-hyok/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/sap.mk
include $(top_srcdir)/tests/integration/sap.mk
include $(top_srcdir)/tests/fuzz/sap.mk
include $(top_srcdir)/gateway/plugins/sap-hyok/asym.mk
