extension PasswordHash {
    /// OpenLDAP's salted SHA (`{SSHA}`, `{SSHA256}`, `{SSHA512}`, RFC 2307 `userPassword` values):
    /// padded base64 of `digest(password ‖ salt) ‖ salt`. One unsalted-cost digest, so it is weak;
    /// accepted only so directory exports can be imported and rehashed at the first sign-in.
    struct SaltedSHA: Sendable {
        let scheme: String
        let digest: DigestAlgorithm
        let salt: [UInt8]
        let hash: [UInt8]

        var inspection: PasswordHashInspection {
            let format: PasswordHashFormat
            switch digest {
            case .sha1: format = .ldapSSHA
            case .sha256: format = .ldapSSHA256
            case .sha512: format = .ldapSSHA512
            }
            return PasswordHashInspection(
                format: format,
                scheme: scheme,
                costDescription: "1 salted \(digest.rawValue) (\(salt.count)-byte salt)"
            )
        }

        func verify(password: [UInt8]) -> Bool {
            var computed = Digest.hash(digest, password + salt)
            defer { PasswordKDF.wipe(&computed) }
            return ConstantTime.equals(computed, hash)
        }
    }

    /// Longest salt accepted after the digest; OpenLDAP writes 4 bytes, other tools 8 or 16.
    static let maxSaltedSHASaltBytes = 64

    static func parseSaltedSHA(
        _ bytes: [UInt8],
        scheme: String,
        _ digest: DigestAlgorithm
    ) throws(PasswordHashError)
        -> PasswordHash
    {
        let body = bytes.dropFirst(scheme.utf8.count)
        guard let decoded = PasswordHashBase64.decode(body, .standardPadded) else {
            throw .malformed(scheme, "the value after the scheme must be padded canonical base64")
        }
        let saltCount = decoded.count - digest.outputSize
        guard (1...maxSaltedSHASaltBytes).contains(saltCount) else {
            throw .malformed(
                scheme,
                "expected a \(digest.outputSize)-byte \(digest.rawValue) digest followed by a 1 to "
                    + "\(maxSaltedSHASaltBytes)-byte salt, found \(decoded.count) bytes in all"
            )
        }
        return .saltedSHA(
            SaltedSHA(
                scheme: scheme,
                digest: digest,
                salt: Array(decoded.suffix(saltCount)),
                hash: Array(decoded.prefix(digest.outputSize))
            )
        )
    }

    /// RFC 2307's `{CRYPT}` followed by a crypt(3) string: the crypt hash is parsed and bounded as
    /// if it stood alone. Only the libxcrypt formats may follow (bcrypt, sha-crypt, md5-crypt,
    /// yescrypt); DES crypt, which `{CRYPT}` values also carry, is refused as unknown.
    static func parseLDAPCrypt(_ bytes: [UInt8], limits: PasswordHashLimits) throws(PasswordHashError) -> PasswordHash {
        let prefix = "{CRYPT}"
        let inner = Array(bytes.dropFirst(prefix.utf8.count))
        guard let (scheme, parse) = Self.scheme(of: Array(inner.prefix(longestPrefix))), scheme.hasPrefix("$"),
            !["$argon2id$", "$argon2i$", "$scrypt$", "$pbkdf2$", "$pbkdf2-sha256$", "$pbkdf2-sha512$"].contains(scheme)
        else {
            throw .malformed(
                prefix,
                "the value after {CRYPT} must be a bcrypt, sha512-crypt, sha256-crypt, md5-crypt or yescrypt hash",
                fix: "DES crypt and other crypt(3) formats are not accepted; have the user reset the password"
            )
        }
        let parsed = try parse(inner, limits)
        guard case .libxcrypt(let hash) = parsed else {
            throw .malformed(prefix, "the value after {CRYPT} is not a crypt(3) hash")
        }
        return .libxcrypt(
            Libxcrypt(
                format: hash.format,
                scheme: prefix + hash.scheme,
                libxcryptScheme: hash.scheme,
                costDescription: hash.costDescription,
                encoded: hash.encoded,
                maxPasswordBytes: hash.maxPasswordBytes
            )
        )
    }
}
