/* `holdfast pool show`'s live figures (cmd-pool-status.c): what this node's pool executor counts
 * for each member, the figures holdfastd's health answer and /metrics give, from
 * hf_core_pool_status. */
#ifndef HF_TOOL_CMD_POOL_STATUS_H
#define HF_TOOL_CMD_POOL_STATUS_H

#include "pkcs11/tool/cli.h"

struct hf_cli_pool_live {
    struct hf_core_pool_live *members; /* owned; n of them, the definition's order */
    size_t n;
    /* The executor's figures aligned with the definition's members, for show's table; NULL when
     * the pool cannot be opened on this node. Owned. */
    struct hf_pool_member_status *st;
};

/* The live figures of pool p on this node (opened for them, as a key's first use opens it):
 * CKR_OK with out->st, or why the pool cannot be opened here (out->st NULL). */
CK_RV hf_cli_pool_live_get(struct hf_cli *cli, const struct hf_store_pool *p,
                           struct hf_cli_pool_live *out);
/* The queue line and each member's figures beyond show's table (text). */
void hf_cli_pool_live_print(const struct hf_cli_pool_live *live);
/* The same into show's JSON: "queue" on the pool, the figures on each of its "members". */
void hf_cli_pool_live_json(const struct hf_cli_pool_live *live, json_object *pool);
void hf_cli_pool_live_clear(struct hf_cli_pool_live *live);

#endif
