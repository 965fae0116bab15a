extension PasswordHash {
    /// A hash that libxcrypt recomputes from the stored string itself (bcrypt, sha-crypt, md5-crypt,
    /// yescrypt). The whole output string is compared with the stored one in constant time; the
    /// parsers have already refused every spelling that libxcrypt would not reproduce exactly, so a
    /// mismatch means a wrong password and never a quirk of the encoding.
    struct Libxcrypt: Sendable {
        let format: PasswordHashFormat
        /// The stored value's prefix, `{CRYPT}$6$` for a crypt hash inside an LDAP value.
        let scheme: String
        /// The crypt(3) prefix libxcrypt sees, for its error messages.
        let libxcryptScheme: String
        let costDescription: String
        /// The crypt(3) string itself, without any `{CRYPT}` prefix.
        let encoded: String
        /// sha-crypt: the longest password this hash is checked for within
        /// `PasswordHashLimits.shaCryptMaxBlocks` (its work grows with the password's length).
        let maxPasswordBytes: Int?

        init(
            format: PasswordHashFormat,
            scheme: String,
            libxcryptScheme: String? = nil,
            costDescription: String,
            encoded: String,
            maxPasswordBytes: Int? = nil
        ) {
            self.format = format
            self.scheme = scheme
            self.libxcryptScheme = libxcryptScheme ?? scheme
            self.costDescription = costDescription
            self.encoded = encoded
            self.maxPasswordBytes = maxPasswordBytes
        }

        var inspection: PasswordHashInspection {
            PasswordHashInspection(format: format, scheme: scheme, costDescription: costDescription)
        }

        func verify(password: [UInt8]) throws(PasswordHashError) -> Bool {
            if let maxPasswordBytes, password.count > maxPasswordBytes {
                throw PasswordHashError(
                    .invalidPassword,
                    "the password is \(password.count) bytes; with its rounds this \(scheme) hash checks passwords of at "
                        + "most \(maxPasswordBytes) bytes within PasswordHashLimits.shaCryptMaxBlocks"
                )
            }
            var output = try PasswordKDF.crypt(password: password, setting: encoded, scheme: libxcryptScheme)
            defer { PasswordKDF.wipe(&output) }
            return ConstantTime.equals(output, encoded.utf8)
        }
    }
}

// MARK: - bcrypt

extension PasswordHash {
    /// `$2b$CC$` + 22 characters of salt + 31 of hash, in bcrypt's own base64 alphabet.
    static func parseBcrypt(
        _ bytes: [UInt8],
        scheme: String,
        limits: PasswordHashLimits
    ) throws(PasswordHashError)
        -> PasswordHash
    {
        guard bytes.count == 60 else {
            throw .malformed(scheme, "expected 60 characters, found \(bytes.count)")
        }
        let digits = bytes[4..<6]
        guard digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), bytes[6] == UInt8(ascii: "$")
        else {
            throw .malformed(scheme, "the cost must be two decimal digits followed by '$'")
        }
        let cost = Int(digits.first! - UInt8(ascii: "0")) * 10 + Int(digits.last! - UInt8(ascii: "0"))
        let body = bytes[7...]
        guard let values = bcryptValues(body) else {
            throw .malformed(scheme, "salt and hash must use the alphabet ./A-Za-z0-9")
        }
        // 22 characters carry the 128-bit salt and 31 the 184-bit hash; the spare low bits of each
        // last character are zero in every hash bcrypt writes. Other spellings never verify.
        guard values[21] & 0x0f == 0, values[52] & 0x03 == 0 else {
            throw .malformed(scheme, "the salt or hash ends in a non-canonical character")
        }
        guard limits.bcryptCost.contains(cost) else {
            throw .outOfBounds(
                scheme,
                "cost",
                cost,
                allowed: "range \(limits.bcryptCost.lowerBound)...\(limits.bcryptCost.upperBound)",
                limit: "bcryptCost"
            )
        }
        return .libxcrypt(
            Libxcrypt(
                format: .bcrypt,
                scheme: scheme,
                costDescription: "cost \(cost) (2^\(cost) iterations)",
                encoded: String(decoding: bytes, as: UTF8.self)
            )
        )
    }

    /// bcrypt's base64 alphabet is `./A-Za-z0-9`, a different order from crypt(3)'s.
    private static func bcryptValues(_ chars: ArraySlice<UInt8>) -> [UInt8]? {
        var values = [UInt8]()
        values.reserveCapacity(chars.count)
        for c in chars {
            switch c {
            case UInt8(ascii: "."), UInt8(ascii: "/"): values.append(c - UInt8(ascii: "."))
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(c - UInt8(ascii: "A") + 2)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(c - UInt8(ascii: "a") + 28)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(c - UInt8(ascii: "0") + 54)
            default: return nil
            }
        }
        return values
    }
}

// MARK: - sha-crypt and md5-crypt

extension PasswordHash {
    /// `$6$[rounds=N$]salt$hash` and `$5$…`: at most 16 salt characters, 86 (SHA-512) or 43 (SHA-256)
    /// hash characters, all from the crypt(3) alphabet.
    static func parseShaCrypt(
        _ bytes: [UInt8],
        _ format: PasswordHashFormat,
        limits: PasswordHashLimits
    )
        throws(PasswordHashError) -> PasswordHash
    {
        let scheme = format == .sha512Crypt ? "$6$" : "$5$"
        var fields = fields(bytes, after: scheme)
        var rounds: Int?
        if let first = fields.first, first.starts(with: "rounds=".utf8) {
            guard let value = decimal(first.dropFirst(7)) else {
                throw .malformed(scheme, "rounds= must be followed by a decimal number without leading zeros")
            }
            rounds = value
            fields.removeFirst()
        }
        guard fields.count == 2 else {
            throw .malformed(scheme, "expected [rounds=N$]salt$hash")
        }
        let (salt, hash) = (fields[0], fields[1])
        guard salt.count <= 16, salt.allSatisfy(PasswordHashBase64.isCryptCharacter) else {
            throw .malformed(scheme, "the salt must be at most 16 characters from ./0-9A-Za-z")
        }
        // The last character carries 2 (SHA-512) or 4 (SHA-256) significant bits.
        let hashLength = format == .sha512Crypt ? 86 : 43
        let lastLimit: UInt32 = format == .sha512Crypt ? 4 : 16
        guard hash.count == hashLength, let values = cryptValues(hash), values.last! < lastLimit else {
            throw .malformed(scheme, "the hash must be \(hashLength) canonical characters from ./0-9A-Za-z")
        }
        let effective = rounds ?? 5000
        guard limits.shaCryptRounds.contains(effective) else {
            throw .outOfBounds(
                scheme,
                "rounds",
                effective,
                allowed: "range \(limits.shaCryptRounds.lowerBound)...\(limits.shaCryptRounds.upperBound)",
                limit: "shaCryptRounds"
            )
        }
        // The work grows with the password's length: find the longest password the bound allows.
        let sha512 = format == .sha512Crypt
        func blocks(_ passwordBytes: Int) -> Int {
            PasswordHashLimits.shaCryptBlocks(
                sha512: sha512,
                rounds: effective,
                saltBytes: salt.count,
                passwordBytes: passwordBytes
            )
        }
        let admitted = PasswordHashLimits.shaCryptAdmittedPasswordBytes
        guard blocks(admitted) <= limits.shaCryptMaxBlocks else {
            throw .outOfBounds(
                scheme,
                "work (SHA-2 blocks for a \(admitted)-byte password, \(effective) rounds)",
                blocks(admitted),
                allowed: "maximum \(limits.shaCryptMaxBlocks)",
                limit: "shaCryptMaxBlocks"
            )
        }
        var longest = admitted
        var beyond = PasswordKDF.maxCryptPassphraseBytes + 1
        while beyond - longest > 1 {
            let middle = (longest + beyond) / 2
            if blocks(middle) <= limits.shaCryptMaxBlocks { longest = middle } else { beyond = middle }
        }
        return .libxcrypt(
            Libxcrypt(
                format: format,
                scheme: scheme,
                costDescription: rounds == nil ? "5000 rounds (implicit default)" : "\(effective) rounds",
                encoded: String(decoding: bytes, as: UTF8.self),
                maxPasswordBytes: longest
            )
        )
    }

    /// `$1$salt$hash`: at most 8 salt characters and 22 hash characters. The cost is fixed.
    static func parseMD5Crypt(_ bytes: [UInt8]) throws(PasswordHashError) -> PasswordHash {
        let scheme = "$1$"
        let fields = fields(bytes, after: scheme)
        guard fields.count == 2 else {
            throw .malformed(scheme, "expected salt$hash")
        }
        guard fields[0].count <= 8, fields[0].allSatisfy(PasswordHashBase64.isCryptCharacter) else {
            throw .malformed(scheme, "the salt must be at most 8 characters from ./0-9A-Za-z")
        }
        guard fields[1].count == 22, let values = cryptValues(fields[1]), values.last! < 4 else {
            throw .malformed(scheme, "the hash must be 22 canonical characters from ./0-9A-Za-z")
        }
        return .libxcrypt(
            Libxcrypt(
                format: .md5Crypt,
                scheme: scheme,
                costDescription: "1000 rounds (fixed)",
                encoded: String(decoding: bytes, as: UTF8.self)
            )
        )
    }

    static func cryptValues(_ chars: ArraySlice<UInt8>) -> [UInt32]? {
        var values = [UInt32]()
        values.reserveCapacity(chars.count)
        for c in chars {
            guard let value = PasswordHashBase64.cryptValue(c) else { return nil }
            values.append(value)
        }
        return values
    }
}

// MARK: - Django's bcrypt_sha256

extension PasswordHash {
    /// Django's `bcrypt_sha256$` followed by a whole bcrypt hash (`$2b$` from current Django, `$2a$`
    /// from older bcrypt libraries), bounded as bcrypt. Django hashes the lowercase hex SHA-256 of
    /// the password, 64 bytes, so bcrypt's 72-byte cut never applies and any password can be checked.
    static func parseDjangoBcryptSHA256(
        _ bytes: [UInt8],
        limits: PasswordHashLimits
    ) throws(PasswordHashError)
        -> PasswordHash
    {
        let prefix = "bcrypt_sha256$"
        let inner = Array(bytes.dropFirst(prefix.utf8.count))
        guard let innerScheme = ["$2b$", "$2a$", "$2y$"].first(where: { inner.starts(with: $0.utf8) }) else {
            throw .malformed(prefix, "the value after bcrypt_sha256$ must be a bcrypt hash ($2b$, $2a$ or $2y$)")
        }
        guard case .libxcrypt(let hash) = try parseBcrypt(inner, scheme: prefix + innerScheme, limits: limits) else {
            throw .malformed(prefix, "the value after bcrypt_sha256$ is not a bcrypt hash")
        }
        return .bcryptSHA256(
            Libxcrypt(
                format: .bcryptSHA256,
                scheme: prefix,
                libxcryptScheme: innerScheme,
                costDescription: hash.costDescription,
                encoded: hash.encoded
            )
        )
    }
}
