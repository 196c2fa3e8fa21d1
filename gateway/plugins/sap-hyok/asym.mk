# sap-hyok's asymmetric routes (specs/sap-hyok.md "Crypto"): asymmetric-encrypt/-decrypt
# (RSAES-OAEP), asymmetric-sign/-verify (RSASSA-PSS) and get-public-key. The pure part (the OAEP
# plaintext limit, the PSS message rules and mechanisms) joins the plugin's convenience library,
# which its unit test links; asym.c (in the plugin's own list: what the routes share, and
# get-public-key), asym-oaep.c and asym-pss.c are the plugin's. Included from local.mk, after
# the plugin's own lists.
gateway_plugins_sap_hyok_libhf_sap_la_SOURCES += \
	gateway/plugins/sap-hyok/asym-alg.c gateway/plugins/sap-hyok/asym.h
gateway_plugins_sap_hyok_sap_hyok_la_SOURCES += \
	gateway/plugins/sap-hyok/asym-ops.h \
	gateway/plugins/sap-hyok/asym-oaep.c \
	gateway/plugins/sap-hyok/asym-pss.c

include $(top_srcdir)/tests/unit/sap-asym.mk
include $(top_srcdir)/tests/integration/sap-asym.mk
