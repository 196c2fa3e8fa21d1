/* Prints the SigV4 headers of one XKS request, for load generators that replay a fixed request
 * (wrk). The signature stays valid for the 5 minutes of skew the proxy allows, which bounds how
 * long a replayed run may last.
 *
 * usage: xks-presign HOST PATH BODY AKID SECRET REGION
 * prints: "X-Amz-Date: ...\nAuthorization: ...\n" */
#include "hf-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gateway/plugins/aws-xks/sigv4.h"

struct headers {
    const char *host;
    const char *date;
};

static const char *header_of(void *ctx, const char *name)
{
    const struct headers *h = ctx;

    if (strcmp(name, "host") == 0) return h->host;
    if (strcmp(name, "x-amz-date") == 0) return h->date;
    if (strcmp(name, "content-type") == 0) return "application/json";
    return NULL;
}

int main(int argc, char **argv)
{
    char date[17];
    time_t now = time(NULL);
    struct tm tm;
    struct headers h;
    struct hf_sigv4_request req = {0};
    char *auth;

    if (argc != 7) {
        fprintf(stderr, "usage: %s HOST PATH BODY AKID SECRET REGION\n", argv[0]);
        return 2;
    }
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    h.host = argv[1];
    h.date = date;
    req.method = "POST";
    req.path = argv[2];
    req.query = "";
    req.header = header_of;
    req.header_ctx = &h;
    req.body = (const unsigned char *)argv[3];
    req.body_len = strlen(argv[3]);
    req.now = now;
    auth = hf_sigv4_sign(&req, argv[4], argv[5], argv[6], "kms-xks-proxy", date,
                         "content-type;host;x-amz-date");
    if (!auth) {
        fprintf(stderr, "xks-presign: cannot sign (bad access key id or secret?)\n");
        return 1;
    }
    printf("X-Amz-Date: %s\nAuthorization: %s\n", date, auth);
    free(auth);
    return 0;
}
