/// The migration report (`upgrade-cli report`, `GET /v1/admin/report`): read in one transaction,
/// so its counts agree with each other, and shaped here, so the CLI and the API give one document.
public struct ReportService: Sendable {
    let store: any UpgradeStore

    public init(store: any UpgradeStore) { self.store = store }

    /// The report of the window `[since, until)` (`since` nil: from the first event; `until` nil:
    /// `now`), read at `now`. A window that ends before it starts is a validation failure.
    public func report(since: Int64?, until: Int64?, now: Int64) throws(ServiceFailure) -> MigrationReport {
        let end = until ?? now
        if let since, since >= end {
            throw ServiceFailure(.validation, "since must be before until")
        }
        let start = since ?? Int64.min
        do {
            return try store.read { tx in
                let accounts = try tx.accountCredentialCounts()
                let steps = try tx.flowStepCounts(since: start, until: end)
                let changes = (
                    window: try tx.accountChangeCounts(since: start, until: end),
                    later: try tx.accountChangeCounts(since: end, until: Int64.max)
                )
                let medians = (
                    upgrade: try tx.medianCompletionSeconds(.upgrade, since: start, until: end),
                    passwordChange: try tx.medianCompletionSeconds(.passwordChange, since: start, until: end)
                )
                let progress = try tx.transferProgress()
                let webhooks = try tx.webhookOutboxCounts()
                let revocations = try tx.pendingAppleRevocationCount()
                return Self.assemble(
                    since: since,
                    until: end,
                    now: now,
                    accounts: accounts,
                    steps: steps,
                    changes: changes,
                    medians: medians,
                    transfer: progress,
                    webhooks: webhooks,
                    revocations: revocations
                )
            }
        } catch {
            throw AdminQueryService.readFailure(error)
        }
    }

    static func assemble(
        since: Int64?,
        until: Int64,
        now: Int64,
        accounts: AccountCredentialCounts,
        steps: [FlowStepCount],
        changes: (window: [AccountChangeCount], later: [AccountChangeCount]),
        medians: (upgrade: Int64?, passwordChange: Int64?),
        transfer: TransferProgress,
        webhooks: WebhookOutboxCounts,
        revocations: Int
    ) -> MigrationReport {
        let legacy = accounts.legacyPasswords
        let counts = MigrationReport.Accounts(
            password: max(0, (accounts.byKind["password"] ?? 0) - legacy),
            legacyPassword: legacy,
            appleOnly: accounts.byKind["appleOnly"] ?? 0
        )
        var upgrades = FlowTally()
        var passwordChanges = FlowTally()
        for step in steps {
            if step.event.hasPrefix("upgrade.") {
                upgrades.add(step)
            } else if step.event.hasPrefix("passwordChange.") {
                passwordChanges.add(step)
            }
        }
        return MigrationReport(
            since: since.map { RFC3339.utc(seconds: $0) },
            until: RFC3339.utc(seconds: until),
            generatedAt: RFC3339.utc(seconds: now),
            accounts: counts,
            accountsPerDay: AccountsTally.days(
                changes.window,
                later: changes.later,
                onPasswordsNow: counts.onPasswords
            ),
            upgrades: upgrades.flow(
                steps: ["started", "credentialAccepted", "reachedApple", "completed"],
                median: medians.upgrade
            ),
            passwordChanges: passwordChanges.flow(
                steps: ["started", "credentialAccepted", "completed"],
                median: medians.passwordChange
            ),
            transfer: MigrationReport.Transfer(
                // Every state, 0 included, so the document's shape does not depend on the data.
                byStatus: Dictionary(uniqueKeysWithValues: TransferStatus.allCases.map { ($0.rawValue, 0) })
                    .merging(transfer.recordsByStatus, uniquingKeysWith: +),
                untouchedLinkedAccounts: transfer.untouchedLinkedAccounts,
                strandedAccounts: transfer.strandedAccounts,
                windowEndsAt: transfer.latestWindowEndsAt.map { RFC3339.utc(seconds: $0) }
            ),
            outboxes: MigrationReport.Outboxes(
                webhooks: .init(
                    pending: webhooks.pending,
                    delivered: webhooks.delivered,
                    failed: webhooks.failed,
                    oldestPendingAt: webhooks.oldestPendingAt.map { RFC3339.utc(seconds: $0) }
                ),
                appleRevocations: .init(pending: revocations)
            )
        )
    }
}
