import Foundation

/// Drives ``TransferStateMachine`` for every Apple-linked account when the app moves between
/// developer teams (docs/architecture.md §6, docs/apple-protocol.md §3): the sender team's `prepare` batch, the recipient team's
/// `complete` batch, sign-ins that carry `transfer_sub`, credential-state answers, and Apple's
/// server-to-server notifications.
///
/// Each account's transition is persisted with its audit row in one transaction guarded by the
/// transfer record's `version` (and the Apple link's, when the link changes), so a batch, a second
/// batch and a sign-in racing for one account can never both win. Apple is called outside
/// transactions; a commit that finds the account changed meanwhile re-applies Apple's answer to
/// what is now stored. A record is created the first time an account is touched, starting from
/// `TransferStateMachine(linkedTo: link.sub)`.
public final class TransferService: Sendable {
    let store: any UpgradeStore
    let apple: any AppleUserMigrating
    let configuration: TransferServiceConfiguration

    public init(store: any UpgradeStore, apple: any AppleUserMigrating, configuration: TransferServiceConfiguration) {
        self.store = store
        self.apple = apple
        self.configuration = configuration
    }

    // MARK: Machine persistence

    static func encode(_ machine: TransferStateMachine) -> String {
        // Persisted holds strings and integers only; encoding cannot fail.
        let data = (try? machineEncoder.encode(machine.state.persisted)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private static let machineDecoder = JSONDecoder()

    /// One for every row: an encoder's options are fixed once made, and each encode is its own.
    private static let machineEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func restore(_ record: TransferRecord) throws(TransferFailure) -> TransferStateMachine {
        do {
            let persisted = try machineDecoder.decode(TransferState.Persisted.self, from: Data(record.machine.utf8))
            return TransferStateMachine(state: try TransferState(persisted: persisted))
        } catch {
            throw TransferFailure(.internalError, "the stored transfer of account \(record.accountID) cannot be read")
        }
    }

    /// One account's Apple link and transfer state, read together.
    struct Snapshot: Sendable {
        var link: AppleLinkRecord
        var record: TransferRecord?
        var machine: TransferStateMachine
    }

    func snapshot(accountID: String) throws(TransferFailure) -> Snapshot? {
        let read: (AppleLinkRecord?, TransferRecord?)
        do {
            read = try store.read { tx in
                (try tx.appleLink(accountID: accountID), try tx.transferRecord(accountID: accountID))
            }
        } catch {
            throw Self.storageFailure(error)
        }
        guard let link = read.0 else { return nil }
        let machine = try read.1.map(Self.restore) ?? TransferStateMachine(linkedTo: link.sub)
        return Snapshot(link: link, record: read.1, machine: machine)
    }

    static func storageFailure(_ error: any Error) -> TransferFailure {
        if let failure = error as? TransferFailure { return failure }
        if let storage = error as? StorageError, storage.code == .unavailable {
            return TransferFailure(
                .unavailable,
                "the database cannot be reached; nothing changed, retry shortly",
                cause: storage.description
            )
        }
        return TransferFailure(
            .internalError,
            "the store is not available; nothing changed, retry later",
            cause: UpgradeService.cause(of: error)
        )
    }

    // MARK: Committing one transition

    /// An outcome to record for one account, with what the effects need besides the event.
    struct Commit {
        var event: TransferEvent
        /// `is_private_email` for an `updateEmail` effect.
        var isPrivateEmail: Bool? = nil
        /// The recipient team, recorded by the sender's steps.
        var targetTeamID: String? = nil
        var windowEndsAt: Int64? = nil
        /// The event is an answer to a step (Apple's, or the window closing): counted in `attempts`.
        var isStepOutcome = false
        /// The event is the first step of a later transfer: an account whose finished transfer it
        /// finds is first taken through `beginNextTransfer`, and its record retired in the same
        /// transaction (docs/apple-protocol.md §3.2, "A later transfer").
        var beginsNextTransfer = false
        /// Non-secret facts for the audit row: where the event came from, and the like.
        var detail: [String: String] = [:]
    }

    enum CommitResult {
        case applied(TransferTransition, TransferState)
        /// The outcome was already recorded; nothing written.
        case replay(TransferState)
        /// The machine refused the event in the stored state; nothing written.
        case refused(TransitionError, TransferState)
        /// The new `sub` is already linked to another account; nothing merged, the refusal audited.
        case subConflict(TransferState)
        /// The record this step would write needs an Apple id (the old `sub` or the
        /// `transfer_sub`) that another account's live transfer record still holds: the same Apple
        /// user linked to two accounts across transfers. Nothing written, the refusal audited,
        /// `heldBy` the other account (docs/apple-protocol.md §3.2, "A later transfer").
        case idsHeld(TransferState, heldBy: String)
    }

    /// Applies `commit.event` to the account's stored state and persists the transition, the
    /// effects on its Apple link and an audit row in one transaction. A lost race (the record or the
    /// link changed since it was read) re-reads and re-applies, so the answer is always judged
    /// against what is stored. Returns the status before the event too.
    func commit(
        accountID: String,
        _ commit: Commit,
        now: Int64
    ) throws(TransferFailure) -> (from: TransferStatus, result: CommitResult) {
        var linkMismatch = false
        for _ in 0..<Self.maxCommitAttempts {
            guard let snapshot = try snapshot(accountID: accountID) else {
                throw TransferFailure(.notFound, "account \(accountID) has no Apple link")
            }
            let write: PlannedWrite
            switch plan(snapshot, commit, now: now) {
            case .settled(let from, let result): return (from, result)
            case .linkChanged:
                // The link no longer has the id the machine says the account had: an upgrade or an
                // operator re-keyed it. Re-read, so the decision is made against the current link.
                linkMismatch = true
                continue
            case .write(let planned): write = planned
            }
            do {
                try store.write { tx in try write.perform(in: tx) }
                return write.result
            } catch let error as StorageError where error.code == .versionConflict {
                continue  // another request changed the record, or created it first
            } catch let error as StorageError where error.code == .uniqueViolation {
                guard let refused = try refusal(error, of: write, commit: commit, now: now) else {
                    continue  // the holder's record went meanwhile (retired or deleted): try again
                }
                return refused
            } catch {
                throw Self.storageFailure(error)
            }
        }
        if linkMismatch {
            throw TransferFailure(
                .conflict,
                "account \(accountID): its Apple link no longer has the id its transfer record holds; inspect it with 'accounts show'"
            )
        }
        throw TransferFailure(
            .internalError,
            "account \(accountID) kept changing while its transfer was being recorded; retry"
        )
    }

    /// The answer to a `write` the store refused with a unique violation: `subConflict` when the
    /// Apple link's `sub` is another account's, `idsHeld` when another account's live transfer
    /// record holds the old `sub` or `transfer_sub` (each audited); nil when that record went
    /// meanwhile (the caller tries again). Any other constraint is an internal error.
    private func refusal(
        _ error: StorageError,
        of write: PlannedWrite,
        commit: Commit,
        now: Int64
    ) throws(TransferFailure) -> (from: TransferStatus, result: CommitResult)? {
        let accountID = write.accountID
        switch error.constraint {
        case .appleLinksSub?:
            try auditRefusal(accountID: accountID, status: write.from, commit: commit, now: now)
            return (write.from, .subConflict(write.snapshot.machine.state))
        case .transferRecordsOldSub?, .transferRecordsTransferSub?:
            let byTransferSub = error.constraint == .transferRecordsTransferSub
            guard let held = try holder(of: write.record, byTransferSub: byTransferSub) else { return nil }
            try auditRefusal(accountID: accountID, status: write.from, commit: commit, heldBy: held, now: now)
            return (write.from, .idsHeld(write.snapshot.machine.state, heldBy: held))
        default:
            throw TransferFailure(
                .internalError,
                "account \(accountID): the store refused the transfer record (\(error.constraint?.description ?? "unique"))"
            )
        }
    }

    /// What `commit.event` does to one account's snapshot.
    enum Plan {
        /// Nothing to write: a replay, or an event the stored state refuses.
        case settled(from: TransferStatus, CommitResult)
        /// The link no longer has the id the machine says the account had.
        case linkChanged
        case write(PlannedWrite)
    }

    /// A transition's writes, guarded by the versions they were decided from: the transfer record,
    /// the Apple link when it changes, the audit row and the webhook event.
    struct PlannedWrite {
        var snapshot: Snapshot
        var record: TransferRecord
        var link: AppleLinkRecord
        /// The audit row of retiring the stored record first, when the write begins a later transfer.
        var retirement: AuditEvent?
        var audit: AuditEvent
        /// The webhook event the transition tells of, built with its payload before the write.
        var webhook: WebhookEventRecord?
        /// What was committed, to commit again against what is stored if this write cannot be.
        var commit: Commit
        var transition: TransferTransition
        var state: TransferState
        var now: Int64

        var accountID: String { snapshot.link.accountID }
        var from: TransferStatus { snapshot.machine.status }
        var result: (from: TransferStatus, result: CommitResult) { (from, .applied(transition, state)) }

        /// Inside the caller's write transaction; a version conflict or a unique violation throws.
        func perform(in tx: any StoreTransaction) throws(StorageError) {
            if let retirement, let retired = snapshot.record {
                try tx.retireTransferRecord(accountID: accountID, expectedVersion: retired.version, retiredAt: now)
                try tx.appendAudit(retirement)
                try tx.upsertTransferRecord(record, expectedVersion: nil)
            } else {
                try tx.upsertTransferRecord(record, expectedVersion: snapshot.record?.version)
            }
            if link != snapshot.link {
                try tx.updateAppleLink(link, expectedVersion: snapshot.link.version)
            }
            try tx.appendAudit(audit)
            if let webhook { try tx.insertWebhookEvent(webhook) }
        }
    }

    /// Decides, without touching the store, what `commit` does to the account as `snapshot` has it,
    /// and builds the rows to write (the webhook event with its id and payload too).
    func plan(_ snapshot: Snapshot, _ commit: Commit, now: Int64) -> Plan {
        let from = snapshot.machine.status
        var machine = snapshot.machine
        var retirement: AuditEvent?
        if commit.beginsNextTransfer, case .transferred = machine.state, let finished = snapshot.record {
            let retire: TransferTransition
            do {
                retire = try machine.apply(finished.beginNextTransfer, now: now)
            } catch {
                return .settled(from: from, .refused(error, snapshot.machine.state))
            }
            var detail = commit.detail
            detail["retiredTargetTeam"] = finished.targetTeamID
            retirement = AuditEvent(
                at: now,
                accountID: snapshot.link.accountID,
                upgradeID: nil,
                event: "transfer.\(retire.event)",
                fromStatus: retire.from.rawValue,
                toStatus: retire.to.rawValue,
                detail: detail
            )
        }
        let transition: TransferTransition
        do {
            transition = try machine.apply(commit.event, now: now)
        } catch {
            return .settled(from: from, .refused(error, snapshot.machine.state))
        }
        guard transition.stateChanged else { return .settled(from: from, .replay(machine.state)) }

        let record = nextRecord(snapshot, machine, commit, fresh: retirement != nil, now: now)
        let link: AppleLinkRecord
        do {
            link = try nextLink(snapshot.link, machine, transition, commit, now: now)
        } catch {
            return .linkChanged
        }
        var detail = commit.detail
        if let reason = machine.state.failureReason { detail["reason"] = reason.rawValue }
        if snapshot.link.refreshTokenCiphertext != nil && link.refreshTokenCiphertext == nil {
            detail["refreshTokenDeleted"] = "true"
        }
        if snapshot.link.email != link.email { detail["emailUpdated"] = "true" }
        let audit = AuditEvent(
            at: now,
            accountID: snapshot.link.accountID,
            upgradeID: nil,
            event: "transfer.\(transition.event)",
            fromStatus: transition.from.rawValue,
            toStatus: transition.to.rawValue,
            detail: detail
        )
        return .write(
            PlannedWrite(
                snapshot: snapshot,
                record: record,
                link: link,
                retirement: retirement,
                audit: audit,
                webhook: Self.webhookEvent(
                    transition,
                    event: commit.event,
                    accountID: snapshot.link.accountID,
                    before: snapshot.link,
                    after: link,
                    now: now
                ),
                commit: commit,
                transition: transition,
                state: machine.state,
                now: now
            )
        )
    }

    /// Enough for a batch row, a sign-in and a notification to all change one account at once.
    static let maxCommitAttempts = 5

    private func nextRecord(
        _ snapshot: Snapshot,
        _ machine: TransferStateMachine,
        _ commit: Commit,
        fresh: Bool,
        now: Int64
    ) -> TransferRecord {
        var record =
            (fresh ? nil : snapshot.record)
            ?? TransferRecord(
                accountID: snapshot.link.accountID,
                status: "",
                machine: "",
                oldSub: snapshot.link.sub,
                transferSub: nil,
                newSub: nil,
                targetTeamID: "",
                failureReason: nil,
                attempts: 0,
                windowEndsAt: nil,
                updatedAt: now
            )
        let state = machine.state
        record.status = state.status.rawValue
        record.machine = Self.encode(machine)
        // The transfer identifier stays findable after the account leaves the states that carry it
        // (revoked after transfer), so a sign-in with it is recognised rather than unknown.
        record.transferSub = state.transferSub ?? record.transferSub
        record.newSub = state.previousSub != nil ? state.sub : nil
        record.failureReason = state.failureReason?.rawValue
        if let target = commit.targetTeamID { record.targetTeamID = target }
        if let windowEndsAt = commit.windowEndsAt { record.windowEndsAt = windowEndsAt }
        if commit.isStepOutcome { record.attempts += 1 }
        record.updatedAt = now
        return record
    }

    struct LinkChanged: Error {}

    /// The Apple link after the transition's effects: re-keyed to the recipient team's id (the
    /// sender team's refresh token dropped with the old id), the new relay address, and for an ended
    /// account the link ended too, its refresh token deleted (TN3194).
    private func nextLink(
        _ current: AppleLinkRecord,
        _ machine: TransferStateMachine,
        _ transition: TransferTransition,
        _ commit: Commit,
        now: Int64
    ) throws(LinkChanged) -> AppleLinkRecord {
        var link = current
        for effect in transition.effects {
            switch effect {
            case .relinkAppleAccount(let from, let to):
                guard link.sub == from else { throw LinkChanged() }
                link.sub = to
                link.teamID = configuration.teamID
                link.refreshTokenCiphertext = nil
                // Relay addresses are team-scoped (docs/apple-protocol.md §3): the sender team's stops reaching the
                // user. It is replaced below when the exchange or the token gives the new one, and
                // otherwise left unknown rather than kept wrong. A real address stays.
                if link.isPrivateEmail == true {
                    link.email = nil
                    link.isPrivateEmail = nil
                    link.emailForwardingEnabled = nil
                    link.emailForwardingAt = nil
                }
            case .updateEmail(let email):
                link.email = email
                link.isPrivateEmail = commit.isPrivateEmail
            case .requestTransferIdentifier, .exchangeTransferIdentifier:
                break  // performed by the batch before it commits the answer
            case .retireFinishedTransfer:
                break  // the record's move, performed with the write
            }
        }
        switch machine.state {
        case .revoked:
            link.status = .revoked
            link.refreshTokenCiphertext = nil
        case .deleted:
            // Apple disables relay forwarding when the account is deleted (docs/apple-protocol.md §4).
            link.status = .deleted
            link.refreshTokenCiphertext = nil
            link.emailForwardingEnabled = false
        case .linked, .transferPrepared, .transferred, .transferFailed:
            guard link.sub == machine.state.sub else { throw LinkChanged() }
        }
        if link != current { link.updatedAt = now }
        return link
    }

    /// The other account whose live transfer record holds the id `record` needs: its old `sub`, or
    /// with `byTransferSub` its `transfer_sub`; nil when no other account holds it any more.
    private func holder(of record: TransferRecord, byTransferSub: Bool) throws(TransferFailure) -> String? {
        let found: TransferRecord?
        do {
            if byTransferSub {
                guard let transferSub = record.transferSub else { return nil }
                found = try store.read { tx in try tx.transferRecord(transferSub: transferSub) }
            } else {
                found = try store.read { tx in try tx.transferRecord(oldSub: record.oldSub) }
            }
        } catch {
            throw Self.storageFailure(error)
        }
        guard let found, found.accountID != record.accountID else { return nil }
        return found.accountID
    }

    /// Audits a step refused for an id another account holds, in the audit trail of the account
    /// that was to be migrated (its state is unchanged): the other's link `sub` (`sub-conflict`),
    /// or, with `heldBy`, the ids of its live transfer record (`ids-held`). Nothing else is written.
    private func auditRefusal(
        accountID: String,
        status: TransferStatus,
        commit: Commit,
        heldBy: String? = nil,
        now: Int64
    ) throws(TransferFailure) {
        var detail = commit.detail
        detail["reason"] = heldBy == nil ? "sub-conflict" : "ids-held"
        if let heldBy { detail["heldBy"] = heldBy }
        let audit = AuditEvent(
            at: now,
            accountID: accountID,
            upgradeID: nil,
            event: heldBy == nil ? "transfer.subConflict" : "transfer.idsHeld",
            fromStatus: status.rawValue,
            toStatus: status.rawValue,
            detail: detail
        )
        do {
            try store.write { tx in try tx.appendAudit(audit) }
        } catch {
            throw Self.storageFailure(error)
        }
    }
}

extension TransferRecord {
    /// The event that lets a later transfer retire this finished record (docs/apple-protocol.md §3.2,
    /// "A later transfer"). A `transferred` record is written once, when the account is migrated, so
    /// its `updatedAt` is the migration time that bounds the earlier window.
    var beginNextTransfer: TransferEvent { .beginNextTransfer(windowEndsAt: windowEndsAt, migratedAt: updatedAt) }

    /// When the earlier window closes, as the machine reckons it for ``beginNextTransfer``.
    var earlierWindowEnd: Int64 { TransferStateMachine.earlierWindowEnd(recorded: windowEndsAt, migratedAt: updatedAt) }
}
