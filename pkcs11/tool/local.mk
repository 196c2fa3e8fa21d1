# `holdfast`: the admin CLI. Talks to the core directly (tool -> core).
bin_PROGRAMS += holdfast
holdfast_SOURCES = \
	pkcs11/tool/main.c pkcs11/tool/cli.h \
	pkcs11/tool/output.c \
	pkcs11/tool/cmd-init.c \
	pkcs11/tool/cmd-key.c \
	pkcs11/tool/cmd-link.c \
	pkcs11/tool/cmd-audit.c \
	pkcs11/tool/cmd-crypt.c
holdfast_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
holdfast_LDADD = libholdfast-core.la $(JSONC_LIBS)
