extension MigrationReport {
    /// The team transfer now: records per status (`TransferStatus` names), Apple-linked accounts no
    /// transfer step has touched, accounts an earlier transfer left behind (docs/apple-protocol.md
    /// §3.2, "A later transfer"), and the latest migration-window end given to a record.
    public struct Transfer: Codable, Sendable, Equatable {
        public var byStatus: [String: Int]
        public var untouchedLinkedAccounts: Int
        public var strandedAccounts: Int
        public var windowEndsAt: String?

        public init(byStatus: [String: Int], untouchedLinkedAccounts: Int, strandedAccounts: Int, windowEndsAt: String?)
        {
            self.byStatus = byStatus
            self.untouchedLinkedAccounts = untouchedLinkedAccounts
            self.strandedAccounts = strandedAccounts
            self.windowEndsAt = windowEndsAt
        }
    }

    /// The outboxes now.
    public struct Outboxes: Codable, Sendable, Equatable {
        public var webhooks: Webhooks
        public var appleRevocations: AppleRevocations

        public init(webhooks: Webhooks, appleRevocations: AppleRevocations) {
            self.webhooks = webhooks
            self.appleRevocations = appleRevocations
        }

        /// Webhook events waiting to be delivered, delivered, and given up on (`upgrade-cli webhooks`).
        public struct Webhooks: Codable, Sendable, Equatable {
            public var pending: Int
            public var delivered: Int
            public var failed: Int
            public var oldestPendingAt: String?

            public init(pending: Int, delivered: Int, failed: Int, oldestPendingAt: String?) {
                self.pending = pending
                self.delivered = delivered
                self.failed = failed
                self.oldestPendingAt = oldestPendingAt
            }
        }

        /// Refresh tokens of deleted accounts not yet revoked at Apple.
        public struct AppleRevocations: Codable, Sendable, Equatable {
            public var pending: Int

            public init(pending: Int) { self.pending = pending }
        }
    }
}
