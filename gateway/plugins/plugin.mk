# What every plugin's local.mk shares (gateway/README.md, "Adding a plugin"). A plugin builds
# two libtool libraries: its pure parts (parsing, configuration, policy rules) as a convenience
# library, so the plugin, its unit tests and its fuzzer link the same code; and the plugin, a
# module installed in $(plugindir) whose plugin.h hf_* resolve from holdfastd when it loads it
# (never link the gateway in). Automake wants each library's variables under its own name, so
# a local.mk names them and sets them from these (adding what it needs beyond them).
HF_PLUGIN_CPPFLAGS = $(AM_CPPFLAGS) $(JSONC_CFLAGS)
HF_PLUGIN_LIBS = $(JSONC_LIBS) $(CRYPTO_LIBS)
HF_PLUGIN_LDFLAGS = -module -avoid-version -shared
