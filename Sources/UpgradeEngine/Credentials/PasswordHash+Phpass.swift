extension PasswordHash {
    /// phpass's portable hash (WordPress `$P$`, phpBB `$H$`) and Drupal 7's `$S$`, which is the same
    /// construction with SHA-512: `h = D(salt ‖ password)`, then 2^cost times `h = D(h ‖ password)`,
    /// written in crypt(3)'s little-endian base64. Drupal keeps only the first 43 characters of the
    /// 86 its 64-byte digest encodes to (55 in all), so the computed encoding is cut the same way and
    /// the characters are compared in constant time.
    struct Phpass: Sendable {
        enum Variant: Sendable {
            /// MD5, 22 hash characters (16 bytes).
            case md5
            /// SHA-512, 43 hash characters (Drupal's truncation of 86).
            case drupalSHA512
        }

        let scheme: String
        let variant: Variant
        /// The base-2 logarithm of the iteration count.
        let cost: Int
        /// The 8 salt characters, used as their bytes.
        let salt: [UInt8]
        /// The stored hash characters.
        let hash: [UInt8]
        /// The longest password this hash is checked for within the work its format's top cost
        /// allows (the work grows with the password's length).
        let maxPasswordBytes: Int

        var inspection: PasswordHashInspection {
            PasswordHashInspection(
                format: variant == .md5 ? .phpass : .drupal7,
                scheme: scheme,
                costDescription: "cost \(cost) (2^\(cost) iterations of \(variant == .md5 ? "MD5" : "SHA-512"))"
            )
        }

        func verify(password: [UInt8]) throws(PasswordHashError) -> Bool {
            // Drupal's own check refuses longer passwords (DRUPAL_MAX_PASSWORD_LENGTH), so no stored
            // hash can match one.
            if variant == .drupalSHA512, password.count > PasswordHash.drupalMaxPasswordBytes {
                throw PasswordHashError(
                    .invalidPassword,
                    "the password is \(password.count) bytes; Drupal 7 hashes only passwords of at most "
                        + "\(PasswordHash.drupalMaxPasswordBytes)"
                )
            }
            if password.count > maxPasswordBytes {
                throw PasswordHashError(
                    .invalidPassword,
                    "the password is \(password.count) bytes; with its cost this \(scheme) hash checks passwords of "
                        + "at most \(maxPasswordBytes) bytes within PasswordHashLimits."
                        + (variant == .md5 ? "phpassCost" : "drupalCost")
                )
            }
            var digest = try PasswordKDF.phpass(
                variant == .md5 ? EVPKeySupport.md5.md : EVPKeySupport.sha512.md,
                password: password,
                salt: salt,
                iterations: 1 << cost
            )
            defer { PasswordKDF.wipe(&digest) }
            var encoded = Array(PasswordHashBase64.encodeCrypt(digest).utf8.prefix(hash.count))
            defer { PasswordKDF.wipe(&encoded) }
            return ConstantTime.equals(encoded, hash)
        }
    }

    /// Drupal 7's `DRUPAL_MAX_PASSWORD_LENGTH`.
    static let drupalMaxPasswordBytes = 512

    /// The password length a hash at a format's top cost is checked for; a lower cost doubles the
    /// length allowed, in digest blocks, with each step down.
    static let phpassAdmittedPasswordBytes = 64

    /// Digest compression blocks one iteration hashes: the previous digest and the password, padded.
    static func phpassBlocks(_ variant: Phpass.Variant, passwordBytes: Int) -> Int {
        let (digest, block, padding) = variant == .md5 ? (16, 64, 9) : (64, 128, 17)
        return (digest + passwordBytes + padding + block - 1) / block
    }

    /// `$P$` / `$H$` / `$S$`, a cost character (its index in `./0-9A-Za-z`), 8 salt characters and 22
    /// (MD5) or 43 (Drupal's SHA-512) hash characters, all from the crypt(3) alphabet.
    static func parsePhpass(
        _ bytes: [UInt8],
        scheme: String,
        limits: PasswordHashLimits
    ) throws(PasswordHashError)
        -> PasswordHash
    {
        let variant: Phpass.Variant = scheme == "$S$" ? .drupalSHA512 : .md5
        let hashLength = variant == .md5 ? 22 : 43
        guard bytes.count == 12 + hashLength else {
            throw .malformed(
                scheme,
                "expected \(12 + hashLength) characters (scheme, cost, 8 salt and \(hashLength) hash characters), "
                    + "found \(bytes.count)"
            )
        }
        guard let costValue = PasswordHashBase64.cryptValue(bytes[3]) else {
            throw .malformed(scheme, "the cost character must be one of ./0-9A-Za-z")
        }
        let salt = bytes[4..<12]
        guard salt.allSatisfy(PasswordHashBase64.isCryptCharacter) else {
            throw .malformed(scheme, "the salt must be 8 characters from ./0-9A-Za-z")
        }
        let hash = bytes[12...]
        // MD5's 16 bytes leave 4 unused bits in the last character; phpass writes them as zero.
        guard let values = cryptValues(hash), variant == .drupalSHA512 || values.last! < 4 else {
            throw .malformed(scheme, "the hash must be \(hashLength) canonical characters from ./0-9A-Za-z")
        }
        let cost = Int(costValue)
        let (range, limit) =
            variant == .md5 ? (limits.phpassCost, "phpassCost") : (limits.drupalCost, "drupalCost")
        // 7...30 is what phpass and Drupal themselves accept.
        guard range.contains(cost), (7...30).contains(cost) else {
            throw .outOfBounds(
                scheme,
                "cost",
                cost,
                allowed: "range \(max(range.lowerBound, 7))...\(min(range.upperBound, 30))",
                limit: limit
            )
        }
        // The work a password of the admitted length costs at the top cost bounds every check.
        let budget =
            (1 << min(range.upperBound, 30))
            * phpassBlocks(variant, passwordBytes: phpassAdmittedPasswordBytes)
        let blocksPerIteration = budget >> cost
        let (block, overhead) = variant == .md5 ? (64, 16 + 9) : (128, 64 + 17)
        return .phpass(
            Phpass(
                scheme: scheme,
                variant: variant,
                cost: cost,
                salt: Array(salt),
                hash: Array(hash),
                maxPasswordBytes: blocksPerIteration * block - overhead
            )
        )
    }
}
