// ICU's spoof checker (UTS #39) and Script_Extensions behind plain C types. Swift cannot import
// ICU's own headers beside Foundation, which carries another ICU whose types (UErrorCode,
// UScriptCode) have the same names; this header names none of them. Statuses are ICU's UErrorCode
// values: above zero is a failure.
#ifndef CICUSHIMS_H
#define CICUSHIMS_H

#include <stdint.h>

typedef struct cicu_spoof_checker cicu_spoof_checker;

/// A checker for the "highly restrictive" level with mixed-number detection; close it with
/// cicu_spoof_close. Checks and skeletons on one checker may run concurrently (ICU's const API).
cicu_spoof_checker *cicu_spoof_open(int32_t *status);
void cicu_spoof_close(cicu_spoof_checker *checker);

/// The failed checks, as cicu_check_* bits (0: passed).
int32_t cicu_spoof_check(const cicu_spoof_checker *checker, const char *utf8, int32_t length, int32_t *status);
/// The confusable skeleton as UTF-8 into dest; returns its length (the needed length, with a
/// buffer-overflow status, when capacity is too small).
int32_t cicu_spoof_skeleton(const cicu_spoof_checker *checker, const char *utf8, int32_t length, char *dest,
                            int32_t capacity, int32_t *status);

extern const int32_t cicu_check_restriction_level;
extern const int32_t cicu_check_mixed_numbers;
extern const int32_t cicu_status_buffer_overflow;

/// Script_Extensions of a code point, as script names ("Latin"); returns how many were written, or
/// 0 when the code point is used with every script (Common, Inherited).
int32_t cicu_script_names(int32_t code_point, const char **names, int32_t capacity);

const char *cicu_error_name(int32_t status);
/// "72.1" and "15.0": the ICU release and the Unicode version of its data (buffers of 32 bytes).
void cicu_versions(char *icu, char *unicode);

#endif
