import Foundation

extension TransferService {
    /// Sender side (docs/apple-protocol.md §3.2 steps 1–2): obtains the `transfer_sub` of every Apple-linked account
    /// of our team for `targetTeamID`, with one team access token for the whole batch. Accounts not
    /// yet prepared, and those whose preparation failed, are tried; the rest are reported as done
    /// or skipped. `windowEndsAt` is the end of the 60-day window once the transfer was accepted,
    /// nil before (preparing may start before the transfer, TN3159).
    ///
    /// Refuses a target that is not a team id, or that is our own team: transfer identifiers made
    /// for the sender itself can never be exchanged (docs/apple-protocol.md §3.6).
    public func prepare(
        targetTeamID: String,
        clientID: String,
        windowEndsAt: Int64?,
        now: Int64,
        options: TransferBatchOptions = TransferBatchOptions()
    ) async throws(TransferFailure) -> TransferBatchSummary {
        guard ClientSecretSigner.isAppleIdentifier(targetTeamID) else {
            throw TransferFailure(
                .validation,
                "the target team id must be 10 characters A-Z or 0-9, as Apple issues them"
            )
        }
        guard targetTeamID != configuration.teamID else {
            throw TransferFailure(
                .validation,
                "the target team is this deployment's own team (\(configuration.teamID)); transfer identifiers must be made for the team receiving the app"
            )
        }
        try Self.validate(clientID: clientID)
        try options.validate()
        let plan = BatchPlan(
            step: .prepare,
            targetTeamID: targetTeamID,
            clientID: clientID,
            windowEndsAt: windowEndsAt,
            now: now
        )
        return await run(plan, options: options)
    }

    /// Recipient side (docs/apple-protocol.md §3.2 step 5): exchanges each stored `transfer_sub` for the recipient
    /// team's `sub` (and relay email) and re-keys the account's Apple link in the transaction that
    /// records `transferred`. Our configuration must now be the recipient team's: a record prepared
    /// for another team stops the batch before any call.
    public func complete(
        clientID: String,
        windowEndsAt: Int64,
        now: Int64,
        options: TransferBatchOptions = TransferBatchOptions()
    ) async throws(TransferFailure) -> TransferBatchSummary {
        try Self.validate(clientID: clientID)
        try options.validate()
        let plan = BatchPlan(
            step: .complete,
            targetTeamID: nil,
            clientID: clientID,
            windowEndsAt: windowEndsAt,
            now: now
        )
        return await run(plan, options: options)
    }

    static func validate(clientID: String) throws(TransferFailure) {
        guard ClientSecretSigner.isClientID(clientID) else {
            throw TransferFailure(
                .validation,
                "the client id must be a bundle id or Services id: 1 to 255 printable ASCII characters, no spaces"
            )
        }
    }

    /// One batch's fixed inputs.
    struct BatchPlan: Sendable {
        var step: TransferRowReport.Step
        var targetTeamID: String?
        var clientID: String
        var windowEndsAt: Int64?
        var now: Int64
    }

    /// What every row of a running batch shares.
    struct BatchContext: Sendable {
        var plan: BatchPlan
        /// The time now: the options' clock, else the batch's `now`.
        var clock: @Sendable () -> Int64
        var dryRun: Bool
        var retry: AppleRetry
        var tokens: TeamAccessTokenCache
        var control: TransferBatchControl
        /// Rows' writes waiting together are committed in one transaction.
        var commits: GroupCommit<PlannedWrite, RowCommitResult>
        /// Target teams whose records belong to another transfer than the one `complete` runs for
        /// (read once when it starts): those that received the app and have since moved it on, and,
        /// once records were prepared for this deployment's team, every other target.
        var otherTransferTargets: Set<String> = []
        /// `prepare`: the recorded window of the transfer that brought the app to this team (read
        /// once when it starts), for a record that has none of its own.
        var arrivalWindowEndsAt: Int64?
    }

    /// What committing one row's outcome gave.
    typealias RowCommitResult = Result<(from: TransferStatus, result: CommitResult), TransferFailure>

    /// At most this many rows' outcomes are committed in one transaction.
    static let maxCommitGroup = 64

    /// Accounts are listed in pages of this many, in account-id order.
    static let pageSize = 500

    private func run(_ plan: BatchPlan, options: TransferBatchOptions) async -> TransferBatchSummary {
        var summary = TransferBatchSummary(step: plan.step, dryRun: options.dryRun)
        let retry = AppleRetry(options)
        var otherTransferTargets: Set<String> = []
        var arrivalWindowEndsAt: Int64?
        do {
            if plan.step == .complete {
                let (retired, live) = try store.read { tx in
                    (try tx.retiredTransferTargets(), try tx.transferTargets())
                }
                // Records prepared for us show the credentials are right: the others are another
                // transfer's. Without any, a record for another team means the wrong credentials.
                otherTransferTargets = retired.union(live.contains(configuration.teamID) ? live : [])
                otherTransferTargets.remove(configuration.teamID)
            } else {
                let team = configuration.teamID
                arrivalWindowEndsAt = try store.read { tx in try tx.latestWindowEnd(targetTeamID: team) }
            }
        } catch {
            summary.stop = .init(
                .storage,
                "the earlier transfers could not be read: \(Self.storageFailure(error).message)"
            )
            return summary
        }
        let context = BatchContext(
            plan: plan,
            clock: options.clock ?? { plan.now },
            dryRun: options.dryRun,
            retry: retry,
            tokens: TeamAccessTokenCache(apple: apple, clientID: plan.clientID, retry: retry),
            control: TransferBatchControl(limit: options.limit),
            commits: GroupCommit(maxGroup: Self.maxCommitGroup) { [self] writes in
                writeTogether(writes)
            },
            otherTransferTargets: otherTransferTargets,
            arrivalWindowEndsAt: arrivalWindowEndsAt
        )
        // The team token first: if Apple refuses our credentials, every row would fail alike.
        do {
            _ = try await context.tokens.token()
        } catch {
            summary.stop = Self.stop(forTokenError: error)
            return summary
        }

        // Rows block (a transaction, an exchange with Apple): they run on threads of their own, one
        // per row in flight, each taking the next account as it finishes one. No thread hands rows
        // out or collects them: that was two more thread hops per row.
        let workers = BlockingThreadPool(threads: options.concurrency)
        defer { workers.shutdown() }
        let feed = RowFeed(service: self, control: context.control)
        let results = RowResults(summary: summary, options: options, control: context.control)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<options.concurrency {
                group.addTask(executorPreference: workers) {
                    while let (accountID, snapshot) = feed.next() {
                        if let report = await self.row(accountID, snapshot, context) { results.add(report) }
                    }
                }
            }
        }
        summary = results.summary
        if Task.isCancelled {
            context.control.requestStop(.init(.interrupted, "the batch was interrupted; re-run to resume"))
        }
        summary.stop = context.control.stop
        summary.limitReached = context.control.limitReached
        return summary
    }

    /// The accounts of a batch, handed to its rows one at a time in account-id order, a page
    /// read whenever the last one is used up. Nothing more is handed out once the batch is to stop,
    /// its row limit is reached or its task is cancelled.
    final class RowFeed: @unchecked Sendable {
        private let lock = NSLock()
        private let service: TransferService
        private let control: TransferBatchControl
        private var page: [(accountID: String, snapshot: Result<Snapshot, TransferFailure>)] = []
        private var cursor: String?
        private var listedAll = false

        init(service: TransferService, control: TransferBatchControl) {
            self.service = service
            self.control = control
        }

        func next() -> (accountID: String, snapshot: Result<Snapshot, TransferFailure>)? {
            lock.lock()
            defer { lock.unlock() }
            guard control.stop == nil, !control.limitReached, !Task.isCancelled else { return nil }
            if page.isEmpty && !listedAll {
                do {
                    page = try service.page(after: cursor)
                } catch {
                    control.requestStop(.init(.storage, "the linked accounts could not be listed: \(error)"))
                    return nil
                }
                listedAll = page.count < TransferService.pageSize
                cursor = page.last?.accountID
                page.reverse()
            }
            return page.popLast()
        }
    }

    /// The batch's summary, added to as rows finish (in the order they finish), each row passed
    /// to `onRow` one at a time; stops the batch once Apple was unavailable for
    /// `unavailableRowsBeforeStop` rows in a row.
    final class RowResults: @unchecked Sendable {
        private let lock = NSLock()
        private var collected: TransferBatchSummary
        private var unavailableInARow = 0
        private let options: TransferBatchOptions
        private let control: TransferBatchControl

        init(summary: TransferBatchSummary, options: TransferBatchOptions, control: TransferBatchControl) {
            collected = summary
            self.options = options
            self.control = control
        }

        var summary: TransferBatchSummary {
            lock.lock()
            defer { lock.unlock() }
            return collected
        }

        func add(_ report: TransferRowReport) {
            lock.lock()
            defer { lock.unlock() }
            collected.add(report)
            options.onRow?(report)
            switch report.outcome {
            case .unavailable:
                unavailableInARow += 1
                if unavailableInARow >= options.unavailableRowsBeforeStop {
                    control.requestStop(
                        .init(
                            .appleUnavailable,
                            "Apple was unavailable for \(unavailableInARow) rows in a row; re-run later to resume"
                        )
                    )
                }
            case .stopped:
                break
            default:
                unavailableInARow = 0
            }
        }
    }

    static func stop(forTokenError error: AppleEndpointError) -> TransferBatchSummary.Stop {
        if error.code == .unavailable {
            return .init(.appleUnavailable, "Apple could not be reached for a team access token: \(error.message)")
        }
        return .init(
            .configuration,
            "Apple refused the team access token request (\(error.code)): \(error.message); check the team id, key id, private key and that the client id belongs to the team"
        )
    }

    // MARK: One row

    /// The next page of linked accounts after `cursor`, each with its link and transfer state, read
    /// in one query: what a row decides from, before it calls Apple and when it commits. Its write
    /// is guarded by the versions read here, so a state that changed in between fails the write,
    /// and `commit` then judges Apple's answer against what is stored. A record that cannot be read
    /// fails its row only.
    fileprivate func page(
        after cursor: String?
    ) throws -> [(accountID: String, snapshot: Result<Snapshot, TransferFailure>)] {
        try store.read { tx in
            try tx.linkedAccounts(afterAccountID: cursor, limit: Self.pageSize).map { account in
                do throws(TransferFailure) {
                    let machine =
                        try account.record.map(Self.restore) ?? TransferStateMachine(linkedTo: account.link.sub)
                    let snapshot = Snapshot(link: account.link, record: account.record, machine: machine)
                    return (account.link.accountID, .success(snapshot))
                } catch {
                    return (account.link.accountID, .failure(error))
                }
            }
        }
    }

    /// Processes one account from the state its page read and returns its report, or nil when the
    /// row limit kept it from work (it is then not reported: the next run picks it up).
    private func row(
        _ accountID: String,
        _ read: Result<Snapshot, TransferFailure>,
        _ context: BatchContext
    ) async -> TransferRowReport? {
        let plan = context.plan
        func report(
            _ from: TransferStatus,
            _ to: TransferStatus,
            _ outcome: TransferRowReport.Outcome,
            _ reason: String? = nil
        ) -> TransferRowReport {
            TransferRowReport(
                accountID: accountID,
                step: plan.step,
                from: from,
                to: to,
                outcome: outcome,
                reason: reason,
                dryRun: context.dryRun
            )
        }

        let snapshot: Snapshot
        switch read {
        case .success(let found): snapshot = found
        case .failure(let error): return report(.linked, .linked, .error, error.code.name)
        }
        let status = snapshot.machine.status
        if let decision = triage(snapshot, context) {
            return report(status, status, decision.outcome, decision.reason)
        }
        // Triage lets a finished transfer through only to begin a later one.
        let beginsNextTransfer = status == .transferred

        if let stop = context.control.stop { return report(status, status, .stopped, stop.code.name) }
        if Task.isCancelled { return report(status, status, .stopped, "interrupted") }
        guard context.control.takePermit() else { return nil }

        // The machine decides whether the step may run now (the 60-day window) and which call to make.
        let begin: TransferEvent =
            plan.step == .prepare
            ? .beginPreparation(windowEndsAt: plan.windowEndsAt)
            : .beginCompletion(windowEndsAt: plan.windowEndsAt ?? 0)
        var trial = snapshot.machine
        let started: TransferTransition
        do {
            if beginsNextTransfer, let finished = snapshot.record {
                // The machine owns the earlier window's rule too.
                _ = try trial.apply(finished.beginNextTransfer, now: context.clock())
            }
            started = try trial.apply(begin, now: context.clock())
        } catch {
            if error.code == .deadlineNotReached, let finished = snapshot.record {
                var row = report(status, status, .skipped, "earlier-window-open")
                row.retryAfter = finished.earlierWindowEnd
                return row
            }
            return report(status, status, .skipped, error.code.name)
        }
        if started.stateChanged {
            // The window has closed: recorded as a failed step, retryable with a new window.
            if context.dryRun {
                return report(status, trial.status, .wouldFail, trial.state.failureReason?.rawValue)
            }
            return commitRow(snapshot, Commit(event: begin, beginsNextTransfer: beginsNextTransfer), context, report)
        }
        let call: AppleCall
        switch started.effects.first {
        case .requestTransferIdentifier(let sub): call = .transferSub(forSub: sub)
        case .exchangeTransferIdentifier(let transferSub): call = .migrate(transferSub: transferSub)
        default: return report(status, status, .skipped, "nothing-to-do")
        }
        if context.dryRun {
            return report(status, plan.step == .prepare ? .transferPrepared : .transferred, .wouldRun)
        }

        switch await callApple(call, context) {
        case .obtained(let event, let isPrivateEmail):
            return commitRow(
                snapshot,
                Commit(event: event, isPrivateEmail: isPrivateEmail, beginsNextTransfer: beginsNextTransfer),
                context,
                report
            )
        case .refused(let reason):
            return commitRow(
                snapshot,
                Commit(event: .stepFailed(reason: reason), beginsNextTransfer: beginsNextTransfer),
                context,
                report
            )
        case .configuration(let error):
            context.control.requestStop(
                .init(
                    .configuration,
                    "Apple refused our client credentials (\(error.code)): \(error.message); every row would fail alike, so the batch stopped. Check the team id, key id, private key and client id, then re-run"
                )
            )
            return report(status, status, .stopped, Self.reasonName(error.code))
        case .unavailable:
            return report(status, status, .unavailable, "apple-unavailable")
        case .interrupted:
            return report(status, status, .stopped, "interrupted")
        }
    }

    private struct Triage {
        var outcome: TransferRowReport.Outcome
        var reason: String?
    }

    /// Whether this step concerns the account at all; nil when it does.
    ///
    /// Skip reasons: `not-migratable` (revoked or deleted), `other-team` (prepare: the link already
    /// belongs to another team), `prepared` (prepare: it has its transfer identifier and failed at
    /// the exchange), `in-recipient-team` (complete: linked with the recipient team's id, nothing to
    /// migrate), `stranded` (the transfer that brought the app to the team that now moves it on never
    /// migrated the account: it still has an earlier team's id, which no later transfer can move),
    /// `earlier-window-open` (prepare, decided by the machine: the account's finished transfer is
    /// still in its window), `earlier-transfer-incomplete` (prepare: left behind by the transfer to
    /// this team while its recorded window is still open, so this team's `complete` can still
    /// migrate it; `stranded` once the window has closed). Conflict: `other-target-team` (prepare:
    /// prepared for a different target).
    ///
    /// `complete` reports an account an earlier transfer migrated to another team than this one
    /// `not-prepared` (`never-prepared`): that team has yet to prepare it for this transfer.
    ///
    /// `prepare` lets a finished transfer through (nil) when it begins a later one: the account was
    /// migrated to this deployment's team, is linked with that team's id, and is now prepared for
    /// another team (docs/apple-protocol.md §3.2, "A later transfer").
    private func triage(_ snapshot: Snapshot, _ context: BatchContext) -> Triage? {
        let plan = context.plan
        let state = snapshot.machine.state
        let recordedTarget = snapshot.record?.targetTeamID ?? ""
        switch state {
        case .revoked, .deleted:
            return Triage(outcome: .skipped, reason: "not-migratable")
        case .transferred:
            if plan.step == .complete && snapshot.link.teamID != configuration.teamID {
                // Migrated by an earlier transfer, to a team that has not prepared it for this one.
                return Triage(outcome: .notPrepared, reason: "never-prepared")
            }
            guard plan.step == .prepare, recordedTarget != plan.targetTeamID else {
                return Triage(outcome: .alreadyDone)
            }
            guard snapshot.link.status == .linked, snapshot.link.teamID == configuration.teamID,
                recordedTarget == configuration.teamID
            else {
                return Triage(outcome: .skipped, reason: "other-team")
            }
            return nil
        case .linked, .transferPrepared, .transferFailed:
            break
        }
        guard snapshot.link.status == .linked else { return Triage(outcome: .skipped, reason: "not-migratable") }
        // Prepared, or failed at the exchange: either way the transfer identifier is stored.
        let hasIdentifier = state.transferSub != nil
        switch plan.step {
        case .prepare:
            // Left behind by the transfer to this team: still the sender's id, which only the
            // sender could have asked about. While that transfer's recorded window is open this
            // team can still complete it; once it has closed, nothing can.
            if snapshot.link.teamID != configuration.teamID && recordedTarget == configuration.teamID {
                if let end = snapshot.record?.windowEndsAt ?? context.arrivalWindowEndsAt, context.clock() < end {
                    return Triage(outcome: .skipped, reason: "earlier-transfer-incomplete")
                }
                return Triage(outcome: .skipped, reason: "stranded")
            }
            guard hasIdentifier else {
                return snapshot.link.teamID == configuration.teamID
                    ? nil : Triage(outcome: .skipped, reason: "other-team")
            }
            if !recordedTarget.isEmpty && recordedTarget != plan.targetTeamID {
                return Triage(outcome: .conflict, reason: "other-target-team")
            }
            return state.status == .transferPrepared
                ? Triage(outcome: .alreadyDone) : Triage(outcome: .skipped, reason: "prepared")
        case .complete:
            // Prepared for another transfer's team (one that has since moved the app on, or while
            // records for this team exist): left behind by that transfer, whatever its state.
            // Home again when the app came back to its team.
            if !recordedTarget.isEmpty && recordedTarget != configuration.teamID
                && context.otherTransferTargets.contains(recordedTarget)
            {
                return snapshot.link.teamID == configuration.teamID
                    ? Triage(outcome: .skipped, reason: "in-recipient-team")
                    : Triage(outcome: .skipped, reason: "stranded")
            }
            guard hasIdentifier else {
                if snapshot.link.teamID == configuration.teamID {
                    return Triage(outcome: .skipped, reason: "in-recipient-team")
                }
                return Triage(outcome: .notPrepared, reason: state.failureReason?.rawValue ?? "never-prepared")
            }
            if !recordedTarget.isEmpty && recordedTarget != configuration.teamID {
                context.control.requestStop(
                    .init(
                        .configuration,
                        "transfer identifiers were prepared for team \(recordedTarget), but this deployment is configured as team \(configuration.teamID); completing needs the recipient team's credentials"
                    )
                )
                return Triage(outcome: .stopped, reason: "other-target-team")
            }
            return nil
        }
    }

    /// Commits a row's outcome and reports it. The transition is decided, on the row's own thread,
    /// from the state its page read, and written with the rows that wait with it (`writeTogether`),
    /// guarded by the versions that state had. An outcome that state does not make a write of (a
    /// replay, a refusal, a link re-keyed) is judged against what is stored now, as `commit` does.
    ///
    /// Conflict reasons: `sub-conflict` (the new `sub` is another account's),
    /// `ids-held` (another account's live transfer record holds the old `sub` or the `transfer_sub`
    /// this record needs; `heldBy` names it), `transfer-identifier-mismatch`,
    /// `migrated-to-other-id`, `link-changed`.
    private func commitRow(
        _ snapshot: Snapshot,
        _ commit: Commit,
        _ context: BatchContext,
        _ report: (TransferStatus, TransferStatus, TransferRowReport.Outcome, String?) -> TransferRowReport
    ) -> TransferRowReport {
        let accountID = snapshot.link.accountID
        let status = snapshot.machine.status
        var commit = commit
        commit.isStepOutcome = true
        commit.targetTeamID = context.plan.targetTeamID
        commit.windowEndsAt = context.plan.windowEndsAt
        commit.detail["source"] = "batch-\(context.plan.step.rawValue)"
        commit.detail["clientId"] = context.plan.clientID
        if let target = context.plan.targetTeamID { commit.detail["targetTeam"] = target }
        let committed: (from: TransferStatus, result: CommitResult)
        let now = context.clock()
        do {
            if case .write(let write) = plan(snapshot, commit, now: now) {
                committed = try context.commits.submit(write).get()
            } else {
                committed = try self.commit(accountID: accountID, commit, now: now)
            }
        } catch {
            let outcome: TransferRowReport.Outcome = error.code == .conflict ? .conflict : .error
            return report(status, status, outcome, error.code == .conflict ? "link-changed" : error.code.name)
        }
        let from = committed.from
        switch committed.result {
        case .applied(_, let state):
            if let reason = state.failureReason {
                return report(from, state.status, .failed, reason.rawValue)
            }
            return report(from, state.status, .succeeded, nil)
        case .replay(let state):
            return report(from, state.status, .alreadyDone, nil)
        case .refused(let error, let state):
            if error.code == .deadlineNotReached {
                // Judged again after a lost race: the finished transfer stored now is still in its
                // window (its record was rewritten since the page was read).
                var row = report(from, state.status, .skipped, "earlier-window-open")
                row.retryAfter = try? store.read { tx in try tx.transferRecord(accountID: accountID) }?.earlierWindowEnd
                return row
            }
            if error.code == .conflict {
                if case .transferIdentifierObtained = commit.event {
                    return report(from, state.status, .conflict, "transfer-identifier-mismatch")
                }
                return report(from, state.status, .conflict, "migrated-to-other-id")
            }
            // Another request moved the account past this step meanwhile (a sign-in, another batch,
            // a revocation).
            return state.status.isTerminal
                ? report(from, state.status, .skipped, "not-migratable")
                : report(from, state.status, .alreadyDone, nil)
        case .subConflict(let state):
            return report(from, state.status, .conflict, "sub-conflict")
        case .idsHeld(let state, let heldBy):
            var row = report(from, state.status, .conflict, "ids-held")
            row.heldBy = heldBy
            return row
        }
    }

    /// Writes rows' planned transitions in one transaction, so a batch pays for one commit per
    /// group instead of one per row. Each write is still guarded by the versions it was decided
    /// from. If the transaction fails (an account changed since its page was read, a `sub` already
    /// linked, a busy store), nothing of it is kept and its rows are committed one by one against
    /// what is stored, as `commit` does for a lone row, so each row's outcome is its own.
    func writeTogether(_ writes: [PlannedWrite]) -> [RowCommitResult] {
        do {
            try store.write { tx in
                for write in writes { try write.perform(in: tx) }
            }
            return writes.map { .success($0.result) }
        } catch {
            return writes.map { write in
                Result { () throws(TransferFailure) in
                    try commit(accountID: write.accountID, write.commit, now: write.now)
                }
            }
        }
    }

    // MARK: Apple

    /// The `/auth/usermigrationinfo` call a `begin…` event handed out.
    enum AppleCall {
        case transferSub(forSub: String)
        case migrate(transferSub: String)
    }

    enum AppleAnswer {
        case obtained(TransferEvent, isPrivateEmail: Bool?)
        /// A 4xx for this user.
        case refused(TransferFailureReason)
        /// Our credentials were refused: the batch stops.
        case configuration(AppleEndpointError)
        case unavailable(AppleEndpointError)
        case interrupted
    }

    /// Makes the effect's call with the batch's team token. `invalid_grant` means the token was
    /// consumed or expired: fetched again once, then counted against the user.
    private func callApple(_ call: AppleCall, _ context: BatchContext) async -> AppleAnswer {
        let apple = self.apple
        let plan = context.plan
        var refetched = false
        while true {
            if Task.isCancelled { return .interrupted }
            let token: (token: String, generation: Int)
            do {
                if let cached = context.tokens.cachedToken() {
                    token = cached
                } else {
                    token = try await context.tokens.token()
                }
            } catch {
                return error.code == .unavailable ? .unavailable(error) : .configuration(error)
            }
            do throws(AppleEndpointError) {
                switch call {
                case .transferSub(let sub):
                    let transferSub = try await context.retry.run { () async throws(AppleEndpointError) -> String in
                        try await apple.transferSub(
                            forSub: sub,
                            target: plan.targetTeamID ?? "",
                            clientID: plan.clientID,
                            accessToken: token.token
                        )
                    }
                    guard !transferSub.isEmpty else { throw Self.malformedAnswer }
                    return .obtained(.transferIdentifierObtained(transferSub: transferSub), isPrivateEmail: nil)
                case .migrate(let transferSub):
                    let user = try await context.retry.run { () async throws(AppleEndpointError) -> AppleMigratedUser in
                        try await apple.migrate(
                            transferSub: transferSub,
                            clientID: plan.clientID,
                            accessToken: token.token
                        )
                    }
                    guard !user.sub.isEmpty, user.email?.isEmpty != true else { throw Self.malformedAnswer }
                    // Apple returns an address only for users who hid theirs: a relay address.
                    return .obtained(
                        .newSubObtained(sub: user.sub, email: user.email),
                        isPrivateEmail: user.email == nil ? nil : (user.isPrivateEmail ?? true)
                    )
                }
            } catch {
                switch error.code {
                case .unavailable:
                    return Task.isCancelled ? .interrupted : .unavailable(error)
                case .invalidClient:
                    return .configuration(error)
                case .invalidGrant where !refetched:
                    await context.tokens.invalidate(generation: token.generation)
                    refetched = true
                default:
                    return .refused(TransferFailureReason(appleError: error.code.rawValue))
                }
            }
        }
    }

    static let malformedAnswer = AppleEndpointError(
        code: .unavailable,
        httpStatus: 200,
        message: "Apple's migration answer is missing its identifier"
    )

    /// Apple's error code as a report reason (`invalid_client` → `invalid-client`).
    static func reasonName(_ code: AppleEndpointError.Code) -> String {
        code.rawValue.replacingOccurrences(of: "_", with: "-")
    }
}
