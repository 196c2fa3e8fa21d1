#!/bin/sh
# Registration: `make install` puts the module, the CLI and the p11-kit .module file where they
# belong; once registered, p11-kit, GnuTLS's p11tool and p11-kit's proxy see the Holdfast token.
. "${top_srcdir:-.}/tests/integration/lib.sh"
command -v p11-kit >/dev/null || hf_skip "p11-kit not installed"

hf_store_setup

# 1. A staged install lays out every file where the system expects it.
stage="$HF_TMP/stage"
make -s -C "$top_builddir" install DESTDIR="$stage" >"$HF_TMP/install.log" 2>&1 ||
    { cat "$HF_TMP/install.log"; hf_fail "make install failed"; }
modconf=$(sed -n 's/^p11moduleconfdir = //p' "$top_builddir/Makefile")
moddir=$(sed -n 's/^p11moduledir = //p' "$top_builddir/Makefile")
prefix=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
expand() { echo "$1" | sed "s|\${prefix}|$prefix|g; s|\${exec_prefix}|$prefix|g; s|\${libdir}|$prefix/lib|g; s|\${datadir}|$prefix/share|g"; }
modconf=$(expand "$modconf"); moddir=$(expand "$moddir")
[ -f "$stage$modconf/holdfast.module" ] || hf_fail "no $modconf/holdfast.module after make install"
[ -f "$stage$moddir/holdfast-pkcs11.so" ] || hf_fail "no $moddir/holdfast-pkcs11.so after make install"
[ -x "$stage$prefix/bin/holdfast" ] || hf_fail "no $prefix/bin/holdfast after make install"
grep -q "^module: $moddir/holdfast-pkcs11.so" "$stage$modconf/holdfast.module" ||
    hf_fail "holdfast.module does not name the installed module path"

# 2. Register this build's module. As root p11-kit reads only /etc/pkcs11 and /usr/share/p11-kit,
# so the registration goes there and is removed on exit; otherwise the user's config dir.
# p11-kit loads every registered module, p11-kit-trust too, whose constructor deadlocks in
# glibc's locale lock under a preloaded ASan runtime (seen: p11-kit list-modules hung for good).
[ -n "$HF_SANITIZED" ] && { echo "p11-kit: staged install checked; registration skipped in a sanitizer build"; exit 0; }

name="holdfast-test-$$"
if [ "$(id -u)" -eq 0 ]; then
    regdir=/usr/share/p11-kit/modules
else
    export HOME="$HF_TMP/home"; regdir="$HOME/.config/pkcs11/modules"
fi
mkdir -p "$regdir"
# A run killed before its cleanup left a registration behind: drop those of dead processes.
for stale in "$regdir"/holdfast-test-*.module; do
    [ -e "$stale" ] || continue
    pid=${stale##*/holdfast-test-}; pid=${pid%.module}
    kill -0 "$pid" 2>/dev/null || rm -f "$stale"
done
printf 'module: %s\ntrust-policy: no\n' "$HF_MODULE" >"$regdir/$name.module"
hf_on_exit "rm -f '$regdir/$name.module'"

hf_ext p11-kit list-modules >"$HF_TMP/list" 2>&1 || true
grep -q "^$name:" "$HF_TMP/list" || { cat "$HF_TMP/list"; hf_fail "p11-kit list-modules does not show $name"; }
grep -q "Holdfast" "$HF_TMP/list" || { cat "$HF_TMP/list"; hf_fail "p11-kit does not show the Holdfast token"; }

if command -v p11tool >/dev/null; then
    hf_ext p11tool --list-tokens >"$HF_TMP/tokens" 2>&1 || true
    grep -q "Manufacturer: Holdfast" "$HF_TMP/tokens" ||
        { cat "$HF_TMP/tokens"; hf_fail "p11tool --list-tokens does not see the Holdfast token"; }
    # Through the registration, GnuTLS finds keys by PKCS#11 URI after login.
    "$HF_CLI" key create p11kit-ec --alg EC-P256 >/dev/null
    hf_ext env GNUTLS_PIN="$HF_USER_PIN" p11tool --login --list-privkeys "pkcs11:manufacturer=Holdfast" \
        >"$HF_TMP/keys" 2>&1 || true
    grep -q "p11kit-ec" "$HF_TMP/keys" || { cat "$HF_TMP/keys"; hf_fail "p11tool cannot list Holdfast keys"; }
fi
echo "p11-kit: ok"
