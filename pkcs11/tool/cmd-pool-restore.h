/* `holdfast pool restore POOL MEMBER` (cmd-pool-restore.c): re-seeds an export pool's member
 * token from the store's backups (hf_core_pool_restore). */
#ifndef HF_TOOL_CMD_POOL_RESTORE_H
#define HF_TOOL_CMD_POOL_RESTORE_H

#include "pkcs11/tool/cli.h"

int hf_cmd_pool_restore(struct hf_cli *cli, int argc, char **argv);

#endif
