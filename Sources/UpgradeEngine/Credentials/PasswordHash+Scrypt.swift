extension PasswordHash {
    /// scrypt in either stored encoding, computed by OpenSSL.
    ///
    /// `$7$` is computed here rather than by libxcrypt because libxcrypt refuses `$7$` salts that
    /// contain `+`, which passlib writes routinely: its salts are standard base64. The format itself
    /// treats the salt as opaque bytes, and so does this verifier.
    struct Scrypt: Sendable {
        let scheme: String
        let logN: Int
        let r: Int
        let p: Int
        let salt: [UInt8]
        let hash: [UInt8]

        var inspection: PasswordHashInspection {
            PasswordHashInspection(
                format: .scrypt,
                scheme: scheme,
                costDescription: "N=2^\(logN), r=\(r), p=\(p) (\(describeBytes(128 * r << logN)))"
            )
        }

        func verify(password: [UInt8]) throws(PasswordHashError) -> Bool {
            var computed = try PasswordKDF.scrypt(
                password: password,
                salt: salt,
                logN: logN,
                r: r,
                p: p,
                outputLength: hash.count
            )
            defer { PasswordKDF.wipe(&computed) }
            return ConstantTime.equals(computed, hash)
        }
    }

    /// passlib's `$scrypt$ln=16,r=8,p=1$salt$hash`, salt and hash in unpadded standard base64.
    static func parsePasslibScrypt(
        _ bytes: [UInt8],
        limits: PasswordHashLimits
    ) throws(PasswordHashError)
        -> PasswordHash
    {
        let scheme = "$scrypt$"
        let fields = fields(bytes, after: scheme)
        guard fields.count == 3 else {
            throw .malformed(scheme, "expected ln=…,r=…,p=…$salt$hash")
        }
        let parameters = fields[0].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        guard parameters.count == 3,
            parameters[0].starts(with: "ln=".utf8), let logN = decimal(parameters[0].dropFirst(3)),
            parameters[1].starts(with: "r=".utf8), let r = decimal(parameters[1].dropFirst(2)),
            parameters[2].starts(with: "p=".utf8), let p = decimal(parameters[2].dropFirst(2))
        else {
            throw .malformed(scheme, "the parameters must be exactly ln=<log2 N>,r=<block size>,p=<lanes> in decimal")
        }
        guard let salt = PasswordHashBase64.decode(fields[1], .standardUnpadded) else {
            throw .malformed(scheme, "the salt must be unpadded canonical base64")
        }
        guard let hash = PasswordHashBase64.decode(fields[2], .standardUnpadded), (16...64).contains(hash.count) else {
            throw .malformed(scheme, "the hash must be unpadded canonical base64 of 16...64 bytes")
        }
        return .scrypt(
            try checkedScrypt(scheme: scheme, logN: logN, r: r, p: p, salt: salt, hash: hash, limits: limits)
        )
    }

    /// `$7$` + log2(N) as one character + r and p as five characters each (30-bit little-endian,
    /// crypt(3) alphabet) + the salt, used verbatim + `$` + 43 characters of hash.
    static func parseCryptScrypt(
        _ bytes: [UInt8],
        limits: PasswordHashLimits
    ) throws(PasswordHashError)
        -> PasswordHash
    {
        let scheme = "$7$"
        let fields = fields(bytes, after: scheme)
        guard fields.count == 2, fields[0].count > 11 else {
            throw .malformed(scheme, "expected <N><r:5><p:5><salt>$hash")
        }
        let setting = fields[0]
        let start = setting.startIndex
        guard let values = cryptValues(setting[start..<start + 11]) else {
            throw .malformed(scheme, "the parameters must use the alphabet ./0-9A-Za-z")
        }
        let logN = Int(values[0])
        let r = values[1...5].reversed().reduce(0) { $0 << 6 | Int($1) }
        let p = values[6...10].reversed().reduce(0) { $0 << 6 | Int($1) }
        // passlib writes standard base64 (with '+'), libsodium and libxcrypt the crypt(3) alphabet.
        let salt = setting[(start + 11)...]
        guard salt.allSatisfy({ PasswordHashBase64.isCryptCharacter($0) || $0 == UInt8(ascii: "+") }) else {
            throw .malformed(scheme, "the salt must use the alphabet ./+0-9A-Za-z")
        }
        guard fields[1].count == 43, let hash = PasswordHashBase64.decodeCrypt(fields[1]) else {
            throw .malformed(scheme, "the hash must be 43 canonical characters from ./0-9A-Za-z")
        }
        return .scrypt(
            try checkedScrypt(scheme: scheme, logN: logN, r: r, p: p, salt: Array(salt), hash: hash, limits: limits)
        )
    }

    static func checkedScrypt(
        scheme: String,
        logN: Int,
        r: Int,
        p: Int,
        salt: [UInt8],
        hash: [UInt8],
        limits: PasswordHashLimits
    ) throws(PasswordHashError) -> Scrypt {
        guard logN >= 1, r >= 1, p >= 1 else {
            throw .malformed(scheme, "scrypt needs N ≥ 2, r ≥ 1 and p ≥ 1")
        }
        guard logN <= limits.scryptMaxLogN else {
            throw .outOfBounds(
                scheme,
                "N",
                "2^\(logN)",
                allowed: "maximum 2^\(limits.scryptMaxLogN)",
                limit: "scryptMaxLogN"
            )
        }
        // logN is small by now, but r is not bounded yet: compute 128·r·N only where it cannot overflow.
        let memory: Int? = r <= (Int.max / 128) >> logN ? 128 * r << logN : nil
        guard let memory, memory <= limits.scryptMaxMemoryBytes else {
            throw .outOfBounds(
                scheme,
                "memory (128·r·N, N = 2^\(logN), r = \(r))",
                memory.map { describeBytes($0) } ?? "beyond 8 EiB",
                allowed: "maximum \(describeBytes(limits.scryptMaxMemoryBytes))",
                limit: "scryptMaxMemoryBytes"
            )
        }
        guard p <= limits.scryptMaxParallelism else {
            throw .outOfBounds(
                scheme,
                "p",
                p,
                allowed: "maximum \(limits.scryptMaxParallelism)",
                limit: "scryptMaxParallelism"
            )
        }
        guard memory * p <= limits.scryptMaxWorkBytes else {
            throw .outOfBounds(
                scheme,
                "work (128·r·N·p, N = 2^\(logN), r = \(r), p = \(p))",
                describeBytes(memory * p),
                allowed: "maximum \(describeBytes(limits.scryptMaxWorkBytes))",
                limit: "scryptMaxWorkBytes"
            )
        }
        // RFC 7914 requires N < 2^(128·r/8); OpenSSL enforces it, so refuse it here with a reason.
        guard 16 * r > logN else {
            throw .malformed(scheme, "scrypt requires N < 2^(16·r), and N = 2^\(logN) with r = \(r) is not")
        }
        return Scrypt(scheme: scheme, logN: logN, r: r, p: p, salt: salt, hash: hash)
    }
}
