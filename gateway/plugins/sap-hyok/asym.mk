# sap-hyok's asymmetric routes (specs/sap-hyok.md "Crypto"): asymmetric-encrypt/-decrypt
# (RSAES-OAEP), asymmetric-sign/-verify (RSASSA-PSS) and get-public-key. The pure part (the OAEP
# plaintext limit, the PSS message rules and mechanisms) joins the plugin's convenience library,
# which its unit test links; asym.c is in the plugin's own list. Included from local.mk, after
# the plugin's own lists.
gateway_plugins_sap_hyok_libhf_sap_la_SOURCES += \
	gateway/plugins/sap-hyok/asym-alg.c gateway/plugins/sap-hyok/asym.h

include $(top_srcdir)/tests/unit/sap-asym.mk
include $(top_srcdir)/tests/integration/sap-asym.mk
