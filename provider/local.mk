# holdfast.so: the OpenSSL 3 provider (store, keymgmt, signature, asym cipher, encoders), loaded
# by OpenSSL from its modules directory (`-provider holdfast`, or openssl.cnf). It talks PKCS#11
# only, to the module it dlopens (holdfast-pkcs11.so unless configured otherwise).
osslmodule_LTLIBRARIES = provider/holdfast.la
provider_holdfast_la_SOURCES = \
	provider/provider.h \
	provider/holdfast-provider.c \
	provider/holdfast-p11.c \
	provider/holdfast-uri.c \
	provider/holdfast-key.c \
	provider/holdfast-mech.c \
	provider/holdfast-keymgmt.c \
	provider/holdfast-store.c \
	provider/holdfast-signature.c \
	provider/holdfast-signature-ed25519.c \
	provider/holdfast-asym-cipher.c \
	provider/holdfast-encoder.c
provider_holdfast_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-export-symbols-regex '^OSSL_provider_init$$'
provider_holdfast_la_LIBADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS) $(LIBS)
EXTRA_DIST += provider/README.md
