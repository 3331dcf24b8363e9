/*
 * keys_internal.h - the command table and its key-spec interpreter (analysis/
 * only). The table is generated from a real server's COMMAND INFO by
 * scripts/gen-command-table.py into command_table.c.
 */
#ifndef SLOTSCOPE_ANALYSIS_KEYS_INTERNAL_H
#define SLOTSCOPE_ANALYSIS_KEYS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "resp/resp.h"

/* Command flags (from COMMAND INFO). */
enum {
    AN_CMD_READONLY = 1u << 0,  /* only reads: a replica serves it after READONLY */
    AN_CMD_WRITE = 1u << 1,
    AN_CMD_MOVABLE = 1u << 2,   /* key positions depend on the arguments */
    AN_CMD_ADMIN = 1u << 3,
    AN_CMD_BLOCKING = 1u << 4,
    AN_CMD_CONTAINER = 1u << 5  /* has subcommands: argument 1 names one */
};

/* Key spec flags (how the keys are used). */
enum {
    AN_KS_RO = 1u << 0,
    AN_KS_RW = 1u << 1,
    AN_KS_OW = 1u << 2,
    AN_KS_RM = 1u << 3,
    AN_KS_INCOMPLETE = 1u << 4
};

/* begin_search: where the search for keys starts. */
enum { AN_BS_INDEX = 0, AN_BS_KEYWORD = 1 };
/* find_keys: which arguments from there are keys. */
enum { AN_FK_RANGE = 0, AN_FK_KEYNUM = 1 };
/* Hand-written procedures for what key specs cannot say. */
enum { AN_PROC_NONE = 0, AN_PROC_SORT_STORE = 1 };

/* One key spec. For AN_FK_RANGE: a = lastkey, step = keystep, b = limit.
 * For AN_FK_KEYNUM: a = keynumidx, step = keystep, b = firstkey. */
typedef struct an_keyspec {
    uint8_t bs_type;
    uint8_t fk_type;
    int16_t bs_arg;          /* index, or keyword search start (forward) */
    const char *keyword;     /* AN_BS_KEYWORD: upper-case */
    int16_t a;
    int16_t step;
    int16_t b;
    uint8_t flags;           /* AN_KS_* */
} an_keyspec;

/* One command or subcommand ("OBJECT|ENCODING"). */
typedef struct an_cmd {
    const char *name;        /* upper-case */
    int16_t arity;           /* COMMAND INFO arity (negative: at least) */
    uint16_t flags;          /* AN_CMD_* */
    uint16_t spec0;          /* first spec in an_keyspecs */
    uint8_t nspecs;          /* at most 3 */
    uint8_t proc;            /* AN_PROC_* */
    const char *group;       /* COMMAND DOCS group: "string", "cluster", ... */
} an_cmd;

extern const an_keyspec an_keyspecs[];
extern const an_cmd an_commands[];
extern const size_t an_n_commands;
extern const char an_command_table_version[];

/* The command named by name[0..len) (any case), or NULL. */
const an_cmd *an_cmd_lookup(const char *name, size_t len);
/* The same for a name as resp/ decodes it: NUL-terminated in a buffer of
 * RESP_NAME_MAX bytes (all of them readable); fastest when upper case. */
const an_cmd *an_cmd_lookup_name(const char name[RESP_NAME_MAX]);
/* The subcommand "CONTAINER|sub" of a container command, or NULL. */
const an_cmd *an_cmd_lookup_sub(const an_cmd *container, const char *sub, size_t len);
/* The command a request runs: its subcommand when the command has them and
 * argument 1 was kept; the container when the subcommand is unknown; NULL for
 * an unknown command. *sub_known is set to 0 when a subcommand was expected
 * but is unknown. */
const an_cmd *an_cmd_for_request(const resp_request *req, int *sub_known);
/* The same, also giving the command itself (the container for a subcommand;
 * NULL when unknown) in *base when base is not NULL. */
const an_cmd *an_cmd_resolve(const resp_request *req, const an_cmd **base, int *sub_known);

/* Commands the analysis treats on their own (connection state, node links,
 * cluster administration). */
enum {
    AN_SP_NONE = 0,
    AN_SP_ASKING,
    AN_SP_READONLY,
    AN_SP_READWRITE,
    AN_SP_RESET,
    AN_SP_REPLCONF,
    AN_SP_PSYNC,
    AN_SP_SYNC,
    AN_SP_RESTORE_ASKING,
    AN_SP_CLUSTER,
    AN_SP_MIGRATE,
    AN_SP_CLIENT,                /* CLIENT SETNAME / SETINFO: who the client is */
    AN_SP_HELLO                  /* HELLO ... SETNAME */
};
/* Which of them c is (AN_SP_NONE for any other entry, and for NULL). */
uint8_t an_cmd_special(const an_cmd *c);

#endif /* SLOTSCOPE_ANALYSIS_KEYS_INTERNAL_H */
