extension PasswordHash {
    /// PBKDF2-HMAC in Django's or passlib's encoding, computed by OpenSSL.
    struct PBKDF2: Sendable {
        let scheme: String
        let digest: DigestAlgorithm
        let iterations: Int
        let salt: [UInt8]
        let hash: [UInt8]

        var inspection: PasswordHashInspection {
            let format: PasswordHashFormat
            switch digest {
            case .sha1: format = .pbkdf2SHA1
            case .sha256: format = .pbkdf2SHA256
            case .sha512: format = .pbkdf2SHA512
            }
            return PasswordHashInspection(
                format: format,
                scheme: scheme,
                costDescription: "\(iterations) iterations of HMAC-\(digest.rawValue)"
            )
        }

        func verify(password: [UInt8]) throws(PasswordHashError) -> Bool {
            var computed = try PasswordKDF.pbkdf2(
                digest,
                password: password,
                salt: salt,
                iterations: iterations,
                outputLength: hash.count
            )
            defer { PasswordKDF.wipe(&computed) }
            return ConstantTime.equals(computed, hash)
        }
    }

    /// Django's `pbkdf2_sha256$<iterations>$<salt>$<hash>`: the salt is text, used as its bytes; the
    /// hash is padded standard base64 of exactly one digest.
    static func parseDjangoPBKDF2(
        _ bytes: [UInt8],
        _ digest: DigestAlgorithm,
        limits: PasswordHashLimits
    )
        throws(PasswordHashError) -> PasswordHash
    {
        let scheme = digest == .sha1 ? "pbkdf2_sha1$" : "pbkdf2_sha256$"
        let fields = fields(bytes, after: scheme)
        guard fields.count == 3 else {
            throw .malformed(scheme, "expected <iterations>$<salt>$<hash>")
        }
        guard let iterations = decimal(fields[0]) else {
            throw .malformed(scheme, "the iteration count must be decimal without leading zeros")
        }
        // Printable ASCII is already checked; Django refuses '$' in salts, which the split guarantees.
        guard !fields[1].isEmpty else {
            throw .malformed(scheme, "the salt is empty")
        }
        guard let hash = PasswordHashBase64.decode(fields[2], .standardPadded), hash.count == digest.outputSize else {
            throw .malformed(scheme, "the hash must be padded canonical base64 of \(digest.outputSize) bytes")
        }
        return .pbkdf2(
            try checkedPBKDF2(
                scheme,
                digest,
                iterations: iterations,
                salt: Array(fields[1]),
                hash: hash,
                limits: limits
            )
        )
    }

    /// passlib's `$pbkdf2-sha256$<rounds>$<salt>$<hash>`, salt and hash in passlib's adapted base64
    /// (`./` alphabet, unpadded); the hash is exactly one digest.
    static func parsePasslibPBKDF2(
        _ bytes: [UInt8],
        _ digest: DigestAlgorithm,
        limits: PasswordHashLimits
    )
        throws(PasswordHashError) -> PasswordHash
    {
        let scheme: String
        switch digest {
        case .sha1: scheme = "$pbkdf2$"
        case .sha256: scheme = "$pbkdf2-sha256$"
        case .sha512: scheme = "$pbkdf2-sha512$"
        }
        let fields = fields(bytes, after: scheme)
        guard fields.count == 3 else {
            throw .malformed(scheme, "expected <rounds>$<salt>$<hash>")
        }
        guard let iterations = decimal(fields[0]) else {
            throw .malformed(scheme, "the round count must be decimal without leading zeros")
        }
        guard let salt = PasswordHashBase64.decode(fields[1], .adapted) else {
            throw .malformed(scheme, "the salt must be passlib's adapted base64 (./A-Za-z0-9, unpadded, canonical)")
        }
        guard let hash = PasswordHashBase64.decode(fields[2], .adapted), hash.count == digest.outputSize else {
            throw .malformed(scheme, "the hash must be passlib's adapted base64 of \(digest.outputSize) bytes")
        }
        return .pbkdf2(
            try checkedPBKDF2(scheme, digest, iterations: iterations, salt: salt, hash: hash, limits: limits)
        )
    }

    private static func checkedPBKDF2(
        _ scheme: String,
        _ digest: DigestAlgorithm,
        iterations: Int,
        salt: [UInt8],
        hash: [UInt8],
        limits: PasswordHashLimits
    ) throws(PasswordHashError) -> PBKDF2 {
        // An HMAC-SHA512 iteration costs about twice one of the others, so it has a range of its own.
        let (range, limit) =
            digest == .sha512
            ? (limits.pbkdf2SHA512Iterations, "pbkdf2SHA512Iterations") : (limits.pbkdf2Iterations, "pbkdf2Iterations")
        // OpenSSL takes the count as a C int, whatever the configured limit.
        guard range.contains(iterations), iterations <= Int32.max else {
            throw .outOfBounds(
                scheme,
                "iterations",
                iterations,
                allowed: "range \(range.lowerBound)...\(range.upperBound)",
                limit: limit
            )
        }
        return PBKDF2(scheme: scheme, digest: digest, iterations: iterations, salt: salt, hash: hash)
    }
}
