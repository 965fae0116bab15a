/// The password-hash algorithms `PasswordVerifier` accepts. Several stored encodings can share one
/// algorithm (Django's `pbkdf2_sha256$` and passlib's `$pbkdf2-sha256$`); `PasswordHashInspection.scheme`
/// tells them apart.
public enum PasswordHashFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// bcrypt, `$2a$`, `$2b$`, `$2y$` (libxcrypt).
    case bcrypt
    /// Argon2id PHC string, `$argon2id$v=19$m=...,t=...,p=...$salt$hash` (libargon2).
    case argon2id
    /// Argon2i PHC string (libargon2).
    case argon2i
    /// scrypt, as passlib's `$scrypt$ln=...,r=...,p=...$salt$hash` or the `$7$` crypt format (OpenSSL).
    case scrypt
    /// PBKDF2-HMAC-SHA1: Django's `pbkdf2_sha1$` or passlib's `$pbkdf2$` (OpenSSL).
    case pbkdf2SHA1 = "pbkdf2-sha1"
    /// PBKDF2-HMAC-SHA256: Django's `pbkdf2_sha256$` or passlib's `$pbkdf2-sha256$` (OpenSSL).
    case pbkdf2SHA256 = "pbkdf2-sha256"
    /// PBKDF2-HMAC-SHA512: passlib's `$pbkdf2-sha512$` (OpenSSL).
    case pbkdf2SHA512 = "pbkdf2-sha512"
    /// SHA-512 crypt, `$6$[rounds=N$]salt$hash` (libxcrypt).
    case sha512Crypt = "sha512-crypt"
    /// SHA-256 crypt, `$5$[rounds=N$]salt$hash` (libxcrypt).
    case sha256Crypt = "sha256-crypt"
    /// MD5 crypt, `$1$salt$hash` (libxcrypt). Weak, accepted only so such accounts can move off it.
    case md5Crypt = "md5-crypt"
    /// yescrypt, `$y$params$salt$hash` (libxcrypt), the default of current Debian and Fedora.
    case yescrypt
    /// OpenLDAP salted SHA-1, `{SSHA}` + base64(digest ‖ salt). Weak, accepted only to move off it.
    case ldapSSHA = "ldap-ssha"
    /// OpenLDAP salted SHA-256, `{SSHA256}`. Weak, accepted only to move off it.
    case ldapSSHA256 = "ldap-ssha256"
    /// OpenLDAP salted SHA-512, `{SSHA512}`. Weak, accepted only to move off it.
    case ldapSSHA512 = "ldap-ssha512"
    /// phpass's portable hashes, WordPress's `$P$` and phpBB's `$H$`: MD5 iterated 2^cost times
    /// (OpenSSL). Weak, accepted only so such accounts can move off it.
    case phpass
    /// Drupal 7's `$S$`: phpass's construction with SHA-512, truncated to 55 characters (OpenSSL).
    case drupal7
    /// Django's `bcrypt_sha256$`: bcrypt (libxcrypt) of the lowercase hex SHA-256 of the password.
    case bcryptSHA256 = "bcrypt-sha256"
    /// Firebase Authentication's modified scrypt, `$firebase-scrypt$p=<set>$salt$hash`: scrypt with the
    /// project's salt separator and costs, then AES-256-CTR of its signer key (OpenSSL); the project's
    /// parameters are a sealed `HashParameterSet`.
    case firebaseScrypt = "firebase-scrypt"
    /// HMAC-SHA256 of the password (optionally salted) under a key kept sealed in a `HashParameterSet`,
    /// `$hmac-sha256$p=<set>$[salt$]digest`. One HMAC: weak, accepted only to move off it.
    case hmacSHA256 = "hmac-sha256"
    /// HMAC-SHA512, `$hmac-sha512$p=<set>$[salt$]digest`. Weak, accepted only to move off it.
    case hmacSHA512 = "hmac-sha512"
}
