extension MigrationReport {
    /// Accounts by credential kind: `password` (a verifiable hash), `legacyPassword` (a password the
    /// legacy login system has not vouched for yet), `appleOnly` (converted or created with Apple).
    public struct Accounts: Codable, Sendable, Equatable {
        public var password: Int
        public var legacyPassword: Int
        public var appleOnly: Int
        public var total: Int

        public init(password: Int, legacyPassword: Int, appleOnly: Int) {
            self.password = password
            self.legacyPassword = legacyPassword
            self.appleOnly = appleOnly
            self.total = password + legacyPassword + appleOnly
        }

        /// Accounts that still sign in with a password of either kind.
        public var onPasswords: Int { password + legacyPassword }
    }

    /// One day's changes to the accounts, from the audit trail. `onPasswordsAtEnd` is derived backwards
    /// from today's count: it adds back the later conversions and deletions of password accounts and
    /// takes away the later creations of them (docs/architecture.md §12 says which rows count).
    public struct AccountsDay: Codable, Sendable, Equatable {
        public var day: String
        /// Accounts created, imported or provisioned (`account.created`, `account.imported`,
        /// `account.provisioned`).
        public var created: Int
        /// Password accounts converted to Apple-only (`account.convertedToApple`).
        public var converted: Int
        /// Accounts deleted (`account.deleted`).
        public var deleted: Int
        /// Accounts on a password (of either kind) at the end of the day.
        public var onPasswordsAtEnd: Int

        public init(day: String, created: Int, converted: Int, deleted: Int, onPasswordsAtEnd: Int) {
            self.day = day
            self.created = created
            self.converted = converted
            self.deleted = deleted
            self.onPasswordsAtEnd = onPasswordsAtEnd
        }
    }
}
