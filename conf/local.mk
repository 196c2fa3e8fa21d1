# Installed configuration: the p11-kit registration and the sample config.
p11moduleconf_DATA = conf/holdfast.module
holdfastconfdir = $(sysconfdir)/holdfast
holdfastconf_DATA = conf/holdfast.conf.sample
EXTRA_DIST += conf/holdfast.module.in conf/holdfast.conf.sample
CLEANFILES += conf/holdfast.module

# The module line must name the installed path, known only at make time.
conf/holdfast.module: $(top_srcdir)/conf/holdfast.module.in Makefile
	$(AM_V_GEN)$(MKDIR_P) conf && \
	  sed -e 's|@p11moduledir[@]|$(p11moduledir)|g' $(top_srcdir)/conf/holdfast.module.in > $@
