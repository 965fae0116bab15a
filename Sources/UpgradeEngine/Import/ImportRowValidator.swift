/// A row that passed every check that needs no database: what the writer stores.
public struct ValidatedImportRow: Sendable {
    public var username: Username
    public var email: String?
    public var displayName: String?
    /// The stored hash as given (with `p=<id>` added where the import bound its parameter set), and
    /// its format (`PasswordHashFormat.rawValue`).
    public var passwordHash: (hash: String, format: String)?
    public var totp: OTPAuthURI?
    /// Hashed in `RecoveryCodes`' format, whichever way they were given.
    public var recoveryCodeHashes: [String]
    public var appleSub: String?
}

/// Checks one raw row without touching the database: pure, so the same row always gets the same
/// answer. What depends on stored data (a username or `appleSub` already taken) is the writer's.
public struct ImportRowValidator: Sendable {
    public static let maxEmailBytes = 320
    public static let maxDisplayNameBytes = 256
    public static let maxAppleSubBytes = 255
    public static let maxRecoveryCodes = 20

    public let passwords: PasswordVerifier
    /// Whether TOTP secrets can be sealed (a secret key was given).
    public let canSealTOTP: Bool
    /// Whether Apple links can be recorded (the team and client ids are known).
    public let canLinkApple: Bool
    /// The stored parameter set a Firebase scrypt or keyed HMAC hash given without `p=<id>` names
    /// once stored (`accounts import --hash-parameters`).
    public let hashParameterSets: [HashParameterSet.Kind: Int64]

    public init(
        passwords: PasswordVerifier = PasswordVerifier(),
        canSealTOTP: Bool,
        canLinkApple: Bool,
        hashParameterSets: [HashParameterSet.Kind: Int64] = [:]
    ) {
        self.passwords = passwords
        self.canSealTOTP = canSealTOTP
        self.canLinkApple = canLinkApple
        self.hashParameterSets = hashParameterSets
    }

    public func validate(_ row: ImportRawRow) -> Result<ValidatedImportRow, ImportRowError> {
        func fail(_ field: ImportField, _ reason: String) -> Result<ValidatedImportRow, ImportRowError> {
            .failure(ImportRowError(field: field.rawValue, reason))
        }
        guard let typed = row.values[.username] else { return fail(.username, "is required") }
        let username: Username
        do {
            username = try Username(typed)
        } catch {
            return fail(.username, error.message)
        }
        var valid = ValidatedImportRow(username: username, recoveryCodeHashes: [])

        if let email = row.values[.email] {
            if let refusal = Self.emailRefusal(email) { return fail(.email, refusal) }
            valid.email = email
        }
        if let name = row.values[.displayName] {
            if let refusal = Self.displayNameRefusal(name) { return fail(.displayName, refusal) }
            valid.displayName = name
        }
        if let legacy = row.values[.legacyPassword] {
            guard legacy == "true" || legacy == "false" else {
                return fail(.legacyPassword, "must be true or false")
            }
            if legacy == "true" {
                guard row.values[.passwordHash] == nil else {
                    return fail(.legacyPassword, "give passwordHash or legacyPassword, not both")
                }
                // No hash: the legacy system checks the password at the first sign-in
                // (docs/legacy-verification.md).
                valid.passwordHash = ("", PasswordCredentialRecord.legacyFormat)
            }
        }
        if var hash = row.values[.passwordHash] {
            for (kind, id) in hashParameterSets where hash.hasPrefix(kind.hashPrefix) {
                hash = PasswordHash.binding(hash, to: id) ?? hash
            }
            do {
                // Parsed and its cost bounded exactly as a sign-in would; nothing is computed.
                valid.passwordHash = (hash, try passwords.inspect(hash).format.rawValue)
            } catch {
                return fail(.passwordHash, error.message)
            }
        }
        if let uri = row.values[.totp] {
            do {
                valid.totp = try OTPAuthURI.parse(uri)
            } catch {
                return fail(.totp, error.message)
            }
            guard canSealTOTP else {
                return fail(.totp, "a TOTP secret is stored sealed: set UPGRADE_SECRET_KEY_FILE (or pass --dev)")
            }
        }
        if let codes = row.recoveryCodes {
            guard codes.count <= Self.maxRecoveryCodes else {
                return fail(
                    .recoveryCodes,
                    "\(codes.count) codes; at most \(Self.maxRecoveryCodes) are kept per account"
                )
            }
            var hashes = Set<String>()
            for (index, code) in codes.enumerated() {
                let hash: String
                if Self.isStoredCodeHash(code) {
                    hash = code
                } else if RecoveryCodes.isWellFormed(code) {
                    hash = RecoveryCodes.hash(code)
                } else {
                    return fail(
                        .recoveryCodes,
                        "code \(index + 1) is neither a stored hash (64 lowercase hex digits) nor a code of "
                            + "\(RecoveryCodes.length) symbols from \(RecoveryCodes.alphabet)"
                    )
                }
                guard hashes.insert(hash).inserted else {
                    return fail(.recoveryCodes, "code \(index + 1) repeats an earlier code")
                }
                valid.recoveryCodeHashes.append(hash)
            }
            guard valid.totp != nil else {
                return fail(.recoveryCodes, "recovery codes stand in for TOTP codes; give totp as well")
            }
        }
        if let sub = row.values[.appleSub] {
            guard sub.utf8.count <= Self.maxAppleSubBytes, sub.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                return fail(.appleSub, "must be at most \(Self.maxAppleSubBytes) printable ASCII characters")
            }
            guard valid.passwordHash == nil, valid.totp == nil else {
                return fail(
                    .appleSub,
                    "an Apple-linked account signs in with Apple only; leave passwordHash, legacyPassword, totp and recoveryCodes empty"
                )
            }
            guard canLinkApple else {
                return fail(
                    .appleSub,
                    "an Apple link records the team and client: give --team-id and --client-id, or set APPLE_TEAM_ID and APPLE_CLIENT_IDS"
                )
            }
            valid.appleSub = sub
        }
        // A row without a credential may still update an existing account (what it leaves out keeps
        // its value); the writer refuses it for a new account (`missingCredential`), which could
        // not sign in.
        return .success(valid)
    }

    /// Why a row that would create an account cannot: it names no way to sign in.
    public static let missingCredential =
        "passwordHash: is required for a new account unless legacyPassword is true or appleSub is given (the account could not sign in)"

    /// Why `email` cannot be stored, or nil: at most `maxEmailBytes`, no space or control
    /// character, exactly one `@` with something on each side.
    public static func emailRefusal(_ email: String) -> String? {
        let bytes = Array(email.utf8)
        guard bytes.count <= maxEmailBytes else { return "is longer than \(maxEmailBytes) bytes" }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7f }) else { return "contains a space or a control character" }
        let at = bytes.firstIndex(of: UInt8(ascii: "@"))
        guard let at, at > 0, at < bytes.count - 1, bytes.lastIndex(of: UInt8(ascii: "@")) == at else {
            return "must have the form local@domain with exactly one '@'"
        }
        return nil
    }

    /// Why `name` cannot be stored as a display name, or nil.
    public static func displayNameRefusal(_ name: String) -> String? {
        guard name.utf8.count <= maxDisplayNameBytes else { return "is longer than \(maxDisplayNameBytes) bytes" }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return "contains a control character"
        }
        return nil
    }

    /// `RecoveryCodes.hash`'s output: 64 lowercase hex digits.
    static func isStoredCodeHash(_ code: String) -> Bool {
        code.utf8.count == 64
            && code.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }
}
