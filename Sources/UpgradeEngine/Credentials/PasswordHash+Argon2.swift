extension PasswordHash {
    /// An argon2id or argon2i hash in the PHC string format that libargon2, argon2-cffi, passlib and
    /// Django write: `$argon2id$v=19$m=65536,t=3,p=4$salt$hash`, salt and hash in unpadded base64.
    struct Argon2: Sendable {
        enum Variant: Sendable {
            case i
            case id
        }

        let variant: Variant
        /// 0x13 (`v=19`, current) or 0x10 (no `v=` field, or `v=16`: libargon2 before 2016).
        let version: UInt32
        let memoryKiB: Int
        let iterations: Int
        let parallelism: Int
        let salt: [UInt8]
        let hash: [UInt8]
        /// `argon2` for Django's `argon2$argon2id$…`, which puts its algorithm name before the PHC string.
        var prefix = ""

        var scheme: String { prefix + (variant == .id ? "$argon2id$" : "$argon2i$") }

        var inspection: PasswordHashInspection {
            PasswordHashInspection(
                format: variant == .id ? .argon2id : .argon2i,
                scheme: scheme,
                costDescription: "m=\(memoryKiB) KiB, t=\(iterations), p=\(parallelism)"
                    + (version == 0x10 ? " (version 1.0)" : "")
            )
        }

        /// The PHC string, as libargon2's `argon2_encode_string` writes it.
        var encoded: String {
            "\(scheme)v=\(version)$m=\(memoryKiB),t=\(iterations),p=\(parallelism)$"
                + PasswordHashBase64.encode(salt, .standardUnpadded) + "$"
                + PasswordHashBase64.encode(hash, .standardUnpadded)
        }

        func verify(password: [UInt8]) throws(PasswordHashError) -> Bool {
            var computed = try PasswordKDF.argon2(
                variant,
                version: version,
                password: password,
                salt: salt,
                memoryKiB: memoryKiB,
                iterations: iterations,
                parallelism: parallelism,
                outputLength: hash.count
            )
            defer { PasswordKDF.wipe(&computed) }
            return ConstantTime.equals(computed, hash)
        }
    }

    /// With `django`, Django's `argon2$` before the PHC string (argon2-cffi's, salt and hash unpadded
    /// base64 as everywhere), checked with the same bounds.
    static func parseArgon2(
        _ bytes: [UInt8],
        variant: Argon2.Variant,
        django: Bool = false,
        limits: PasswordHashLimits
    )
        throws(PasswordHashError) -> PasswordHash
    {
        let prefix = django ? "argon2" : ""
        let scheme = prefix + (variant == .id ? "$argon2id$" : "$argon2i$")
        var fields = fields(bytes, after: scheme)
        var version: UInt32 = 0x10
        if let first = fields.first, first.starts(with: "v=".utf8) {
            switch decimal(first.dropFirst(2)) {
            case 19: version = 0x13
            case 16: version = 0x10
            case nil: throw .malformed(scheme, "v= must be followed by a decimal version")
            case let other?: throw unsupported(scheme, "version \(other) is not one of argon2's versions, 16 and 19")
            }
            fields.removeFirst()
        }
        guard fields.count == 3 else {
            throw .malformed(scheme, "expected [v=19$]m=…,t=…,p=…$salt$hash")
        }
        let parameters = fields[0].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        guard parameters.count == 3,
            parameters[0].starts(with: "m=".utf8), let m = decimal(parameters[0].dropFirst(2)),
            parameters[1].starts(with: "t=".utf8), let t = decimal(parameters[1].dropFirst(2)),
            parameters[2].starts(with: "p=".utf8), let p = decimal(parameters[2].dropFirst(2))
        else {
            if parameters.contains(where: { $0.starts(with: "keyid=".utf8) || $0.starts(with: "data=".utf8) }) {
                throw unsupported(
                    scheme,
                    "keyid= and data= need a secret key or associated data this service does not have"
                )
            }
            throw .malformed(scheme, "the parameters must be exactly m=<KiB>,t=<passes>,p=<lanes> in decimal")
        }
        // libargon2's floors: 8 bytes of salt, 4 bytes of output.
        guard let salt = PasswordHashBase64.decode(fields[1], .standardUnpadded), salt.count >= 8 else {
            throw .malformed(scheme, "the salt must be unpadded canonical base64 of at least 8 bytes")
        }
        guard let hash = PasswordHashBase64.decode(fields[2], .standardUnpadded), hash.count >= 4 else {
            throw .malformed(scheme, "the hash must be unpadded canonical base64 of at least 4 bytes")
        }
        try checkArgon2Bounds(scheme: scheme, memoryKiB: m, iterations: t, parallelism: p, limits: limits)
        return .argon2(
            Argon2(
                variant: variant,
                version: version,
                memoryKiB: m,
                iterations: t,
                parallelism: p,
                salt: salt,
                hash: hash,
                prefix: prefix
            )
        )
    }

    static func parseDjangoArgon2(
        _ bytes: [UInt8],
        _ variant: Argon2.Variant,
        limits: PasswordHashLimits
    ) throws(PasswordHashError) -> PasswordHash {
        try parseArgon2(bytes, variant: variant, django: true, limits: limits)
    }

    /// Shared with `PasswordHasher`, so it can never create a hash the verifier would refuse.
    static func checkArgon2Bounds(
        scheme: String,
        memoryKiB: Int,
        iterations: Int,
        parallelism: Int,
        limits: PasswordHashLimits
    ) throws(PasswordHashError) {
        guard limits.argon2Parallelism.contains(parallelism), parallelism <= 0xff_ffff else {
            throw .outOfBounds(
                scheme,
                "p",
                parallelism,
                allowed: "range \(limits.argon2Parallelism.lowerBound)...\(limits.argon2Parallelism.upperBound)",
                limit: "argon2Parallelism"
            )
        }
        // libargon2 takes 32-bit parameters, whatever the configured limits.
        guard memoryKiB <= limits.argon2MaxMemoryKiB, memoryKiB <= UInt32.max else {
            throw .outOfBounds(
                scheme,
                "m",
                "\(memoryKiB) KiB",
                allowed: "maximum \(limits.argon2MaxMemoryKiB) KiB",
                limit: "argon2MaxMemoryKiB"
            )
        }
        guard memoryKiB >= 8 * parallelism else {
            throw PasswordHashError(
                .parameterOutOfBounds,
                "\(scheme) hash has m = \(memoryKiB) KiB with p = \(parallelism), but argon2 needs at least 8 KiB "
                    + "per lane: no conforming implementation wrote it; rehash the account"
            )
        }
        guard limits.argon2Iterations.contains(iterations), iterations <= UInt32.max else {
            throw .outOfBounds(
                scheme,
                "t",
                iterations,
                allowed: "range \(limits.argon2Iterations.lowerBound)...\(limits.argon2Iterations.upperBound)",
                limit: "argon2Iterations"
            )
        }
        // Both factors are bounded by now, so the product cannot overflow.
        guard memoryKiB * iterations <= limits.argon2MaxWorkKiB else {
            throw .outOfBounds(
                scheme,
                "work (m·t, m = \(memoryKiB) KiB, t = \(iterations))",
                "\(memoryKiB * iterations) KiB",
                allowed: "maximum \(limits.argon2MaxWorkKiB) KiB",
                limit: "argon2MaxWorkKiB"
            )
        }
    }
}
