# SigV4 (AWS Signature Version 4) for the XKS plugin: a convenience library so the plugin, its
# unit test and the fuzzer link the same code.
noinst_LTLIBRARIES += gateway/plugins/aws-xks/libhf-sigv4.la
gateway_plugins_aws_xks_libhf_sigv4_la_SOURCES = \
	gateway/plugins/aws-xks/sigv4.c gateway/plugins/aws-xks/sigv4.h
gateway_plugins_aws_xks_libhf_sigv4_la_LIBADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS)
