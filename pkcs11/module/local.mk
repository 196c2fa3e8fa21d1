# holdfast-pkcs11.so: the PKCS#11 face of the core. Exports C_* only.
p11module_LTLIBRARIES += pkcs11/module/holdfast-pkcs11.la
pkcs11_module_holdfast_pkcs11_la_SOURCES = \
	pkcs11/module/internal.h pkcs11/module/holdfast.h pkcs11/module/pkcs11-compat.h \
	pkcs11/module/module.c \
	pkcs11/module/module-exit.c \
	pkcs11/module/slot.c \
	pkcs11/module/session.c \
	pkcs11/module/object.c \
	pkcs11/module/object-copy.c pkcs11/module/object-copy.h \
	pkcs11/module/attr.c \
	pkcs11/module/label-id.c \
	pkcs11/module/find.c \
	pkcs11/module/keygen.c \
	pkcs11/module/session-objects.c \
	pkcs11/module/cert-data.c pkcs11/module/cert-data-attrs.c pkcs11/module/cert-data.h \
	pkcs11/module/cert-data-copy.c \
	pkcs11/module/session-keys.c \
	pkcs11/module/crypt.c \
	pkcs11/module/sign.c \
	pkcs11/module/digest.c \
	pkcs11/module/wrap.c \
	pkcs11/module/derive.c \
	pkcs11/module/random.c \
	pkcs11/module/mech.c pkcs11/module/mech.h \
	pkcs11/module/entry.c \
	pkcs11/module/mech-aes.c \
	pkcs11/module/mech-aes-gcm.c \
	pkcs11/module/mech-mac.c \
	pkcs11/module/mech-aes-kw.c \
	pkcs11/module/mech-rsa.c \
	pkcs11/module/mech-ecdsa.c \
	pkcs11/module/mech-ecdh.c \
	pkcs11/module/mech-hkdf.c \
	pkcs11/module/mech-eddsa.c \
	pkcs11/module/vendor.c
pkcs11_module_holdfast_pkcs11_la_LDFLAGS = -module -avoid-version -shared -no-undefined \
	-export-symbols-regex '^C_'
pkcs11_module_holdfast_pkcs11_la_LIBADD = libholdfast-core.la $(PTHREAD_LIBS)

holdfastincludedir = $(includedir)/holdfast
holdfastinclude_HEADERS = pkcs11/module/holdfast.h pkcs11/module/pkcs11-compat.h
