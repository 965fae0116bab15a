/// A stored password hash, parsed strictly and already checked against `PasswordHashLimits`.
///
/// Parsing does no cryptographic work. Holding a `PasswordHash` therefore means every cost parameter
/// has been bounded, and `verify` is the only place where a key derivation runs.
enum PasswordHash: Sendable {
    /// bcrypt, sha-crypt, md5-crypt and yescrypt: recomputed by libxcrypt from the stored setting and
    /// compared as strings.
    case libxcrypt(Libxcrypt)
    case argon2(Argon2)
    case scrypt(Scrypt)
    case pbkdf2(PBKDF2)
    /// OpenLDAP's `{SSHA}`, `{SSHA256}` and `{SSHA512}`.
    case saltedSHA(SaltedSHA)
    /// phpass (`$P$`, `$H$`) and Drupal 7 (`$S$`).
    case phpass(Phpass)
    /// Django's `bcrypt_sha256$`: the bcrypt hash checked with the hex SHA-256 of the password.
    case bcryptSHA256(Libxcrypt)
    /// Firebase's modified scrypt; the project's parameters are a `HashParameterSet` the hash names.
    case firebaseScrypt(FirebaseScrypt)
    /// HMAC-SHA256 or HMAC-SHA512 under a key kept in a `HashParameterSet` the hash names.
    case keyedHMAC(KeyedHMAC)

    init(parsing encoded: String, limits: PasswordHashLimits) throws(PasswordHashError) {
        // The scheme is told by a short prefix, so even a huge value is classified without copying it.
        let utf8 = encoded.utf8
        guard let (scheme, parse) = Self.scheme(of: Array(utf8.prefix(Self.longestPrefix))) else {
            let isSpace = { (c: UInt8) in c == 0x20 || (0x09...0x0d).contains(c) }
            let trimmed = Array(utf8.drop(while: isSpace).prefix(Self.longestPrefix))
            if let first = utf8.first, isSpace(first), let (scheme, _) = Self.scheme(of: trimmed) {
                throw .malformed(scheme, "it starts with whitespace", fix: "trim the stored value")
            }
            throw PasswordHashError(
                .unknownFormat,
                "not a supported password hash (\(utf8.count) bytes); expected bcrypt ($2a$, $2b$, $2y$), "
                    + "argon2id or argon2i PHC ($argon2id$), scrypt ($scrypt$, $7$), PBKDF2 (pbkdf2_sha256$, "
                    + "pbkdf2_sha1$, $pbkdf2$, $pbkdf2-sha256$, $pbkdf2-sha512$), sha512-crypt ($6$), "
                    + "sha256-crypt ($5$), md5-crypt ($1$), yescrypt ($y$) or LDAP ({SSHA}, {SSHA256}, {SSHA512}, "
                    + "{CRYPT} with a crypt hash), phpass ($P$, $H$), Drupal 7 ($S$) "
                    + "Django's bcrypt_sha256$ and argon2$, Firebase scrypt ($firebase-scrypt$) "
                    + "or keyed HMAC ($hmac-sha256$, $hmac-sha512$); convert the export to one of these "
                    + "or have the user reset the password"
            )
        }
        guard utf8.count <= limits.maxEncodedHashBytes else {
            throw .malformed(
                scheme,
                "it is \(utf8.count) bytes, longer than any supported encoding needs "
                    + "(PasswordHashLimits.maxEncodedHashBytes = \(limits.maxEncodedHashBytes))"
            )
        }
        let bytes = Array(utf8)
        // Every supported encoding is printable ASCII; anything else (a trailing newline from a CSV
        // export, a non-breaking space) would otherwise surface as a confusing parse error later.
        if let index = bytes.firstIndex(where: { !(0x21...0x7e).contains($0) }) {
            throw .malformed(
                scheme,
                "the character at offset \(index) is whitespace, a control character or not ASCII",
                fix: "trim the stored value and check its encoding"
            )
        }
        self = try parse(bytes, limits)
    }

    typealias Parser = @Sendable ([UInt8], PasswordHashLimits) throws(PasswordHashError) -> PasswordHash

    static let longestPrefix = schemes.map(\.0.utf8.count).max() ?? 0

    static func scheme(of bytes: [UInt8]) -> (String, Parser)? {
        schemes.first { bytes.starts(with: $0.0.utf8) }
    }

    /// The prefix each encoding starts with, and its parser. Families that are recognised but
    /// deliberately refused parse to `.unsupported` so the message can say why.
    static let schemes: [(String, Parser)] = [
        ("$2a$", { b, l throws(PasswordHashError) in try parseBcrypt(b, scheme: "$2a$", limits: l) }),
        ("$2b$", { b, l throws(PasswordHashError) in try parseBcrypt(b, scheme: "$2b$", limits: l) }),
        ("$2y$", { b, l throws(PasswordHashError) in try parseBcrypt(b, scheme: "$2y$", limits: l) }),
        ("$2x$", { _, _ throws(PasswordHashError) in throw unsupported("$2x$", bcryptBugNote) }),
        ("$2$", { _, _ throws(PasswordHashError) in throw unsupported("$2$", bcryptOriginalNote) }),
        ("$argon2id$", { b, l throws(PasswordHashError) in try parseArgon2(b, variant: .id, limits: l) }),
        ("$argon2i$", { b, l throws(PasswordHashError) in try parseArgon2(b, variant: .i, limits: l) }),
        ("$argon2d$", { _, _ throws(PasswordHashError) in throw unsupported("$argon2d$", argon2dNote) }),
        ("$scrypt$", { b, l throws(PasswordHashError) in try parsePasslibScrypt(b, limits: l) }),
        ("$7$", { b, l throws(PasswordHashError) in try parseCryptScrypt(b, limits: l) }),
        ("pbkdf2_sha256$", { b, l throws(PasswordHashError) in try parseDjangoPBKDF2(b, .sha256, limits: l) }),
        ("pbkdf2_sha1$", { b, l throws(PasswordHashError) in try parseDjangoPBKDF2(b, .sha1, limits: l) }),
        ("$pbkdf2$", { b, l throws(PasswordHashError) in try parsePasslibPBKDF2(b, .sha1, limits: l) }),
        ("$pbkdf2-sha256$", { b, l throws(PasswordHashError) in try parsePasslibPBKDF2(b, .sha256, limits: l) }),
        ("$pbkdf2-sha512$", { b, l throws(PasswordHashError) in try parsePasslibPBKDF2(b, .sha512, limits: l) }),
        ("$6$", { b, l throws(PasswordHashError) in try parseShaCrypt(b, .sha512Crypt, limits: l) }),
        ("$5$", { b, l throws(PasswordHashError) in try parseShaCrypt(b, .sha256Crypt, limits: l) }),
        ("$1$", { b, _ throws(PasswordHashError) in try parseMD5Crypt(b) }),
        ("$y$", { b, l throws(PasswordHashError) in try parseYescrypt(b, limits: l) }),
        ("{SSHA}", { b, _ throws(PasswordHashError) in try parseSaltedSHA(b, scheme: "{SSHA}", .sha1) }),
        ("{SSHA256}", { b, _ throws(PasswordHashError) in try parseSaltedSHA(b, scheme: "{SSHA256}", .sha256) }),
        ("{SSHA512}", { b, _ throws(PasswordHashError) in try parseSaltedSHA(b, scheme: "{SSHA512}", .sha512) }),
        ("{CRYPT}", { b, l throws(PasswordHashError) in try parseLDAPCrypt(b, limits: l) }),
        ("$P$", { b, l throws(PasswordHashError) in try parsePhpass(b, scheme: "$P$", limits: l) }),
        ("$H$", { b, l throws(PasswordHashError) in try parsePhpass(b, scheme: "$H$", limits: l) }),
        ("$S$", { b, l throws(PasswordHashError) in try parsePhpass(b, scheme: "$S$", limits: l) }),
        ("bcrypt_sha256$", { b, l throws(PasswordHashError) in try parseDjangoBcryptSHA256(b, limits: l) }),
        ("argon2$argon2id$", { b, l throws(PasswordHashError) in try parseDjangoArgon2(b, .id, limits: l) }),
        ("argon2$argon2i$", { b, l throws(PasswordHashError) in try parseDjangoArgon2(b, .i, limits: l) }),
        ("argon2$argon2d$", { _, _ throws(PasswordHashError) in throw unsupported("argon2$argon2d$", argon2dNote) }),
        ("$firebase-scrypt$", { b, _ throws(PasswordHashError) in try parseFirebaseScrypt(b) }),
        ("$hmac-sha256$", { b, _ throws(PasswordHashError) in try parseKeyedHMAC(b, .sha256) }),
        ("$hmac-sha512$", { b, _ throws(PasswordHashError) in try parseKeyedHMAC(b, .sha512) }),
    ]

    private static let bcryptBugNote =
        "the prefix marks hashes from implementations with the 8-bit sign-extension bug; "
        + "ask the user to reset the password"
    private static let bcryptOriginalNote =
        "bcrypt's original 1997 form mishandles long and non-ASCII passwords; ask the user to reset the password"
    private static let argon2dNote =
        "argon2d's data-dependent memory access leaks timing and is not meant for passwords; rehash as argon2id"

    static func unsupported(_ scheme: String, _ reason: String) -> PasswordHashError {
        PasswordHashError(.unsupported, "unsupported \(scheme) hash: \(reason)")
    }

    /// What the hash is; `set` is the parameter set it names, if it names one and it was resolved.
    var inspection: PasswordHashInspection { inspection(with: nil) }

    func inspection(with set: HashParameterSet?) -> PasswordHashInspection {
        switch self {
        case .libxcrypt(let hash): return hash.inspection
        case .argon2(let hash): return hash.inspection
        case .scrypt(let hash): return hash.inspection
        case .pbkdf2(let hash): return hash.inspection
        case .saltedSHA(let hash): return hash.inspection
        case .phpass(let hash): return hash.inspection
        case .bcryptSHA256(let hash): return hash.inspection
        case .firebaseScrypt(let hash): return hash.inspection(set)
        case .keyedHMAC(let hash): return hash.inspection(set)
        }
    }

    /// Recomputes the hash of `password` (its UTF-8 bytes, already within `maxPasswordBytes`) and
    /// compares it with the stored one in constant time. `set` is the parameter set the hash names
    /// (`parameterSetReference`), resolved by the caller; hashes that name none ignore it.
    func verify(
        password: [UInt8],
        set: HashParameterSet? = nil,
        limits: PasswordHashLimits = .default
    )
        throws(PasswordHashError) -> Bool
    {
        switch self {
        case .libxcrypt(let hash): return try hash.verify(password: password)
        case .argon2(let hash): return try hash.verify(password: password)
        case .scrypt(let hash): return try hash.verify(password: password)
        case .pbkdf2(let hash): return try hash.verify(password: password)
        case .saltedSHA(let hash): return hash.verify(password: password)
        case .phpass(let hash): return try hash.verify(password: password)
        case .bcryptSHA256(let hash):
            var prehashed = Array(Digest.sha256(password).hexString.utf8)
            defer { PasswordKDF.wipe(&prehashed) }
            return try hash.verify(password: prehashed)
        case .firebaseScrypt(let hash):
            guard let set else { throw Self.noSet }
            return try hash.verify(password: password, set: set, limits: limits)
        case .keyedHMAC(let hash):
            guard let set else { throw Self.noSet }
            return try hash.verify(password: password, set: set)
        }
    }

    private static var noSet: PasswordHashError {
        PasswordHashError(.parametersUnavailable, "the hash needs its parameter set, and none was resolved")
    }
}

// MARK: - Strict field parsing shared by the formats

extension PasswordHash {
    /// An unsigned decimal without sign, leading zeros or separators. Values too large for `Int`
    /// saturate at `Int.max`, so an absurd cost is reported as out of bounds rather than malformed.
    static func decimal<C: Collection<UInt8>>(_ digits: C) -> Int? {
        guard let first = digits.first, first != UInt8(ascii: "0") || digits.count == 1 else { return nil }
        var value = 0
        for c in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int(c - UInt8(ascii: "0")))
            value = overflow1 || overflow2 ? Int.max : sum
        }
        return value
    }

    /// The fields between `$` separators after the scheme prefix.
    static func fields(_ bytes: [UInt8], after scheme: String) -> [ArraySlice<UInt8>] {
        bytes.dropFirst(scheme.utf8.count).split(separator: UInt8(ascii: "$"), omittingEmptySubsequences: false)
    }

    /// `1.5 MiB`-style text for a byte count, for cost descriptions.
    static func describeBytes(_ bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
