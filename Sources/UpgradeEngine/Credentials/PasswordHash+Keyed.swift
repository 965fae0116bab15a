extension PasswordHash {
    /// Firebase Authentication's modified scrypt: `key = scrypt(password, salt ‖ saltSeparator,
    /// N = 2^memCost, r = rounds, p = 1)[0..<32]`, and the stored hash is the project's signer key
    /// encrypted with AES-256-CTR under that key from a zero counter block. The signer key, salt
    /// separator and costs are the project's (`HashParameterSet`), so the hash names its set.
    struct FirebaseScrypt: Sendable {
        /// The stored set (`p=<id>`), or nil in an import file's form, before `--hash-parameters` bound it.
        let setID: Int64?
        let salt: [UInt8]
        let hash: [UInt8]
    }

    /// `HMAC(key, password)`, or with a per-user salt before or after the password as the set says;
    /// the key is the set's.
    struct KeyedHMAC: Sendable {
        let scheme: String
        let algorithm: DigestAlgorithm
        let setID: Int64?
        let salt: [UInt8]?
        let digest: [UInt8]
    }

    /// The parameter set a hash needs, if any: its id (nil in import form) and kind.
    var parameterSetReference: (id: Int64?, kind: HashParameterSet.Kind)? {
        switch self {
        case .firebaseScrypt(let hash): return (hash.setID, .firebaseScrypt)
        case .keyedHMAC(let hash): return (hash.setID, .hmac)
        default: return nil
        }
    }

    static let firebaseScheme = "$firebase-scrypt$"

    /// `$firebase-scrypt$p=<id>$<salt>$<hash>` as stored, or `$firebase-scrypt$<salt>$<hash>` in an
    /// import file; salt and hash in canonical padded standard base64, as Firebase exports them.
    static func parseFirebaseScrypt(_ bytes: [UInt8]) throws(PasswordHashError) -> PasswordHash {
        let scheme = firebaseScheme
        var fields = fields(bytes, after: scheme)[...]
        let setID = try parameterSetID(&fields, scheme: scheme)
        guard fields.count == 2 else {
            throw .malformed(scheme, "expected [p=<parameter set>$]<salt>$<hash>, salt and hash in base64")
        }
        guard let salt = PasswordHashBase64.decode(fields.first!, .standardPadded), (1...64).contains(salt.count) else {
            throw .malformed(scheme, "the salt must be canonical padded base64 of 1...64 bytes")
        }
        guard let hash = PasswordHashBase64.decode(fields.last!, .standardPadded),
            (1...HashParameterSet.maxKeyBytes).contains(hash.count)
        else {
            throw .malformed(
                scheme,
                "the hash must be canonical padded base64 of 1...\(HashParameterSet.maxKeyBytes) bytes"
            )
        }
        return .firebaseScrypt(FirebaseScrypt(setID: setID, salt: salt, hash: hash))
    }

    /// `$hmac-sha256$` / `$hmac-sha512$`, then `p=<id>$` as stored (absent in an import file), an
    /// optional salt in canonical padded base64 and `$`, and the digest in hex (either case) or
    /// canonical padded base64.
    static func parseKeyedHMAC(
        _ bytes: [UInt8],
        _ algorithm: DigestAlgorithm
    ) throws(PasswordHashError)
        -> PasswordHash
    {
        let scheme = algorithm == .sha512 ? "$hmac-sha512$" : "$hmac-sha256$"
        var fields = fields(bytes, after: scheme)[...]
        let setID = try parameterSetID(&fields, scheme: scheme)
        guard (1...2).contains(fields.count) else {
            throw .malformed(scheme, "expected [p=<parameter set>$][<salt>$]<digest>")
        }
        var salt: [UInt8]?
        if fields.count == 2 {
            guard let value = PasswordHashBase64.decode(fields.first!, .standardPadded), (1...256).contains(value.count)
            else {
                throw .malformed(scheme, "the salt must be canonical padded base64 of 1...256 bytes")
            }
            salt = value
        }
        let text = fields.last!
        let size = algorithm.outputSize
        let digest: [UInt8]?
        if text.count == 2 * size {
            digest = [UInt8](hex: String(decoding: text, as: UTF8.self))
        } else {
            digest = PasswordHashBase64.decode(text, .standardPadded)
        }
        guard let digest, digest.count == size else {
            throw .malformed(
                scheme,
                "the digest must be \(2 * size) hex digits or canonical padded base64 of \(size) bytes"
            )
        }
        return .keyedHMAC(KeyedHMAC(scheme: scheme, algorithm: algorithm, setID: setID, salt: salt, digest: digest))
    }

    /// Takes a leading `p=<id>` field, if there is one: a decimal id of a stored set, from 1.
    private static func parameterSetID(
        _ fields: inout ArraySlice<ArraySlice<UInt8>>,
        scheme: String
    )
        throws(PasswordHashError) -> Int64?
    {
        guard let first = fields.first, first.starts(with: "p=".utf8) else { return nil }
        guard let id = decimal(first.dropFirst(2)), id >= 1, id < Int(Int32.max) else {
            throw .malformed(scheme, "p= must name a parameter set by its decimal id, from 1")
        }
        fields.removeFirst()
        return Int64(id)
    }

    /// The encoding with `p=<id>` in place of no reference: how an import stores a hash given in
    /// import form with `--hash-parameters`. Nil for a hash that is not in import form.
    static func binding(_ encoded: String, to id: Int64) -> String? {
        for scheme in [firebaseScheme, "$hmac-sha256$", "$hmac-sha512$"] where encoded.hasPrefix(scheme) {
            let rest = encoded.dropFirst(scheme.count)
            guard !rest.hasPrefix("p=") else { return nil }
            return scheme + "p=\(id)$" + rest
        }
        return nil
    }
}

extension PasswordHash.FirebaseScrypt {
    func inspection(_ set: HashParameterSet?) -> PasswordHashInspection {
        PasswordHashInspection(
            format: .firebaseScrypt,
            scheme: PasswordHash.firebaseScheme,
            costDescription: PasswordHash.describeSet(setID, set)
        )
    }

    /// The scrypt this hash costs with `set`, bounded by `limits` like any scrypt hash.
    func scrypt(_ set: HashParameterSet, limits: PasswordHashLimits) throws(PasswordHashError) -> PasswordHash.Scrypt {
        guard case .firebaseScrypt(let signerKey, let separator, let rounds, let memoryCost) = set.values else {
            throw PasswordHash.wrongKind(setID, expected: .firebaseScrypt)
        }
        guard signerKey.count == hash.count else {
            throw .malformed(
                PasswordHash.firebaseScheme,
                "the hash is \(hash.count) bytes but parameter set \(setID.map(String.init) ?? "given")'s "
                    + "signer key is \(signerKey.count); the hash belongs to another project's parameters"
            )
        }
        return try PasswordHash.checkedScrypt(
            scheme: PasswordHash.firebaseScheme,
            logN: memoryCost,
            r: rounds,
            p: 1,
            salt: salt + separator,
            hash: hash,
            limits: limits
        )
    }

    func verify(
        password: [UInt8],
        set: HashParameterSet,
        limits: PasswordHashLimits
    ) throws(PasswordHashError)
        -> Bool
    {
        let scrypt = try scrypt(set, limits: limits)
        guard case .firebaseScrypt(let signerKey, _, _, _) = set.values else { return false }
        var key = try PasswordKDF.scrypt(
            password: password,
            salt: scrypt.salt,
            logN: scrypt.logN,
            r: scrypt.r,
            p: scrypt.p,
            outputLength: 32
        )
        defer { PasswordKDF.wipe(&key) }
        var computed = try PasswordKDF.aes256CTR(key: key, input: signerKey)
        defer { PasswordKDF.wipe(&computed) }
        return ConstantTime.equals(computed, hash)
    }
}

extension PasswordHash.KeyedHMAC {
    var format: PasswordHashFormat { algorithm == .sha512 ? .hmacSHA512 : .hmacSHA256 }

    func inspection(_ set: HashParameterSet?) -> PasswordHashInspection {
        PasswordHashInspection(
            format: format,
            scheme: scheme,
            costDescription: "one HMAC-\(algorithm.rawValue)" + (salt == nil ? "" : " with a salt") + ", "
                + PasswordHash.describeSet(setID, set)
        )
    }

    func verify(password: [UInt8], set: HashParameterSet) throws(PasswordHashError) -> Bool {
        guard case .hmac(let key, let position) = set.values else {
            throw PasswordHash.wrongKind(setID, expected: .hmac)
        }
        var message = password
        if let salt { message = position == .before ? salt + password : password + salt }
        defer { PasswordKDF.wipe(&message) }
        var computed = Digest.hmac(algorithm, key: key, message: message)
        defer { PasswordKDF.wipe(&computed) }
        return ConstantTime.equals(computed, digest)
    }
}

extension PasswordHash {
    static func describeSet(_ id: Int64?, _ set: HashParameterSet?) -> String {
        let name = id.map { "parameter set \($0)" } ?? "the import's parameter set"
        guard let set else { return name }
        return set.kind == .firebaseScrypt ? "\(set.summary), \(name)" : name
    }

    static func wrongKind(_ id: Int64?, expected: HashParameterSet.Kind) -> PasswordHashError {
        PasswordHashError(
            .parametersUnavailable,
            "parameter set \(id.map(String.init) ?? "given") is not a \(expected.rawValue) set"
        )
    }
}
