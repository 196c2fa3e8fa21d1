#include "hf-build.h"

#include "harness.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/provider.h>

#include "pkcs11/core/crypto.h"
#include "pkcs11/core/secmem.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* Decodes hex into a static-free malloc'd buffer; *len set. Test vectors only. */
static unsigned char *unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex) / 2;
    unsigned char *out = malloc(n ? n : 1);

    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
    *len = n;
    return out;
}

static struct hf_material *aes_from_hex(const char *hex)
{
    size_t len;
    unsigned char *k = unhex(hex, &len);
    struct hf_material *m = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_material_from_bytes(HF_ALG_AES, (unsigned)len * 8, k, len, &m),
                          CKR_OK);
    free(k);
    return m;
}

static bool is_all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0) return false;
    return true;
}

/* ---- secmem -------------------------------------------------------------------------------- */

static void test_secmem_alloc_returns_zeroed_memory(void)
{
    /* Dirty a slot through the API, free it, and the next allocation must still come back zero. */
    unsigned char *p = hf_secmem_alloc(48);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    memset(p, 0xA5, 48);
    hf_secmem_free(p, 48);
    p = hf_secmem_alloc(48);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_TRUE(is_all_zero(p, 48));
    hf_secmem_free(p, 48);
}

static void test_secmem_many_small_allocations_are_distinct(void)
{
    enum { N = 300 }; /* several pages' worth of 64-byte slots */
    unsigned char *p[N];

    for (int i = 0; i < N; i++) {
        size_t len = 1 + (size_t)(i * 37) % 200;
        p[i] = hf_secmem_alloc(len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p[i]);
        CU_ASSERT_TRUE(is_all_zero(p[i], len));
        memset(p[i], i & 0xff, len);
    }
    /* No two allocations overlap: each still holds its own pattern. */
    for (int i = 0; i < N; i++) {
        size_t len = 1 + (size_t)(i * 37) % 200;
        for (size_t j = 0; j < len; j++)
            if (p[i][j] != (i & 0xff)) {
                CU_FAIL("allocations overlap");
                break;
            }
    }
    for (int i = 0; i < N; i += 2)
        hf_secmem_free(p[i], 1 + (size_t)(i * 37) % 200);
    for (int i = 1; i < N; i += 2)
        hf_secmem_free(p[i], 1 + (size_t)(i * 37) % 200);
}

static void test_secmem_large_allocation_works(void)
{
    size_t len = 3 * 4096 + 100;
    unsigned char *p = hf_secmem_alloc(len);

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_TRUE(is_all_zero(p, len));
    memset(p, 0x5A, len);
    hf_secmem_free(p, len);
    hf_secmem_free(NULL, 10); /* tolerated */
    p = hf_secmem_alloc(0);
    CU_ASSERT_PTR_NOT_NULL(p);
    hf_secmem_free(p, 0);
}

/* The VmFlags line of the mapping that holds p, from /proc/self/smaps ("" if not found). */
static void vmflags_of(const void *p, char *out, size_t outlen)
{
    char line[512];
    bool inside = false;
    FILE *f = fopen("/proc/self/smaps", "re");

    out[0] = '\0';
    if (!f) return;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            size_t n = strlen(line + 8) < outlen ? strlen(line + 8) : outlen - 1;
            memcpy(out, line + 8, n);
            out[n] = '\0';
            break;
        }
    }
    fclose(f);
}

/* Key material is not in core dumps ("dd") and not in a forked child ("wf"): the child's copy
 * reads as zeros, the parent's stays. */
static void test_secmem_is_not_dumped_nor_inherited(void)
{
    size_t small = 32, large = 2 * 4096 + 8;
    unsigned char *a = hf_secmem_alloc(small), *b = hf_secmem_alloc(large);
    char flags[256];
    int status = -1;
    pid_t pid;

    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    memset(a, 0x5A, small);
    memset(b, 0xA5, large);
    vmflags_of(a, flags, sizeof(flags));
    CU_ASSERT_PTR_NOT_NULL(strstr(flags, " dd"));
    CU_ASSERT_PTR_NOT_NULL(strstr(flags, " wf"));
    vmflags_of(b, flags, sizeof(flags));
    CU_ASSERT_PTR_NOT_NULL(strstr(flags, " dd"));
    CU_ASSERT_PTR_NOT_NULL(strstr(flags, " wf"));
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) _exit(is_all_zero(a, small) && is_all_zero(b, large) ? 0 : 1);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(a[small - 1], 0x5A);
    CU_ASSERT_EQUAL(b[large - 1], 0xA5);
    hf_secmem_free(a, small);
    hf_secmem_free(b, large);
}

/* ---- OpenSSL's secure heap, as holdfastd and the CLI make it ------------------------------------
 */

static int secure_heap_suite_init(void)
{
    /* Last suite: keys made before stay in ordinary memory, which OpenSSL frees as such. */
    return CRYPTO_secure_malloc_init(1u << 20, 16) == 0;
}

/* One private key's trip through the core's loader (PKCS#8 DER, as unwrapped from the store):
 * its private parts go to the secure heap (CBIGNUM / BN_secure_new) and leave it on release. */
static void private_key_lands_in_the_secure_heap(enum hf_alg alg, unsigned bits)
{
    struct hf_material *made = NULL, *loaded = NULL;
    unsigned char *der = NULL;
    size_t len = 0, before, after;

    CU_ASSERT_EQUAL_FATAL(hf_material_generate(alg, bits, &made), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_material_to_bytes(made, &der, &len), CKR_OK);
    hf_material_unref(made);
    before = CRYPTO_secure_used();
    CU_ASSERT_EQUAL_FATAL(hf_material_from_bytes(alg, bits, der, len, &loaded), CKR_OK);
    after = CRYPTO_secure_used();
    CU_ASSERT(after > before);
    if (getenv("HF_TEST_VERBOSE"))
        fprintf(stderr, "\n    alg %d/%u: %zu bytes of secure heap\n", (int)alg, bits,
                after - before);
    hf_material_unref(loaded);
    CU_ASSERT_EQUAL(CRYPTO_secure_used(), before);
    hf_secmem_free(der, len);
}

static void test_private_keys_land_in_the_secure_heap(void)
{
    CU_ASSERT_FATAL(CRYPTO_secure_malloc_initialized());
    /* The largest key natively; under valgrind, where an RSA-4096 pair takes a minute to make,
     * the same path with a smaller one. */
    private_key_lands_in_the_secure_heap(HF_ALG_RSA, hf_test_under_valgrind() ? 2048 : 4096);
    private_key_lands_in_the_secure_heap(HF_ALG_EC, 256);
    private_key_lands_in_the_secure_heap(HF_ALG_EC, 384);
}

/* ---- library context and errors ------------------------------------------------------------ */

static void test_libctx_is_private_with_default_provider(void)
{
    OSSL_LIB_CTX *ctx = hf_crypto_libctx();

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_PTR_NOT_EQUAL(ctx, OSSL_LIB_CTX_get0_global_default());
    CU_ASSERT_PTR_EQUAL(ctx, hf_crypto_libctx());
    CU_ASSERT_TRUE(OSSL_PROVIDER_available(ctx, "default"));
    CU_ASSERT_FALSE(OSSL_PROVIDER_available(ctx, "legacy"));
}

static void test_failures_leave_no_openssl_errors_but_keep_the_callers(void)
{
    struct hf_material *m = aes_from_hex("000102030405060708090a0b0c0d0e0f");
    unsigned char junk[40] = {0}, out[40];
    size_t outlen = sizeof(out);

    ERR_clear_error();
    CU_ASSERT_EQUAL(hf_aes_kw_unwrap(m, false, junk, sizeof(junk), out, &outlen),
                    CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);

    ERR_raise(ERR_LIB_USER, 42); /* the host application's own pending error */
    outlen = sizeof(out);
    CU_ASSERT_EQUAL(hf_aes_kw_unwrap(m, false, junk, sizeof(junk), out, &outlen),
                    CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_EQUAL(ERR_GET_REASON(ERR_peek_last_error()), 42);
    CU_ASSERT_EQUAL(ERR_GET_LIB(ERR_peek_last_error()), ERR_LIB_USER);
    ERR_clear_error();
    hf_material_unref(m);
}

/* ---- AES-GCM ------------------------------------------------------------------------------- */

/* McGrew & Viega, "The Galois/Counter Mode of Operation", test cases 13-16 and 18 (AES-256). */
static const struct gcm_vector {
    const char *name, *key, *iv, *aad, *pt, *ct, *tag;
} gcm_vectors[] = {
    {"TC13", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"TC14", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "00000000000000000000000000000000",
     "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
    {"TC15", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888", "",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e24"
     "49a6b525b16aedf5aa0de657ba637b391aafd255",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b10"
     "56828838c5f61e6393ba7a0abcc9f662898015ad",
     "b094dac5d93471bdec1a502270e3cc6c"},
    {"TC16", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e24"
     "49a6b525b16aedf5aa0de657ba637b39",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b10"
     "56828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
    {"TC18 (60-byte IV)", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728c3c0c95156809539fcf0e242"
     "9a6b525416aedbf5a0de6a57a637b39b",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e24"
     "49a6b525b16aedf5aa0de657ba637b39",
     "5a8def2f0c9e53f1f75d7853659e2a20eeb2b22aafde6419a058ab4f6f746bf40fc0c3b780f244452da3ebf1"
     "c5d82cdea2418997200ef82e44ae7e3f",
     "a44a8266ee1c8eb0c8b5d4cf5ae9f19a"},
};

static void test_gcm_matches_known_answers(void)
{
    for (size_t i = 0; i < sizeof(gcm_vectors) / sizeof(gcm_vectors[0]); i++) {
        const struct gcm_vector *v = &gcm_vectors[i];
        size_t ivl, aadl, ptl, ctl, tagl, outlen;
        struct hf_material *m = aes_from_hex(v->key);
        unsigned char *iv = unhex(v->iv, &ivl), *aad = unhex(v->aad, &aadl);
        unsigned char *pt = unhex(v->pt, &ptl), *ct = unhex(v->ct, &ctl);
        unsigned char *tag = unhex(v->tag, &tagl);
        unsigned char out[128], back[128];

        outlen = sizeof(out);
        CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, ivl, aad, aadl, 16, pt, ptl, out, &outlen),
                        CKR_OK);
        CU_ASSERT_EQUAL(outlen, ctl + 16);
        CU_ASSERT_EQUAL(memcmp(out, ct, ctl), 0);
        CU_ASSERT_EQUAL(memcmp(out + ctl, tag, 16), 0);

        size_t backlen = sizeof(back);
        CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, ivl, aad, aadl, 16, out, outlen, back, &backlen),
                        CKR_OK);
        CU_ASSERT_EQUAL(backlen, ptl);
        CU_ASSERT_EQUAL(memcmp(back, pt, ptl), 0);
        if (CU_get_number_of_failures() != 0) fprintf(stderr, "failed at %s\n", v->name);
        free(iv), free(aad), free(pt), free(ct), free(tag);
        hf_material_unref(m);
    }
}

static void test_gcm_tampering_is_rejected_and_leaves_no_plaintext(void)
{
    const struct gcm_vector *v = &gcm_vectors[3];
    size_t ivl, aadl, ptl, outlen, backlen;
    struct hf_material *m = aes_from_hex(v->key);
    unsigned char *iv = unhex(v->iv, &ivl), *aad = unhex(v->aad, &aadl), *pt = unhex(v->pt, &ptl);
    unsigned char out[128], back[128];

    outlen = sizeof(out);
    CU_ASSERT_EQUAL_FATAL(hf_aes_gcm_encrypt(m, iv, ivl, aad, aadl, 16, pt, ptl, out, &outlen),
                          CKR_OK);
    /* Flip one bit in the ciphertext, then in the tag, then in the AAD, then in the IV. */
    size_t spots[] = {0, ptl + 15};
    for (size_t i = 0; i < 2; i++) {
        out[spots[i]] ^= 0x01;
        backlen = sizeof(back);
        memset(back, 0xEE, sizeof(back));
        CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, ivl, aad, aadl, 16, out, outlen, back, &backlen),
                        CKR_ENCRYPTED_DATA_INVALID);
        CU_ASSERT_TRUE(is_all_zero(back, ptl));
        out[spots[i]] ^= 0x01;
    }
    aad[0] ^= 0x80;
    backlen = sizeof(back);
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, ivl, aad, aadl, 16, out, outlen, back, &backlen),
                    CKR_ENCRYPTED_DATA_INVALID);
    aad[0] ^= 0x80;
    iv[11] ^= 0x01;
    backlen = sizeof(back);
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, ivl, aad, aadl, 16, out, outlen, back, &backlen),
                    CKR_ENCRYPTED_DATA_INVALID);
    iv[11] ^= 0x01;
    /* A tag shorter than the one made is a different tag length, not a truncation attack. */
    backlen = sizeof(back);
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, ivl, aad, aadl, 12, out, outlen, back, &backlen),
                    CKR_ENCRYPTED_DATA_INVALID);
    free(iv), free(aad), free(pt);
    hf_material_unref(m);
}

static void test_gcm_two_call_sizes_and_short_buffers(void)
{
    struct hf_material *m = NULL;
    unsigned char iv[12] = {1}, pt[33] = {7}, ct[64], back[64];
    size_t outlen = 0, backlen;

    CU_ASSERT_EQUAL_FATAL(hf_material_generate(HF_ALG_AES, 256, &m), CKR_OK);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 12, NULL, 0, 12, pt, 33, NULL, &outlen), CKR_OK);
    CU_ASSERT_EQUAL(outlen, 45);
    outlen = 44;
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 12, NULL, 0, 12, pt, 33, ct, &outlen),
                    CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(outlen, 45);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 12, NULL, 0, 12, pt, 33, ct, &outlen), CKR_OK);
    CU_ASSERT_EQUAL(outlen, 45);

    backlen = 0;
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, 12, NULL, 0, 12, ct, 45, NULL, &backlen), CKR_OK);
    CU_ASSERT_EQUAL(backlen, 33);
    backlen = 32;
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, 12, NULL, 0, 12, ct, 45, back, &backlen),
                    CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(backlen, 33);
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, 12, NULL, 0, 12, ct, 45, back, &backlen), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(back, pt, 33), 0);

    /* In place, as PKCS#11 callers may do. */
    memcpy(back, pt, 33);
    outlen = sizeof(back);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 12, NULL, 0, 16, back, 33, back, &outlen), CKR_OK);
    backlen = sizeof(back);
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, 12, NULL, 0, 16, back, outlen, back, &backlen),
                    CKR_OK);
    CU_ASSERT_EQUAL(memcmp(back, pt, 33), 0);
    hf_material_unref(m);
}

static void test_gcm_rejects_bad_parameters(void)
{
    struct hf_material *m = NULL, *ec = NULL;
    unsigned char iv[200] = {0}, buf[64];
    size_t outlen = sizeof(buf);

    CU_ASSERT_EQUAL_FATAL(hf_material_generate(HF_ALG_AES, 128, &m), CKR_OK);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 12, NULL, 0, 3, buf, 1, buf, &outlen),
                    CKR_MECHANISM_PARAM_INVALID);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 12, NULL, 0, 17, buf, 1, buf, &outlen),
                    CKR_MECHANISM_PARAM_INVALID);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 0, NULL, 0, 16, buf, 1, buf, &outlen),
                    CKR_MECHANISM_PARAM_INVALID);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, NULL, 12, NULL, 0, 16, buf, 1, buf, &outlen),
                    CKR_MECHANISM_PARAM_INVALID);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 12, NULL, 5, 16, buf, 1, buf, &outlen),
                    CKR_MECHANISM_PARAM_INVALID);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(NULL, iv, 12, NULL, 0, 16, buf, 1, buf, &outlen),
                    CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_aes_gcm_decrypt(m, iv, 12, NULL, 0, 16, buf, 15, buf, &outlen),
                    CKR_ENCRYPTED_DATA_LEN_RANGE);
    /* Any IV length from 1 byte works (GHASH'ed into J0 when not 12). */
    outlen = sizeof(buf);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 1, NULL, 0, 4, buf, 8, buf, &outlen), CKR_OK);
    outlen = sizeof(buf);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(m, iv, 128, NULL, 0, 4, buf, 8, buf, &outlen), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_material_generate(HF_ALG_EC, 256, &ec), CKR_OK);
    outlen = sizeof(buf);
    CU_ASSERT_EQUAL(hf_aes_gcm_encrypt(ec, iv, 12, NULL, 0, 16, buf, 1, buf, &outlen),
                    CKR_KEY_TYPE_INCONSISTENT);
    hf_material_unref(m);
    hf_material_unref(ec);
}

/* ---- AES key wrap -------------------------------------------------------------------------- */

static void kw_check(const char *kek, bool pad, const char *key, const char *wrapped)
{
    struct hf_material *m = aes_from_hex(kek);
    size_t kl, wl, outlen = 0, backlen;
    unsigned char *k = unhex(key, &kl), *w = unhex(wrapped, &wl), out[64], back[64];

    CU_ASSERT_EQUAL(hf_aes_kw_wrap(m, pad, k, kl, NULL, &outlen), CKR_OK);
    CU_ASSERT_EQUAL(outlen, wl);
    CU_ASSERT_EQUAL(hf_aes_kw_wrap(m, pad, k, kl, out, &outlen), CKR_OK);
    CU_ASSERT_EQUAL(outlen, wl);
    CU_ASSERT_EQUAL(memcmp(out, w, wl), 0);

    backlen = 0;
    CU_ASSERT_EQUAL(hf_aes_kw_unwrap(m, pad, w, wl, NULL, &backlen), CKR_OK);
    CU_ASSERT_TRUE(backlen >= kl);
    backlen = sizeof(back);
    CU_ASSERT_EQUAL(hf_aes_kw_unwrap(m, pad, w, wl, back, &backlen), CKR_OK);
    CU_ASSERT_EQUAL(backlen, kl);
    CU_ASSERT_EQUAL(memcmp(back, k, kl), 0);

    w[wl - 1] ^= 1;
    backlen = sizeof(back);
    CU_ASSERT_EQUAL(hf_aes_kw_unwrap(m, pad, w, wl, back, &backlen), CKR_WRAPPED_KEY_INVALID);
    CU_ASSERT_TRUE(is_all_zero(back, wl - 8));
    free(k), free(w);
    hf_material_unref(m);
}

static void test_kw_rfc3394_section_4_6(void)
{
    kw_check("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F", false,
             "00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F",
             "28C9F404C4B810F4CBCCB35CFB87F8263F5786E2D80ED326CBC7F0E71A99F43BFB988B9B7A02DD21");
}

static void test_kwp_rfc5649_section_6(void)
{
    kw_check("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8", true,
             "c37b7e6492584340bed12207808941155068f738",
             "138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a");
    kw_check("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8", true, "466f7250617369",
             "afbeb0f07dfbf5419200f2ccb50bb24f");
}

static void test_kw_rejects_bad_lengths(void)
{
    struct hf_material *m = aes_from_hex("000102030405060708090a0b0c0d0e0f");
    unsigned char buf[64] = {0};
    size_t outlen = sizeof(buf);

    CU_ASSERT_EQUAL(hf_aes_kw_wrap(m, false, buf, 12, buf, &outlen), CKR_DATA_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_aes_kw_wrap(m, false, buf, 8, buf, &outlen), CKR_DATA_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_aes_kw_wrap(m, true, buf, 0, buf, &outlen), CKR_DATA_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_aes_kw_unwrap(m, false, buf, 16, buf, &outlen), CKR_WRAPPED_KEY_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_aes_kw_unwrap(m, true, buf, 20, buf, &outlen), CKR_WRAPPED_KEY_LEN_RANGE);
    outlen = 8;
    CU_ASSERT_EQUAL(hf_aes_kw_wrap(m, false, buf, 16, buf, &outlen), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(outlen, 24);
    hf_material_unref(m);
}

/* ---- RSA ----------------------------------------------------------------------------------- */

static struct hf_material *rsa2048;
static EVP_PKEY *rsa_pub;

static int rsa_suite_init(void)
{
    unsigned char *der = NULL;
    size_t len;

    if (hf_material_generate(HF_ALG_RSA, 2048, &rsa2048) != CKR_OK) return -1;
    if (hf_material_public_der(rsa2048, &der, &len) != CKR_OK) return -1;
    CK_RV rv = hf_public_from_der(der, len, &rsa_pub);
    free(der);
    return rv == CKR_OK ? 0 : -1;
}

static int rsa_suite_clean(void)
{
    EVP_PKEY_free(rsa_pub);
    hf_material_unref(rsa2048);
    return 0;
}

static void sign_verify_round_trip(const struct hf_asym_params *p, const unsigned char *msg,
                                   size_t len)
{
    unsigned char sig[512];
    size_t siglen = 0;

    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, p, msg, len, NULL, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 256);
    siglen = 255;
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, p, msg, len, sig, &siglen), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(siglen, 256);
    CU_ASSERT_EQUAL_FATAL(hf_asym_sign(rsa2048, p, msg, len, sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_verify(rsa_pub, p, msg, len, sig, siglen), CKR_OK);
    sig[100] ^= 0x04;
    CU_ASSERT_EQUAL(hf_asym_verify(rsa_pub, p, msg, len, sig, siglen), CKR_SIGNATURE_INVALID);
    sig[100] ^= 0x04;
    CU_ASSERT_EQUAL(hf_asym_verify(rsa_pub, p, msg, len, sig, siglen - 1), CKR_SIGNATURE_LEN_RANGE);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
}

static void test_rsa_pkcs1_sign_verify(void)
{
    struct hf_asym_params p = {.padding = HF_RSA_PKCS1, .md = "SHA256"};
    const unsigned char msg[] = "holdfast";

    sign_verify_round_trip(&p, msg, sizeof(msg));
}

static void test_rsa_pkcs1_on_digestinfo_matches_hashed_signature(void)
{
    /* CKM_RSA_PKCS over DigestInfo(SHA-256(msg)) is CKM_SHA256_RSA_PKCS over msg. */
    static const unsigned char prefix[] = {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60,
                                           0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
                                           0x01, 0x05, 0x00, 0x04, 0x20};
    struct hf_asym_params hashed = {.padding = HF_RSA_PKCS1, .md = "SHA256"};
    struct hf_asym_params raw = {.padding = HF_RSA_PKCS1};
    const unsigned char msg[] = "the quick brown fox";
    unsigned char di[sizeof(prefix) + 32], sig1[256], sig2[256], big[246] = {0};
    size_t n = 32, l1 = sizeof(sig1), l2 = sizeof(sig2);

    memcpy(di, prefix, sizeof(prefix));
    CU_ASSERT_EQUAL_FATAL(hf_digest("SHA256", msg, sizeof(msg), di + sizeof(prefix), &n), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &hashed, msg, sizeof(msg), sig1, &l1), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &raw, di, sizeof(di), sig2, &l2), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(sig1, sig2, 256), 0);
    CU_ASSERT_EQUAL(hf_asym_verify(rsa_pub, &raw, di, sizeof(di), sig1, l1), CKR_OK);
    sign_verify_round_trip(&raw, di, sizeof(di));
    /* RFC 8017 9.2: at most k - 11 bytes */
    l2 = sizeof(sig2);
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &raw, big, 246, sig2, &l2), CKR_DATA_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &raw, big, 245, sig2, &l2), CKR_OK);
}

static void test_rsa_pss_sign_verify_hashed_and_prehashed(void)
{
    struct hf_asym_params hashed = {
        .padding = HF_RSA_PSS, .md = "SHA256", .mgf1_md = "SHA256", .pss_saltlen = 32};
    struct hf_asym_params pre = {.padding = HF_RSA_PSS, .mgf1_md = "SHA256", .pss_saltlen = 32};
    const unsigned char msg[] = "pss message";
    unsigned char dg[64], sig[256];
    size_t n = sizeof(dg), siglen = sizeof(sig);

    sign_verify_round_trip(&hashed, msg, sizeof(msg));
    CU_ASSERT_EQUAL_FATAL(hf_digest("SHA256", msg, sizeof(msg), dg, &n), CKR_OK);
    sign_verify_round_trip(&pre, dg, n);
    /* A signature over the message verifies as one over its digest. */
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &hashed, msg, sizeof(msg), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_verify(rsa_pub, &pre, dg, n, sig, siglen), CKR_OK);
    /* Salt length is part of the signature. */
    pre.pss_saltlen = 20;
    CU_ASSERT_EQUAL(hf_asym_verify(rsa_pub, &pre, dg, n, sig, siglen), CKR_SIGNATURE_INVALID);
    /* A pre-hashed input must be the hash's size; a salt must fit. */
    pre.pss_saltlen = 32;
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &pre, dg, 31, sig, &siglen), CKR_DATA_LEN_RANGE);
    pre.pss_saltlen = 250;
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &pre, dg, 32, sig, &siglen), CKR_MECHANISM_PARAM_INVALID);
    pre.pss_saltlen = 32;
    pre.mgf1_md = "NOT-A-HASH";
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &pre, dg, 32, sig, &siglen), CKR_MECHANISM_PARAM_INVALID);
}

static void test_rsa_oaep_sha256_with_label_round_trip(void)
{
    static const unsigned char label[] = "context-label";
    struct hf_asym_params p = {.padding = HF_RSA_OAEP,
                               .md = "SHA256",
                               .mgf1_md = "SHA256",
                               .label = label,
                               .label_len = sizeof(label) - 1};
    const unsigned char msg[32] = "a 32-byte data encryption key..";
    unsigned char ct[256], pt[256], small[32];
    size_t ctlen = 0, ptlen = 0;

    CU_ASSERT_EQUAL(hf_asym_encrypt(rsa_pub, &p, msg, sizeof(msg), NULL, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(ctlen, 256);
    CU_ASSERT_EQUAL_FATAL(hf_asym_encrypt(rsa_pub, &p, msg, sizeof(msg), ct, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &p, ct, ctlen, NULL, &ptlen), CKR_OK);
    CU_ASSERT_TRUE(ptlen >= sizeof(msg));
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &p, ct, ctlen, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, sizeof(msg));
    CU_ASSERT_EQUAL(memcmp(pt, msg, sizeof(msg)), 0);
    /* A buffer of exactly the message's size is enough. */
    ptlen = sizeof(small);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &p, ct, ctlen, small, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(small, msg, sizeof(msg)), 0);
    ptlen = 31;
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &p, ct, ctlen, small, &ptlen), CKR_BUFFER_TOO_SMALL);
    CU_ASSERT_EQUAL(ptlen, 32);

    struct hf_asym_params wrong = p;
    wrong.label_len--;
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &wrong, ct, ctlen, pt, &ptlen),
                    CKR_ENCRYPTED_DATA_INVALID);
    ct[10] ^= 1;
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &p, ct, ctlen, pt, &ptlen),
                    CKR_ENCRYPTED_DATA_INVALID);
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &p, ct, ctlen - 1, pt, &ptlen),
                    CKR_ENCRYPTED_DATA_LEN_RANGE);
    /* RFC 8017 7.1.1: mLen <= k - 2hLen - 2 = 190 */
    unsigned char big[191] = {0};
    ctlen = sizeof(ct);
    CU_ASSERT_EQUAL(hf_asym_encrypt(rsa_pub, &p, big, 191, ct, &ctlen), CKR_DATA_LEN_RANGE);
    CU_ASSERT_EQUAL(hf_asym_encrypt(rsa_pub, &p, big, 190, ct, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
}

static void test_rsa_pkcs1_and_raw_encryption_round_trip(void)
{
    struct hf_asym_params pk = {.padding = HF_RSA_PKCS1}, raw = {.padding = HF_RSA_RAW};
    unsigned char msg[20] = "pkcs1 v1.5 payload", ct[256], pt[256];
    size_t ctlen = sizeof(ct), ptlen = sizeof(pt);

    CU_ASSERT_EQUAL_FATAL(hf_asym_encrypt(rsa_pub, &pk, msg, sizeof(msg), ct, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &pk, ct, ctlen, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, sizeof(msg));
    CU_ASSERT_EQUAL(memcmp(pt, msg, sizeof(msg)), 0);

    /* Raw RSA: a short input is a number with its leading zeros left out. */
    ctlen = sizeof(ct);
    CU_ASSERT_EQUAL_FATAL(hf_asym_encrypt(rsa_pub, &raw, msg, sizeof(msg), ct, &ctlen), CKR_OK);
    CU_ASSERT_EQUAL(ctlen, 256);
    ptlen = sizeof(pt);
    CU_ASSERT_EQUAL(hf_asym_decrypt(rsa2048, &raw, ct, ctlen, pt, &ptlen), CKR_OK);
    CU_ASSERT_EQUAL(ptlen, 256);
    CU_ASSERT_TRUE(is_all_zero(pt, 256 - sizeof(msg)));
    CU_ASSERT_EQUAL(memcmp(pt + 256 - sizeof(msg), msg, sizeof(msg)), 0);
    /* Raw input at or above the modulus cannot be encrypted. */
    memset(pt, 0xff, 256);
    ctlen = sizeof(ct);
    CU_ASSERT_EQUAL(hf_asym_encrypt(rsa_pub, &raw, pt, 256, ct, &ctlen), CKR_DATA_INVALID);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
}

/* hf_asym_decrypt keeps set-up contexts per key for reuse: one set up for another padding, hash
 * or label must never serve, whatever the order. */
static void test_rsa_decrypt_contexts_keep_to_their_parameters(void)
{
    static const unsigned char label[] = "L";
    const struct hf_asym_params ps[] = {
        {.padding = HF_RSA_OAEP, .md = "SHA256", .mgf1_md = "SHA256"},
        {.padding = HF_RSA_OAEP}, /* SHA-1, OpenSSL's default */
        {.padding = HF_RSA_OAEP, .md = "SHA256", .mgf1_md = "SHA1"},
        {.padding = HF_RSA_OAEP, .md = "SHA256", .label = label, .label_len = 1},
        {.padding = HF_RSA_PKCS1},
    };
    const size_t n = sizeof(ps) / sizeof(ps[0]);
    const unsigned char msg[32] = "one data encryption key, 32 B..";
    unsigned char ct[5][256], pt[256];
    size_t ctlen, ptlen;

    for (size_t i = 0; i < n; i++) {
        ctlen = sizeof(ct[i]);
        CU_ASSERT_EQUAL_FATAL(hf_asym_encrypt(rsa_pub, &ps[i], msg, sizeof(msg), ct[i], &ctlen),
                              CKR_OK);
    }
    /* Each ciphertext under every parameter set, twice round: only its own gives the message
     * (PKCS#1 v1.5 may "open" an OAEP block, 1 in ~400, into other bytes). */
    for (size_t round = 0; round < 2 * n * n; round++) {
        size_t c = round % n, q = (round / n) % n;
        ptlen = sizeof(pt);
        CK_RV rv = hf_asym_decrypt(rsa2048, &ps[q], ct[c], 256, pt, &ptlen);
        bool opened = rv == CKR_OK && ptlen == sizeof(msg) && memcmp(pt, msg, sizeof(msg)) == 0;
        CU_ASSERT_EQUAL(opened, c == q);
        if (c != q && rv != CKR_OK) CU_ASSERT_EQUAL(rv, CKR_ENCRYPTED_DATA_INVALID);
    }
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
}

struct decrypt_run {
    const unsigned char *ct;
    int ok;
};

static void *decrypt_many(void *arg)
{
    struct decrypt_run *r = arg;
    const struct hf_asym_params p = {.padding = HF_RSA_OAEP, .md = "SHA256"};
    unsigned char pt[256];

    for (int i = 0; i < 8; i++) {
        size_t ptlen = sizeof(pt);
        r->ok += hf_asym_decrypt(rsa2048, &p, r->ct, 256, pt, &ptlen) == CKR_OK && ptlen == 32 &&
                 memcmp(pt, "concurrent decryptions of a key.", 32) == 0;
    }
    return NULL;
}

/* Threads decrypting with one key at once each get a context (those made while another is in
 * use on copies of the key), and all of them decrypt. */
static void test_rsa_concurrent_decryptions_of_one_key(void)
{
    const struct hf_asym_params p = {.padding = HF_RSA_OAEP, .md = "SHA256"};
    unsigned char ct[256];
    size_t ctlen = sizeof(ct);
    struct decrypt_run runs[4];
    pthread_t tid[4];

    CU_ASSERT_EQUAL_FATAL(
        hf_asym_encrypt(rsa_pub, &p, (const unsigned char *)"concurrent decryptions of a key.",
                        32, ct, &ctlen),
        CKR_OK);
    for (int i = 0; i < 4; i++) {
        runs[i] = (struct decrypt_run){.ct = ct};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL, decrypt_many, &runs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        CU_ASSERT_EQUAL(runs[i].ok, 8);
    }
}

static void test_rsa_refuses_mismatched_mechanisms(void)
{
    struct hf_asym_params oaep = {.padding = HF_RSA_OAEP, .md = "SHA256"};
    struct hf_asym_params bad = {.padding = HF_RSA_PKCS1, .md = "MD-NOPE"};
    unsigned char buf[256] = {0};
    size_t len = sizeof(buf);

    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &oaep, buf, 32, buf, &len), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(hf_asym_verify(rsa_pub, &oaep, buf, 32, buf, 256), CKR_MECHANISM_INVALID);
    len = sizeof(buf);
    CU_ASSERT_EQUAL(hf_asym_sign(rsa2048, &bad, buf, 32, buf, &len), CKR_MECHANISM_PARAM_INVALID);
    CU_ASSERT_EQUAL(hf_asym_sign(NULL, &bad, buf, 32, buf, &len), CKR_ARGUMENTS_BAD);
}

/* ---- ECDSA --------------------------------------------------------------------------------- */

/* An independent check of r || s: rebuild the DER signature here and let OpenSSL verify it. */
static bool ecdsa_rs_verifies(EVP_PKEY *pub, const unsigned char *dg, size_t dglen,
                              const unsigned char *rs, size_t half)
{
    ECDSA_SIG *s = ECDSA_SIG_new();
    unsigned char *der = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(hf_crypto_libctx(), pub, NULL);
    bool ok;

    ECDSA_SIG_set0(s, BN_bin2bn(rs, (int)half, NULL), BN_bin2bn(rs + half, (int)half, NULL));
    int n = i2d_ECDSA_SIG(s, &der);
    ok = EVP_PKEY_verify_init(ctx) == 1 && EVP_PKEY_verify(ctx, der, (size_t)n, dg, dglen) == 1;
    OPENSSL_free(der);
    ECDSA_SIG_free(s);
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

static void ecdsa_check(unsigned bits, const char *md, size_t half)
{
    struct hf_material *m = NULL;
    struct hf_asym_params hashed = {.md = md}, pre = {.md = NULL};
    const unsigned char msg[] = "ecdsa message";
    unsigned char *der = NULL, dg[64], sig[200];
    size_t derlen, dglen = sizeof(dg), siglen = 0;
    EVP_PKEY *pub = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_material_generate(HF_ALG_EC, bits, &m), CKR_OK);
    CU_ASSERT_EQUAL(hf_material_bits(m), bits);
    CU_ASSERT_EQUAL_FATAL(hf_material_public_der(m, &der, &derlen), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_public_from_der(der, derlen, &pub), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(hf_digest(md, msg, sizeof(msg), dg, &dglen), CKR_OK);

    CU_ASSERT_EQUAL(hf_asym_sign(m, &hashed, msg, sizeof(msg), NULL, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 2 * half);
    CU_ASSERT_EQUAL_FATAL(hf_asym_sign(m, &hashed, msg, sizeof(msg), sig, &siglen), CKR_OK);
    CU_ASSERT_EQUAL(siglen, 2 * half);
    CU_ASSERT_TRUE(ecdsa_rs_verifies(pub, dg, dglen, sig, half));
    CU_ASSERT_EQUAL(hf_asym_verify(pub, &hashed, msg, sizeof(msg), sig, siglen), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_verify(pub, &pre, dg, dglen, sig, siglen), CKR_OK);
    CU_ASSERT_EQUAL(hf_asym_verify(pub, &pre, dg, dglen, sig, siglen - 1), CKR_SIGNATURE_LEN_RANGE);
    sig[3] ^= 0x10;
    CU_ASSERT_EQUAL(hf_asym_verify(pub, &pre, dg, dglen, sig, siglen), CKR_SIGNATURE_INVALID);

    siglen = 2 * half;
    CU_ASSERT_EQUAL_FATAL(hf_asym_sign(m, &pre, dg, dglen, sig, &siglen), CKR_OK);
    CU_ASSERT_TRUE(ecdsa_rs_verifies(pub, dg, dglen, sig, half));
    siglen = 2 * half - 1;
    CU_ASSERT_EQUAL(hf_asym_sign(m, &pre, dg, dglen, sig, &siglen), CKR_BUFFER_TOO_SMALL);
    /* EC keys neither encrypt nor decrypt. */
    struct hf_asym_params oaep = {.padding = HF_RSA_OAEP};
    siglen = sizeof(sig);
    CU_ASSERT_EQUAL(hf_asym_encrypt(pub, &oaep, dg, 16, sig, &siglen), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(hf_asym_decrypt(m, &oaep, sig, 64, dg, &siglen), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
    EVP_PKEY_free(pub);
    free(der);
    hf_material_unref(m);
}

static void test_ecdsa_p256_signature_is_64_byte_r_s(void)
{
    ecdsa_check(256, "SHA256", 32);
}

static void test_ecdsa_p384_signature_is_96_byte_r_s(void)
{
    ecdsa_check(384, "SHA384", 48);
}

/* ---- material ------------------------------------------------------------------------------ */

static void material_round_trip(struct hf_material *m)
{
    unsigned char *bytes = NULL;
    size_t len = 0;
    struct hf_material *back = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_material_to_bytes(m, &bytes, &len), CKR_OK);
    CU_ASSERT_EQUAL_FATAL(
        hf_material_from_bytes(hf_material_alg(m), hf_material_bits(m), bytes, len, &back), CKR_OK);
    CU_ASSERT_EQUAL(hf_material_bits(back), hf_material_bits(m));
    if (hf_material_alg(m) == HF_ALG_AES) {
        size_t a, b;
        const unsigned char *sa = hf_material_secret(m, &a), *sb = hf_material_secret(back, &b);
        CU_ASSERT_EQUAL(a, b);
        CU_ASSERT_EQUAL(memcmp(sa, sb, a), 0);
        CU_ASSERT_PTR_NULL(hf_material_pkey(m));
    } else {
        CU_ASSERT_EQUAL(EVP_PKEY_eq(hf_material_pkey(m), hf_material_pkey(back)), 1);
        CU_ASSERT_PTR_NULL(hf_material_secret(m, NULL));
        /* PKCS#8 PrivateKeyInfo: a SEQUENCE starting with version 0. */
        CU_ASSERT_EQUAL(bytes[0], 0x30);
    }
    /* A wrong algorithm or size is refused, not misread. */
    struct hf_material *bad = NULL;
    enum hf_alg other = hf_material_alg(m) == HF_ALG_RSA ? HF_ALG_EC : HF_ALG_RSA;
    CU_ASSERT_EQUAL(hf_material_from_bytes(other, hf_material_bits(m), bytes, len, &bad),
                    hf_material_alg(m) == HF_ALG_AES ? CKR_DATA_INVALID
                                                     : CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_PTR_NULL(bad);
    CU_ASSERT_EQUAL(
        hf_material_from_bytes(hf_material_alg(m), hf_material_bits(m) + 8, bytes, len, &bad),
        CKR_KEY_SIZE_RANGE);
    CU_ASSERT_PTR_NULL(bad);
    hf_secmem_free(bytes, len);
    hf_material_unref(back);
}

static void test_material_to_and_from_bytes_round_trip(void)
{
    static const struct {
        enum hf_alg alg;
        unsigned bits;
    } cases[] = {
        {HF_ALG_AES, 128}, {HF_ALG_AES, 256}, {HF_ALG_EC, 256}, {HF_ALG_EC, 384}, {HF_ALG_RSA, 0}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct hf_material *m = NULL;
        if (cases[i].alg == HF_ALG_RSA)
            m = hf_material_ref(rsa2048);
        else
            CU_ASSERT_EQUAL_FATAL(hf_material_generate(cases[i].alg, cases[i].bits, &m), CKR_OK);
        CU_ASSERT_EQUAL(hf_material_alg(m), cases[i].alg);
        material_round_trip(m);
        hf_material_unref(m);
    }
}

/* What C_CreateObject builds an imported private key from: a bad CRT value must be refused,
 * not stored to make wrong signatures later. */
static void test_material_from_params_must_make_a_consistent_pair(void)
{
    OSSL_PARAM *params = NULL, *p;
    struct hf_material *m = NULL;

    CU_ASSERT_EQUAL_FATAL(EVP_PKEY_todata(hf_material_pkey(rsa2048), EVP_PKEY_KEYPAIR, &params), 1);
    CU_ASSERT_EQUAL_FATAL(hf_material_from_params(HF_ALG_RSA, params, &m), CKR_OK);
    CU_ASSERT_EQUAL(hf_material_alg(m), HF_ALG_RSA);
    CU_ASSERT_EQUAL(hf_material_bits(m), 2048);
    CU_ASSERT_EQUAL(EVP_PKEY_eq(hf_material_pkey(m), hf_material_pkey(rsa2048)), 1);
    hf_material_unref(m);
    m = NULL;

    CU_ASSERT_EQUAL(hf_material_from_params(HF_ALG_EC, params, &m), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_EQUAL(hf_material_from_params(HF_ALG_AES, params, &m), CKR_KEY_TYPE_INCONSISTENT);
    CU_ASSERT_EQUAL(hf_material_from_params(HF_ALG_RSA, NULL, &m), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_material_from_params(HF_ALG_RSA, params, NULL), CKR_ARGUMENTS_BAD);
    p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_RSA_FACTOR1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    ((unsigned char *)p->data)[0] ^= 0x02; /* p no longer divides n */
    CU_ASSERT_EQUAL(hf_material_from_params(HF_ALG_RSA, params, &m), CKR_ATTRIBUTE_VALUE_INVALID);
    CU_ASSERT_PTR_NULL(m);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
    OSSL_PARAM_free(params);
}

static void test_material_rejects_garbage_and_bad_sizes(void)
{
    unsigned char junk[64] = {0x30, 0x03, 0x02, 0x01, 0x00};
    struct hf_material *m = NULL;
    unsigned char *der;
    size_t len;

    CU_ASSERT_EQUAL(hf_material_from_bytes(HF_ALG_RSA, 2048, junk, sizeof(junk), &m),
                    CKR_DATA_INVALID);
    CU_ASSERT_EQUAL(hf_material_from_bytes(HF_ALG_EC, 256, junk, 5, &m), CKR_DATA_INVALID);
    CU_ASSERT_EQUAL(hf_material_from_bytes(HF_ALG_AES, 256, junk, 31, &m), CKR_KEY_SIZE_RANGE);
    CU_ASSERT_EQUAL(hf_material_from_bytes(HF_ALG_AES, 128, junk, 32, &m), CKR_KEY_SIZE_RANGE);
    CU_ASSERT_PTR_NULL(m);
    CU_ASSERT_EQUAL(hf_material_generate(HF_ALG_AES, 100, &m), CKR_KEY_SIZE_RANGE);
    CU_ASSERT_EQUAL(hf_material_generate(HF_ALG_EC, 255, &m), CKR_KEY_SIZE_RANGE);
    CU_ASSERT_EQUAL(hf_material_generate(HF_ALG_AES, 128, NULL), CKR_ARGUMENTS_BAD);
    CU_ASSERT_EQUAL(hf_material_generate(HF_ALG_AES, 192, &m), CKR_OK);
    CU_ASSERT_EQUAL(hf_material_public_der(m, &der, &len), CKR_KEY_TYPE_INCONSISTENT);
    hf_material_unref(m);
    EVP_PKEY *pub = NULL;
    CU_ASSERT_EQUAL(hf_public_from_der(junk, sizeof(junk), &pub), CKR_DATA_INVALID);
    CU_ASSERT_PTR_NULL(pub);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
}

static void test_material_refcount_keeps_it_alive(void)
{
    struct hf_material *m = NULL;

    CU_ASSERT_EQUAL_FATAL(hf_material_generate(HF_ALG_AES, 256, &m), CKR_OK);
    CU_ASSERT_PTR_EQUAL(hf_material_ref(m), m);
    hf_material_unref(m);
    size_t len;
    CU_ASSERT_PTR_NOT_NULL(hf_material_secret(m, &len)); /* still one reference */
    CU_ASSERT_EQUAL(len, 32);
    hf_material_unref(m);
    hf_material_unref(NULL);
}

/* ---- digest and random --------------------------------------------------------------------- */

static void test_digest_and_random(void)
{
    unsigned char out[EVP_MAX_MD_SIZE], r1[32] = {0}, r2[32] = {0};
    size_t len;
    size_t elen;
    unsigned char *expect =
        unhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", &elen);

    CU_ASSERT_EQUAL(hf_digest("SHA256", (const unsigned char *)"abc", 3, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 32);
    CU_ASSERT_EQUAL(memcmp(out, expect, 32), 0);
    CU_ASSERT_EQUAL(hf_digest("sha2-256", (const unsigned char *)"abc", 3, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(memcmp(out, expect, 32), 0);
    CU_ASSERT_EQUAL(hf_digest("SHA512", NULL, 0, out, &len), CKR_OK);
    CU_ASSERT_EQUAL(len, 64);
    CU_ASSERT_EQUAL(hf_digest("NOPE", NULL, 0, out, &len), CKR_MECHANISM_INVALID);
    CU_ASSERT_EQUAL(hf_random(r1, sizeof(r1)), CKR_OK);
    CU_ASSERT_EQUAL(hf_random(r2, sizeof(r2)), CKR_OK);
    CU_ASSERT_NOT_EQUAL(memcmp(r1, r2, 32), 0);
    CU_ASSERT_EQUAL(hf_random(NULL, 0), CKR_OK);
    CU_ASSERT_EQUAL(hf_random(NULL, 1), CKR_ARGUMENTS_BAD);
    free(expect);
}

int main(void)
{
    static CU_TestInfo secmem_tests[] = {
        {"alloc returns zeroed memory", test_secmem_alloc_returns_zeroed_memory},
        {"many small allocations are distinct", test_secmem_many_small_allocations_are_distinct},
        {"large allocation works", test_secmem_large_allocation_works},
        {"not dumped nor inherited by a child", test_secmem_is_not_dumped_nor_inherited},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo ctx_tests[] = {
        {"libctx is private with the default provider only",
         test_libctx_is_private_with_default_provider},
        {"failures leave no OpenSSL errors but keep the caller's",
         test_failures_leave_no_openssl_errors_but_keep_the_callers},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo aes_tests[] = {
        {"GCM matches known answers (spec cases 13-16, 18)", test_gcm_matches_known_answers},
        {"GCM tampering is rejected and leaves no plaintext",
         test_gcm_tampering_is_rejected_and_leaves_no_plaintext},
        {"GCM two-call sizes and short buffers", test_gcm_two_call_sizes_and_short_buffers},
        {"GCM rejects bad parameters", test_gcm_rejects_bad_parameters},
        {"KW matches RFC 3394 section 4.6", test_kw_rfc3394_section_4_6},
        {"KWP matches RFC 5649 section 6", test_kwp_rfc5649_section_6},
        {"KW rejects bad lengths", test_kw_rejects_bad_lengths},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo rsa_tests[] = {
        {"PKCS#1 v1.5 sign/verify", test_rsa_pkcs1_sign_verify},
        {"PKCS#1 v1.5 on a DigestInfo equals the hashed signature",
         test_rsa_pkcs1_on_digestinfo_matches_hashed_signature},
        {"PSS sign/verify, hashed and pre-hashed", test_rsa_pss_sign_verify_hashed_and_prehashed},
        {"OAEP SHA-256 with label round trip", test_rsa_oaep_sha256_with_label_round_trip},
        {"PKCS#1 and raw encryption round trip", test_rsa_pkcs1_and_raw_encryption_round_trip},
        {"decrypt contexts keep to their parameters",
         test_rsa_decrypt_contexts_keep_to_their_parameters},
        {"concurrent decryptions of one key", test_rsa_concurrent_decryptions_of_one_key},
        {"refuses mismatched mechanisms", test_rsa_refuses_mismatched_mechanisms},
        {"material to/from bytes round trip", test_material_to_and_from_bytes_round_trip},
        {"material from params must make a consistent pair",
         test_material_from_params_must_make_a_consistent_pair},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo ec_tests[] = {
        {"P-256 signature is 64-byte r||s", test_ecdsa_p256_signature_is_64_byte_r_s},
        {"P-384 signature is 96-byte r||s", test_ecdsa_p384_signature_is_96_byte_r_s},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo misc_tests[] = {
        {"material rejects garbage and bad sizes", test_material_rejects_garbage_and_bad_sizes},
        {"material refcount keeps it alive", test_material_refcount_keeps_it_alive},
        {"digest and random", test_digest_and_random},
        CU_TEST_INFO_NULL,
    };
    static CU_TestInfo secure_heap_tests[] = {
        {"private keys land in the secure heap", test_private_keys_land_in_the_secure_heap},
        CU_TEST_INFO_NULL,
    };
    static CU_SuiteInfo suites[] = {
        {"secmem", NULL, NULL, NULL, NULL, secmem_tests},
        {"crypto context", NULL, NULL, NULL, NULL, ctx_tests},
        {"AES", NULL, NULL, NULL, NULL, aes_tests},
        {"RSA", rsa_suite_init, rsa_suite_clean, NULL, NULL, rsa_tests},
        {"ECDSA", NULL, NULL, NULL, NULL, ec_tests},
        {"material, digest, random", NULL, NULL, NULL, NULL, misc_tests},
        {"secure heap", secure_heap_suite_init, NULL, NULL, NULL, secure_heap_tests},
        CU_SUITE_INFO_NULL,
    };
    return hf_test_run(suites);
}
