# `holdfast`: the admin CLI. Talks to the core directly (tool -> core). Built beside its sources
# (pkcs11/tool/holdfast, where tests and demo.sh run it); installed as $(bindir)/holdfast.
bin_PROGRAMS += pkcs11/tool/holdfast
pkcs11_tool_holdfast_SOURCES = \
	pkcs11/tool/main.c pkcs11/tool/cli.h \
	pkcs11/tool/output.c \
	pkcs11/tool/cmd-init.c \
	pkcs11/tool/cmd-key.c \
	pkcs11/tool/cmd-key-version.c \
	pkcs11/tool/cmd-link.c \
	pkcs11/tool/cmd-link-type.c \
	pkcs11/tool/cmd-audit.c \
	pkcs11/tool/cmd-crypt.c \
	pkcs11/tool/cmd-store.c \
	pkcs11/tool/cmd-uuid.c \
	pkcs11/tool/cmd-token.c \
	pkcs11/tool/cmd-object.c \
	pkcs11/tool/cmd-pool.c \
	pkcs11/tool/cmd-root.c \
	pkcs11/tool/cmd-pool-status.c pkcs11/tool/cmd-pool-status.h \
	pkcs11/tool/cmd-pool-restore.c pkcs11/tool/cmd-pool-restore.h
pkcs11_tool_holdfast_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS) $(UUID_CFLAGS)
pkcs11_tool_holdfast_LDADD = libholdfast-core.la $(JSONC_LIBS) $(UUID_LIBS) $(P11KIT_LIBS) \
	$(CRYPTO_LIBS)
