/* cmd_store: the `comb store` subcommands (create, info, verify, load, gen);
 * docs/STORE.md is their manual. */
#ifndef COMB_CLI_CMD_STORE_H
#define COMB_CLI_CMD_STORE_H

/* argv[0] is "store". Returns the exit status: 0 done, 1 failed (or, for
 * verify, damage found), 2 usage error. */
int cmd_store(int argc, char **argv);

#endif
