# aws-xks: the AWS KMS External Key Store proxy API v1 plugin (specs/aws-xks.md), its two
# libraries as ../plugin.mk says. The pure parts: request parsing, the GCM construction,
# configuration, authorization rules.
noinst_LTLIBRARIES += gateway/plugins/aws-xks/libhf-xks.la
gateway_plugins_aws_xks_libhf_xks_la_SOURCES = \
	gateway/plugins/aws-xks/request.c gateway/plugins/aws-xks/request.h \
	gateway/plugins/aws-xks/gcm.c gateway/plugins/aws-xks/crypto.c \
	gateway/plugins/aws-xks/crypto.h \
	gateway/plugins/aws-xks/config.c gateway/plugins/aws-xks/config.h \
	gateway/plugins/aws-xks/authz.c \
	gateway/plugins/aws-xks/health-fleet.c gateway/plugins/aws-xks/health-fleet.h
gateway_plugins_aws_xks_libhf_xks_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_aws_xks_libhf_xks_la_LIBADD = $(HF_PLUGIN_LIBS)

# The plugin.
plugin_LTLIBRARIES += gateway/plugins/aws-xks/aws-xks.la
gateway_plugins_aws_xks_aws_xks_la_SOURCES = \
	gateway/plugins/aws-xks/internal.h \
	gateway/plugins/aws-xks/plugin.c \
	gateway/plugins/aws-xks/auth.c \
	gateway/plugins/aws-xks/metadata.c \
	gateway/plugins/aws-xks/encrypt.c \
	gateway/plugins/aws-xks/decrypt.c \
	gateway/plugins/aws-xks/health.c
gateway_plugins_aws_xks_aws_xks_la_CPPFLAGS = $(HF_PLUGIN_CPPFLAGS)
gateway_plugins_aws_xks_aws_xks_la_LDFLAGS = $(HF_PLUGIN_LDFLAGS)
gateway_plugins_aws_xks_aws_xks_la_LIBADD = gateway/plugins/aws-xks/libhf-xks.la \
	gateway/plugins/aws-xks/libhf-sigv4.la $(HF_PLUGIN_LIBS) $(PTHREAD_LIBS)

EXTRA_DIST += gateway/plugins/aws-xks/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/gateway/plugins/aws-xks/sigv4.mk
include $(top_srcdir)/tests/unit/sigv4.mk
include $(top_srcdir)/tests/unit/xks.mk
include $(top_srcdir)/tests/integration/xks.mk
include $(top_srcdir)/tests/fuzz/sigv4.mk
include $(top_srcdir)/tests/fuzz/xks.mk
