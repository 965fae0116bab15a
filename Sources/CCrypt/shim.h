#ifndef CCRYPT_SHIM_H
#define CCRYPT_SHIM_H
#include <crypt.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

// crypt_rn with a struct crypt_data of its own (about 32 KiB, so on the heap rather than a thread's
// stack): zeroed before use as libxcrypt requires, wiped and freed afterwards, so concurrent callers
// never share state and no intermediate value outlives the call. errno is read here, right after the
// call, because nothing in between may overwrite it.
// Returns 0 with the NUL-terminated result in `output`, or an errno value (EINVAL: setting refused,
// ERANGE: phrase or output too long, ENOMEM).
static inline int ccrypt_rn(const char *phrase, const char *setting, char *output, size_t output_size) {
    struct crypt_data *data = calloc(1, sizeof(struct crypt_data));
    if (data == NULL) return ENOMEM;
    errno = 0;
    const char *result = crypt_rn(phrase, setting, data, (int)sizeof(struct crypt_data));
    int status = 0;
    if (result == NULL) {
        status = errno != 0 ? errno : EINVAL;
    } else {
        size_t length = strlen(result);
        if (length >= output_size) {
            status = ERANGE;
        } else {
            memcpy(output, result, length + 1);
        }
    }
    explicit_bzero(data, sizeof(struct crypt_data));
    free(data);
    return status;
}

#endif
