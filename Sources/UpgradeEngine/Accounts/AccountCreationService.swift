import Foundation

/// Creates one password account, with TOTP and recovery codes if asked, in one transaction with
/// its `account.created` audit row: `upgrade-cli accounts add` and the development demo account.
/// An import writes the same rows (`AccountCredentials`) a batch at a time. The username is stored
/// in its enforced form and an account's look-alike is refused (docs/usernames.md).
public struct AccountCreationService: Sendable {
    /// What to create, checked before any database is touched.
    public struct Request: Sendable {
        public static let maximumPasswordBytes = 1024
        public static let maximumRecoveryCodes = 20

        public let username: Username
        let password: String
        public let totp: OTPAuthURI?
        public let recoveryCodes: Int
        /// The audit row's `origin` (`dev` for the demo account, `legacy` for one the legacy login
        /// system vouched for).
        public let origin: String?
        /// The profile stored with the account (already checked: `LegacyProfile`); nil stores none.
        public var profile: LegacyProfile?

        /// Refuses an empty password, one over `maximumPasswordBytes`, or a recovery code count
        /// outside 0...`maximumRecoveryCodes`.
        public init(
            username: Username,
            password: String,
            totp: OTPAuthURI? = nil,
            recoveryCodes: Int = 0,
            origin: String? = nil
        ) throws(AccountCreationError) {
            guard !password.isEmpty else { throw .emptyPassword }
            guard password.utf8.count <= Self.maximumPasswordBytes else { throw .passwordTooLong }
            guard (0...Self.maximumRecoveryCodes).contains(recoveryCodes) else { throw .recoveryCodeCount }
            self.username = username
            self.password = password
            self.totp = totp
            self.recoveryCodes = recoveryCodes
            self.origin = origin
        }
    }

    public struct Created: Sendable {
        public let account: AccountRecord
        /// The recovery codes in clear, to be shown once: only their hashes are stored.
        public let recoveryCodes: [String]
    }

    let store: any UpgradeStore
    /// Seals TOTP secrets: a request with TOTP needs it.
    let secrets: SecretBox?
    /// The parameters the password is hashed with.
    let hasher: PasswordHasher

    public init(store: any UpgradeStore, secrets: SecretBox?, hasher: PasswordHasher = PasswordHasher()) {
        self.store = store
        self.secrets = secrets
        self.hasher = hasher
    }

    /// Throws `AccountCreationError` for a taken or look-alike username, and the store's or the
    /// hasher's own errors otherwise.
    public func create(_ request: Request, now: Int64) throws -> Created {
        precondition(request.totp == nil || secrets != nil, "TOTP needs a secret box to seal its secret")
        let account = AccountRecord(
            id: UUID().uuidString.lowercased(),
            username: request.username.value,
            credentialKind: .password,
            createdAt: now,
            updatedAt: now
        )
        let recoveryCodes = RecoveryCodes.generate(count: request.recoveryCodes)
        let credentials = AccountCredentials(
            accountID: account.id,
            passwordHash: (try hasher.hash(password: request.password), "argon2id"),
            totp: request.totp,
            secrets: secrets,
            recoveryCodeHashes: recoveryCodes.map(RecoveryCodes.hash),
            now: now
        )
        var detail = credentials.auditDetail
        detail["origin"] = request.origin
        // For the migration report's accounts per day (docs/architecture.md §12).
        detail["credentialKind"] = account.credentialKind.rawValue
        let profile = request.profile.flatMap { profile -> AccountProfileRecord? in
            guard profile.email != nil || profile.displayName != nil else { return nil }
            // The legacy system is the team's own record of its users: what it gives counts as imported.
            return AccountProfileRecord(
                accountID: account.id,
                email: profile.email,
                displayName: profile.displayName,
                importRun: nil,
                importLine: nil,
                updatedAt: now,
                emailSource: profile.email == nil ? nil : .import,
                displayNameSource: profile.displayName == nil ? nil : .import
            )
        }
        for (field, why) in request.profile?.dropped ?? [:] { detail["profileDropped.\(field)"] = why }
        do {
            try store.write { tx in
                if let other = try tx.lookAlikeAccounts(of: request.username).first {
                    throw AccountCreationError.lookAlike(other: other)
                }
                try tx.insertAccount(account)
                if let password = credentials.password { try tx.upsertPasswordCredential(password) }
                if let profile { try tx.upsertAccountProfile(profile) }
                if let totp = credentials.totp { try tx.upsertTOTPEnrollment(totp) }
                if !credentials.recoveryCodeHashes.isEmpty {
                    try tx.insertRecoveryCodes(accountID: account.id, codeHashes: credentials.recoveryCodeHashes)
                }
                try tx.appendAudit(
                    AuditEvent(at: now, accountID: account.id, upgradeID: nil, event: "account.created", detail: detail)
                )
            }
        } catch let error as StorageError where error.constraint == .accountsUsername {
            throw AccountCreationError.usernameTaken
        } catch let error as StorageError where error.constraint == .accountsUsernameSkeleton {
            throw AccountCreationError.lookAlike(other: nil)
        }
        return Created(account: account, recoveryCodes: recoveryCodes)
    }
}
