#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
// Debian installs libpq's headers under /usr/include/postgresql (pkg-config adds that directory);
// the fallback finds them there when pkg-config is missing.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif

// The diagnostic field codes are character-literal macros; named constants import reliably.
static const int clibpq_diag_sqlstate = PG_DIAG_SQLSTATE;
static const int clibpq_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
static const int clibpq_diag_constraint_name = PG_DIAG_CONSTRAINT_NAME;
static const int clibpq_diag_table_name = PG_DIAG_TABLE_NAME;
static const int clibpq_diag_column_name = PG_DIAG_COLUMN_NAME;
#endif
