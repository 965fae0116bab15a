#include "CICUShims.h"

#include <unicode/uchar.h>
#include <unicode/uscript.h>
#include <unicode/uspoof.h>
#include <unicode/uversion.h>

const int32_t cicu_check_restriction_level = USPOOF_RESTRICTION_LEVEL;
const int32_t cicu_check_mixed_numbers = USPOOF_MIXED_NUMBERS;
const int32_t cicu_status_buffer_overflow = U_BUFFER_OVERFLOW_ERROR;

cicu_spoof_checker *cicu_spoof_open(int32_t *status) {
    UErrorCode code = U_ZERO_ERROR;
    USpoofChecker *checker = uspoof_open(&code);
    if (U_SUCCESS(code)) {
        // Only the restriction checks: the default set also has checks (invisible characters,
        // allowed characters) that the username profile does its own way.
        uspoof_setChecks(checker, USPOOF_RESTRICTION_LEVEL | USPOOF_MIXED_NUMBERS, &code);
        uspoof_setRestrictionLevel(checker, USPOOF_HIGHLY_RESTRICTIVE);
    }
    *status = code;
    if (U_FAILURE(code)) {
        uspoof_close(checker);
        return 0;
    }
    return (cicu_spoof_checker *)checker;
}

void cicu_spoof_close(cicu_spoof_checker *checker) { uspoof_close((USpoofChecker *)checker); }

int32_t cicu_spoof_check(const cicu_spoof_checker *checker, const char *utf8, int32_t length, int32_t *status) {
    UErrorCode code = U_ZERO_ERROR;
    int32_t result = uspoof_check2UTF8((const USpoofChecker *)checker, utf8, length, 0, &code);
    *status = code;
    return result & USPOOF_ALL_CHECKS;
}

int32_t cicu_spoof_skeleton(const cicu_spoof_checker *checker, const char *utf8, int32_t length, char *dest,
                            int32_t capacity, int32_t *status) {
    UErrorCode code = U_ZERO_ERROR;
    int32_t written = uspoof_getSkeletonUTF8((const USpoofChecker *)checker, 0, utf8, length, dest, capacity, &code);
    *status = code;
    return written;
}

int32_t cicu_script_names(int32_t code_point, const char **names, int32_t capacity) {
    UScriptCode scripts[32];
    UErrorCode code = U_ZERO_ERROR;
    int32_t count = uscript_getScriptExtensions(code_point, scripts, 32, &code);
    if (U_FAILURE(code)) return 0;
    int32_t written = 0;
    for (int32_t i = 0; i < count; i++) {
        if (scripts[i] == USCRIPT_COMMON || scripts[i] == USCRIPT_INHERITED) return 0;
        if (written < capacity) names[written++] = uscript_getName(scripts[i]);
    }
    return written;
}

const char *cicu_error_name(int32_t status) { return u_errorName((UErrorCode)status); }

void cicu_versions(char *icu, char *unicode) {
    UVersionInfo info;
    u_getVersion(info);
    u_versionToString(info, icu);
    u_getUnicodeVersion(info);
    u_versionToString(info, unicode);
}
