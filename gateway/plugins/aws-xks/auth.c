/* Who may call a key store: SigV4 with one of the store's credentials (sigv4.h does the
 * verification), and, when the store asks for it, a client certificate whose subject or SAN
 * matches. The TLS layer of the gateway has already checked the certificate's chain. */
#include "hf-build.h"

#include "gateway/plugins/aws-xks/internal.h"

#include <fnmatch.h>
#include <string.h>
#include <time.h>

#include "gateway/plugins/aws-xks/sigv4.h"

static const char *header_of(void *ctx, const char *lowercase_name)
{
    return hf_request_header(ctx, lowercase_name);
}

static const char *secret_of(void *ctx, const char *akid)
{
    return hf_xks_store_secret(ctx, akid);
}

static bool san_matches(const char *sans, const char *glob)
{
    /* A NUL-separated list ending with an empty string (plugin.h). */
    for (const char *p = sans; p && *p; p += strlen(p) + 1)
        if (fnmatch(glob, p, 0) == 0) return true;
    return false;
}

static enum hf_status check_client_certificate(const struct hf_xks_store *store,
                                               struct hf_request *req)
{
    const char *subject, *sans;

    if (store->mtls_subject == NULL && store->mtls_san == NULL) return HF_STATUS_OK;
    subject = hf_request_client_subject(req);
    sans = hf_request_client_sans(req);
    if (subject == NULL)
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                               "this key store requires a TLS client certificate");
    if (store->mtls_subject != NULL && fnmatch(store->mtls_subject, subject, 0) != 0)
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                               "the client certificate's subject is not the one this key store "
                               "accepts");
    if (store->mtls_san != NULL && !san_matches(sans, store->mtls_san))
        return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                               "no subject alternative name of the client certificate is one "
                               "this key store accepts");
    return HF_STATUS_OK;
}

/* SigV4 reads one Authorization, one X-Amz-Date and one Host. With two of any, which one a
 * verifier (or a balancer in front of it) takes decides what was signed, so the request is
 * refused as a signature that cannot be verified: the spec answers every SigV4 failure with
 * 401 AuthenticationFailedException, and nothing is validated before authentication. */
static enum hf_status check_signed_inputs_once(struct hf_request *req)
{
    static const char *const once[] = {"Authorization", "X-Amz-Date", "Host"};
    const char *name = hf_request_header_repeated(req, once, sizeof(once) / sizeof(once[0]));

    if (name == NULL) return HF_STATUS_OK;
    return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED,
                           "SigV4: the %s header appears more "
                           "than once",
                           name);
}

enum hf_status hf_xks_authenticate(const struct hf_xks_store *store, struct hf_xks_store_rt *rt,
                                   struct hf_request *req)
{
    size_t body_len = 0;
    const unsigned char *body = hf_request_body(req, &body_len);
    struct hf_sigv4_request sreq = {
        .method = hf_request_method(req),
        .path = hf_request_path(req),
        .query = hf_request_query(req),
        .header = header_of,
        .header_ctx = req,
        .body = body,
        .body_len = body_len,
        .now = (time_t)hf_wall_s(),
    };
    struct hf_sigv4_policy policy = {
        .service = HF_XKS_SERVICE,
        .regions = (const char *const *)store->regions,
        .nregions = store->nregions,
        .max_skew_s = HF_SIGV4_MAX_SKEW_S,
        .secret = secret_of,
        .secret_ctx = (void *)store,
    };
    char akid[HF_XKS_AKID_MAX + 1] = "", why[160] = "";
    enum hf_sigv4_result res;
    enum hf_status st;

    if ((st = check_client_certificate(store, req)) != HF_STATUS_OK) return st;
    if ((st = check_signed_inputs_once(req)) != HF_STATUS_OK) return st;
    res = hf_sigv4_verify(&sreq, &policy, rt->sigv4, akid, why, sizeof(why));
    if (res == HF_SIGV4_OK) return HF_STATUS_OK;
    /* The access key id names who tried, for the audit record of the refusal. */
    if (akid[0]) hf_request_set_audit(req, akid, NULL, NULL);
    return hf_request_fail(req, HF_STATUS_UNAUTHENTICATED, "SigV4: %s",
                           why[0] ? why : "the signature does not verify");
}
