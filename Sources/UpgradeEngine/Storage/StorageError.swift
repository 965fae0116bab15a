/// A storage failure. Messages name tables, constraints and codes, never bound values (which may be secrets).
public struct StorageError: Error, Sendable, CustomStringConvertible, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String {
            case uniqueViolation, versionConflict, notFound, busy, unavailable, migration, configuration, io, constraint
        }
        private let kind: Kind
        public var description: String { kind.rawValue }

        /// A UNIQUE or PRIMARY KEY constraint refused the write (for example an Apple `sub` linked twice);
        /// `StorageError.constraint` says which.
        public static let uniqueViolation = Code(kind: .uniqueViolation)
        /// An optimistic-concurrency update found a newer version than the one it read.
        public static let versionConflict = Code(kind: .versionConflict)
        public static let notFound = Code(kind: .notFound)
        /// The database stayed locked past the busy timeout.
        public static let busy = Code(kind: .busy)
        /// The database server cannot be reached: connecting failed or timed out, or the connection
        /// broke. Nothing of the transaction committed (except when the break came during COMMIT,
        /// whose outcome is then unknown); the same call may succeed once the server is back.
        public static let unavailable = Code(kind: .unavailable)
        public static let migration = Code(kind: .migration)
        public static let configuration = Code(kind: .configuration)
        public static let io = Code(kind: .io)
        /// Another constraint (CHECK, FOREIGN KEY, NOT NULL, an append-only trigger) refused the write.
        public static let constraint = Code(kind: .constraint)
    }

    /// A uniqueness rule of the schema, one per UNIQUE or PRIMARY KEY constraint, named as
    /// `table.column`. Every backend has the same tables and reports its own constraint names as
    /// these values, so callers switch on them and never read a database's message.
    public struct Constraint: Hashable, Sendable, CustomStringConvertible {
        private enum Name: String {
            case accountsID = "accounts.id"
            case accountsUsername = "accounts.username"
            case accountsUsernameSkeleton = "accounts.username_skeleton"
            case passwordCredentialsAccount = "password_credentials.account_id"
            case totpEnrollmentsAccount = "totp_enrollments.account_id"
            case recoveryCodesCode = "recovery_codes.(account_id, code_hash)"
            case loginThrottleUsernameKey = "login_throttle.username_key"
            case appleLinksAccount = "apple_links.account_id"
            case appleLinksSub = "apple_links.sub"
            case upgradeSessionsID = "upgrade_sessions.id"
            case transferRecordsAccount = "transfer_records.account_id"
            case transferRecordsOldSub = "transfer_records.old_sub"
            case transferRecordsTransferSub = "transfer_records.transfer_sub"
            case auditEventsID = "audit_events.id"
            case appleNotificationsJTI = "apple_notifications.jti"
            case usedSignInNoncesHash = "used_sign_in_nonces.nonce_hash"
            case jobLeasesJob = "job_leases.job"
            case clientThrottleClientKey = "client_throttle.client_key"
            case upgradeTicketsHash = "upgrade_tickets.ticket_hash"
            case appleRevocationsID = "apple_revocations.id"
            case passwordChangesID = "password_changes.id"
            case accountProfilesAccount = "account_profiles.account_id"
            case importRunsID = "import_runs.id"
            case webhookOutboxID = "webhook_outbox.id"
            case usernameSkeletonSourceID = "username_skeleton_source.id"
            case hashParameterSetsID = "hash_parameter_sets.id"
            case adminTokenUsesToken = "admin_token_uses.(name, created_at)"
            case consoleSessionsHash = "console_sessions.session_hash"
            case keyChecksKeyID = "key_checks.key_id"
            case retiredTransferRecordsID = "retired_transfer_records.id"
            case serveInstancesID = "serve_instances.instance_id"
        }
        private let name: Name
        public var description: String { name.rawValue }

        private init(name: Name) { self.name = name }

        /// The constraint a backend names as `table.column` (the description), or nil for one the
        /// schema does not have.
        public init?(described text: String) {
            guard let name = Name(rawValue: text) else { return nil }
            self.name = name
        }

        /// Two accounts with one id.
        public static let accountsID = Constraint(name: .accountsID)
        /// A username another account has (compared in its enforced form, `Username.value`).
        public static let accountsUsername = Constraint(name: .accountsUsername)
        /// A username that looks like another account's: the same confusable skeleton (UTS #39).
        public static let accountsUsernameSkeleton = Constraint(name: .accountsUsernameSkeleton)
        public static let passwordCredentialsAccount = Constraint(name: .passwordCredentialsAccount)
        public static let totpEnrollmentsAccount = Constraint(name: .totpEnrollmentsAccount)
        /// A recovery code hash the account already has.
        public static let recoveryCodesCode = Constraint(name: .recoveryCodesCode)
        public static let loginThrottleUsernameKey = Constraint(name: .loginThrottleUsernameKey)
        /// A second Apple link for one account.
        public static let appleLinksAccount = Constraint(name: .appleLinksAccount)
        /// An Apple `sub` another account is linked to.
        public static let appleLinksSub = Constraint(name: .appleLinksSub)
        public static let upgradeSessionsID = Constraint(name: .upgradeSessionsID)
        public static let transferRecordsAccount = Constraint(name: .transferRecordsAccount)
        /// An old `sub` another account's transfer record began with.
        public static let transferRecordsOldSub = Constraint(name: .transferRecordsOldSub)
        /// A transfer `sub` another account's transfer record holds.
        public static let transferRecordsTransferSub = Constraint(name: .transferRecordsTransferSub)
        public static let auditEventsID = Constraint(name: .auditEventsID)
        public static let appleNotificationsJTI = Constraint(name: .appleNotificationsJTI)
        public static let usedSignInNoncesHash = Constraint(name: .usedSignInNoncesHash)
        /// A second lease row for one job (the store takes a lease over in place instead).
        public static let jobLeasesJob = Constraint(name: .jobLeasesJob)
        public static let clientThrottleClientKey = Constraint(name: .clientThrottleClientKey)
        public static let upgradeTicketsHash = Constraint(name: .upgradeTicketsHash)
        public static let appleRevocationsID = Constraint(name: .appleRevocationsID)
        public static let passwordChangesID = Constraint(name: .passwordChangesID)
        /// A second profile row for one account (the store upserts profiles instead).
        public static let accountProfilesAccount = Constraint(name: .accountProfilesAccount)
        /// A second progress row for one import (the store upserts runs instead).
        public static let importRunsID = Constraint(name: .importRunsID)
        public static let webhookOutboxID = Constraint(name: .webhookOutboxID)
        /// A second row for the ICU release of the stored skeletons (the store upserts it instead).
        public static let usernameSkeletonSourceID = Constraint(name: .usernameSkeletonSourceID)
        /// A parameter set id taken already (two imports adding a set at once).
        public static let hashParameterSetsID = Constraint(name: .hashParameterSetsID)
        /// A second last-use row for one admin token (its name and creation time).
        public static let adminTokenUsesToken = Constraint(name: .adminTokenUsesToken)
        /// A console session id drawn twice (256 random bits: never, in practice).
        public static let consoleSessionsHash = Constraint(name: .consoleSessionsHash)
        /// A second check value for one key id (inserted with `ON CONFLICT DO NOTHING`, so never raised).
        public static let keyChecksKeyID = Constraint(name: .keyChecksKeyID)
        /// A retired transfer record's id taken already (ids come from the column: never, in practice).
        public static let retiredTransferRecordsID = Constraint(name: .retiredTransferRecordsID)
        /// A second row for one serve instance (written with `ON CONFLICT DO UPDATE`, so never raised).
        public static let serveInstancesID = Constraint(name: .serveInstancesID)
    }

    public let code: Code
    /// For people reading logs; code that decides reads `code` and `constraint`.
    public let message: String
    /// For `uniqueViolation`, the rule that refused the write; nil when the backend could not tell
    /// which (its message still names it).
    public let constraint: Constraint?

    public init(_ code: Code, _ message: String, constraint: Constraint? = nil) {
        self.code = code
        self.message = message
        self.constraint = constraint
    }

    public var description: String { "storage \(code): \(message)" }
}
