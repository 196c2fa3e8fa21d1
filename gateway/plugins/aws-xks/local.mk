# aws-xks: the AWS KMS External Key Store proxy API v1 plugin (specs/aws-xks.md).
# The pure parts (request parsing, the GCM construction, configuration, authorization rules) are a
# convenience library, so the plugin, its unit tests and the fuzzer link the same code.
noinst_LTLIBRARIES += gateway/plugins/aws-xks/libhf-xks.la
gateway_plugins_aws_xks_libhf_xks_la_SOURCES = \
	gateway/plugins/aws-xks/request.c gateway/plugins/aws-xks/request.h \
	gateway/plugins/aws-xks/gcm.c gateway/plugins/aws-xks/crypto.c \
	gateway/plugins/aws-xks/crypto.h \
	gateway/plugins/aws-xks/config.c gateway/plugins/aws-xks/config.h \
	gateway/plugins/aws-xks/authz.c \
	gateway/plugins/aws-xks/health-fleet.c gateway/plugins/aws-xks/health-fleet.h
gateway_plugins_aws_xks_libhf_xks_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_aws_xks_libhf_xks_la_LIBADD = $(JSONC_LIBS) $(CRYPTO_LIBS)

# The plugin: hf_* of plugin.h resolve from holdfastd when it loads the module (never link the
# gateway in).
plugin_LTLIBRARIES += gateway/plugins/aws-xks/aws-xks.la
gateway_plugins_aws_xks_aws_xks_la_SOURCES = \
	gateway/plugins/aws-xks/internal.h \
	gateway/plugins/aws-xks/plugin.c \
	gateway/plugins/aws-xks/auth.c \
	gateway/plugins/aws-xks/metadata.c \
	gateway/plugins/aws-xks/encrypt.c \
	gateway/plugins/aws-xks/decrypt.c \
	gateway/plugins/aws-xks/health.c
gateway_plugins_aws_xks_aws_xks_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
gateway_plugins_aws_xks_aws_xks_la_LDFLAGS = -module -avoid-version -shared
gateway_plugins_aws_xks_aws_xks_la_LIBADD = gateway/plugins/aws-xks/libhf-xks.la \
	gateway/plugins/aws-xks/libhf-sigv4.la $(JSONC_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS)

EXTRA_DIST += gateway/plugins/aws-xks/README.md

# Its tests (the scheme of gateway/README.md, "Adding a plugin").
include $(top_srcdir)/gateway/plugins/aws-xks/sigv4.mk
include $(top_srcdir)/tests/unit/sigv4.mk
include $(top_srcdir)/tests/unit/xks.mk
include $(top_srcdir)/tests/integration/xks.mk
include $(top_srcdir)/tests/fuzz/sigv4.mk
include $(top_srcdir)/tests/fuzz/xks.mk
