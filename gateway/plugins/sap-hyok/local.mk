# sap-hyok: the SAP HYOK plugin, SAP Data Custodian's customer-managed keystore
# (specs/sap-hyok.md), its two libraries as ../plugin.mk says. The pure parts: request parsing,
# paging, RFC 3339, configuration, and the AES-GCM layout (gcm.c, over plugin.h's
# hf_gcm_seal/open).
noinst_LTLIBRARIES += gateway/plugins/sap-hyok/libhf-sap.la
gateway_plugins_sap_hyok_libhf_sap_la_SOURCES = \
	gateway/plugins/sap-hyok/request.c gateway/plugins/sap-hyok/request.h \
	gateway/plugins/sap-hyok/config.c gateway/plugins/sap-hyok/config.h \
	gateway/plugins/sap-hyok/gcm.c gateway/plugins/sap-hyok/gcm.h
gateway_plugins_sap_hyok_libhf_sap_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_sap_hyok_libhf_sap_la_LIBADD = $(HF_PLUGIN_LIBS)

# The plugin. asym.c (the asymmetric routes) is written against internal.h's contract.
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
gateway_plugins_sap_hyok_sap_hyok_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_sap_hyok_sap_hyok_la_LDFLAGS = $(HF_PLUGIN_LDFLAGS)
gateway_plugins_sap_hyok_sap_hyok_la_LIBADD = gateway/plugins/sap-hyok/libhf-sap.la \
	$(HF_PLUGIN_LIBS)

EXTRA_DIST += gateway/plugins/sap-hyok/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/tests/unit/sap.mk
include $(top_srcdir)/tests/integration/sap.mk
include $(top_srcdir)/tests/fuzz/sap.mk
include $(top_srcdir)/gateway/plugins/sap-hyok/asym.mk
