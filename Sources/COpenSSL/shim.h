#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
// Keep the code on the OpenSSL 3 EVP / OSSL_PARAM APIs: deprecated functions are hidden entirely.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

// Macros and composites Swift cannot import, re-exported as functions or constants.
static inline void copenssl_free(void *ptr) { OPENSSL_free(ptr); }
static inline long copenssl_bio_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
static const int copenssl_evp_pkey_public_key = EVP_PKEY_PUBLIC_KEY;
static const int copenssl_evp_pkey_keypair = EVP_PKEY_KEYPAIR;

// APIs such as OSSL_PARAM_BLD_push_BN keep the key-name pointer until later: they must get static C storage,
// never a bridged Swift String. Each name we pass is returned from a literal here.
static inline const char *copenssl_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
static inline const char *copenssl_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }
static inline const char *copenssl_param_group_name(void) { return OSSL_PKEY_PARAM_GROUP_NAME; }
static inline const char *copenssl_param_pub_key(void) { return OSSL_PKEY_PARAM_PUB_KEY; }
static inline const char *copenssl_param_priv_key(void) { return OSSL_PKEY_PARAM_PRIV_KEY; }
static inline const char *copenssl_param_ec_pub_x(void) { return OSSL_PKEY_PARAM_EC_PUB_X; }
static inline const char *copenssl_param_ec_pub_y(void) { return OSSL_PKEY_PARAM_EC_PUB_Y; }
static inline const char *copenssl_param_rsa_bits(void) { return OSSL_PKEY_PARAM_RSA_BITS; }

// RSA key generation: EVP_RSA_gen is a macro over a variadic function.
static inline EVP_PKEY *copenssl_rsa_generate(unsigned int bits) { return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits); }
// EC key generation on a named curve, same reason.
static inline EVP_PKEY *copenssl_ec_generate(const char *curve) { return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve); }

// ---- Apple identity tokens, client secrets and the emulator (RS256 / ES256) ----
// Names that OpenSSL may keep as pointers (EVP_PKEY_CTX_new_from_name stores its key-type name), so they
// come from static C storage too.
static inline const char *copenssl_name_rsa(void) { return "RSA"; }
static inline const char *copenssl_name_ec(void) { return "EC"; }
static inline const char *copenssl_name_md5(void) { return "MD5"; }
static inline const char *copenssl_name_sha1(void) { return "SHA1"; }
static inline const char *copenssl_name_sha256(void) { return "SHA256"; }
static inline const char *copenssl_name_sha512(void) { return "SHA512"; }
static inline const char *copenssl_name_aes_256_gcm(void) { return "AES-256-GCM"; }
static inline const char *copenssl_name_aes_256_ctr(void) { return "AES-256-CTR"; }
static inline const char *copenssl_curve_p256(void) { return "prime256v1"; }
#endif
