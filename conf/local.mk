# Installed configuration: the p11-kit registration and the sample config.
p11moduleconf_DATA = conf/holdfast.module
holdfastconfdir = $(sysconfdir)/holdfast
holdfastconf_DATA = conf/holdfast.conf.sample
EXTRA_DIST += conf/holdfast.module.in conf/holdfast.conf.sample
# OpenSSL configuration loading the holdfast provider (provider/README.md).
holdfastconf_DATA += conf/openssl-holdfast.cnf
EXTRA_DIST += conf/openssl-holdfast.cnf
# holdfastd: its sample config and its systemd unit (installed where systemd looks, if known).
holdfastconf_DATA += conf/holdfastd.conf.sample
systemdsystemunitdir = $(prefix)/lib/systemd/system
systemdsystemunit_DATA = conf/holdfastd.service
EXTRA_DIST += conf/holdfastd.conf.sample conf/holdfastd.service.in
# One holdfastd serving all six cloud APIs (README.md, "Six clouds, one gateway").
holdfastconf_DATA += conf/holdfastd-all.conf.sample
EXTRA_DIST += conf/holdfastd-all.conf.sample
CLEANFILES += conf/holdfastd.service
CLEANFILES += conf/holdfast.module

# The module line must name the installed path, known only at make time.
conf/holdfast.module: $(top_srcdir)/conf/holdfast.module.in Makefile
	$(AM_V_GEN)$(MKDIR_P) conf && \
	  sed -e 's|@p11moduledir[@]|$(p11moduledir)|g' $(top_srcdir)/conf/holdfast.module.in > $@

# The unit names the installed daemon and config, known only at make time.
conf/holdfastd.service: $(top_srcdir)/conf/holdfastd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) conf && \
	  sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	  $(top_srcdir)/conf/holdfastd.service.in > $@
# OCI External KMS: sample sections for holdfastd.conf (gateway/plugins/oci-ekms/README.md).
holdfastconf_DATA += conf/oci-ekms.conf.sample
EXTRA_DIST += conf/oci-ekms.conf.sample
# A two-node loopback cluster behind HAProxy (conf/cluster/README.md); not installed, a sample to
# copy. tests/integration/cluster.sh runs it.
EXTRA_DIST += conf/cluster/README.md conf/cluster/haproxy.cfg conf/cluster/node1.conf \
	conf/cluster/node2.conf conf/cluster/holdfast-node1.conf conf/cluster/holdfast-node2.conf
