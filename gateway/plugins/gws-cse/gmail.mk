# gws-cse stage 2, the Gmail operations (specs/gws-cse.md "Stage 2"): privatekeydecrypt,
# privilegedprivatekeydecrypt, privatekeysign, wrapprivatekey. The pure parts (the algorithm
# table and DigestInfo, the wrapped private key's payload and PKCS#8 rules) join the plugin's
# convenience library, which their unit test links; the session object and the operations are
# the plugin's. Included from local.mk, after the plugin's own lists.
gateway_plugins_gws_cse_libhf_cse_la_SOURCES += \
	gateway/plugins/gws-cse/pk-alg.c gateway/plugins/gws-cse/pk-alg.h \
	gateway/plugins/gws-cse/pk-payload.c gateway/plugins/gws-cse/pk-payload.h
gateway_plugins_gws_cse_gws_cse_la_SOURCES += \
	gateway/plugins/gws-cse/pk-session.c gateway/plugins/gws-cse/pk-session.h \
	gateway/plugins/gws-cse/pk-ops.h gateway/plugins/gws-cse/pk-check.c \
	gateway/plugins/gws-cse/pk-decrypt.c gateway/plugins/gws-cse/pk-sign.c \
	gateway/plugins/gws-cse/pk-wrap.c

include $(top_srcdir)/tests/unit/cse-gmail.mk
include $(top_srcdir)/tests/integration/cse-gmail.mk
