/// Why an account's credentials changed: the `cause` in the audit rows of the flows the change ended.
public enum CredentialChangeCause: String, Sendable, Hashable, CaseIterable {
    /// A password change completed (`POST /v1/password-changes`, with or without its step-up).
    case passwordChanged = "password-changed"
    /// `accounts import --on-conflict update` wrote a password hash, a TOTP secret or recovery codes.
    case imported = "import-updated"
}

extension UpgradeService {
    /// Inside the transaction that changes an account's credentials: ends every flow the earlier
    /// credentials authorized (docs/architecture.md §4.4), so that nobody who knew them can finish one
    /// after the change. Open upgrades fail with `credentials-changed` (those past their deadline
    /// expire, a lapsed conversion fails as interrupted), open password changes fail with
    /// `credentials-changed` and forget their new password's hash, and the account's tickets are
    /// deleted, spent or not. Each ended flow gets its transition's audit row naming `cause`.
    ///
    /// `except` is the flow making the change (the completing password change). A
    /// conversion already claimed (`converting`) is left to its own commit, which checks that the
    /// password it claimed with is still the account's (`convertAccount`): whichever of the two
    /// transactions commits first decides.
    static func endFlowsAuthorizedByEarlierCredentials(
        accountID: String,
        cause: CredentialChangeCause,
        except: String? = nil,
        policy: UpgradePolicy,
        in tx: any StoreTransaction,
        now: Int64
    ) throws {
        let detail = ["cause": cause.rawValue]
        try endOpenUpgrades(of: accountID, except: except, with: .credentialsChanged, detail, policy, tx, now)
        try endOpenPasswordChanges(of: accountID, except: except, with: .credentialsChanged, detail, policy, tx, now)
        try tx.deleteUpgradeTickets(accountID: accountID)
    }

    /// Applies `event` to each open upgrade of the account but `except`, and persists it with
    /// `detail`: `deadlinePassed` instead to one already past its deadline; a conversion in progress
    /// runs to its end. What supersession (`superseded`) and a credential change
    /// (`credentialsChanged`) share.
    static func endOpenUpgrades(
        of accountID: String,
        except: String?,
        with event: UpgradeEvent,
        _ detail: [String: String],
        _ policy: UpgradePolicy,
        _ tx: any StoreTransaction,
        _ now: Int64
    ) throws {
        for record in try tx.openUpgradeSessions(accountID: accountID, limit: 1000) where record.id != except {
            var machine = try restore(record, policy: policy)
            let expired = machine.hasExpired(now: now)
            if !expired, machine.status == .converting { continue }
            let transition = try machine.apply(expired ? .deadlinePassed : event, now: now)
            _ = try persist(transition, of: machine, to: record, detail: detail, in: tx, now: now)
        }
    }

    /// `endOpenUpgrades` for the account's open password changes.
    static func endOpenPasswordChanges(
        of accountID: String,
        except: String?,
        with event: PasswordChangeEvent,
        _ detail: [String: String],
        _ policy: UpgradePolicy,
        _ tx: any StoreTransaction,
        _ now: Int64
    ) throws {
        for record in try tx.openPasswordChanges(accountID: accountID, limit: 1000) where record.id != except {
            var machine = try restore(record, policy: policy)
            let transition = try machine.apply(machine.hasExpired(now: now) ? .deadlinePassed : event, now: now)
            try persist(transition, of: machine, to: record, detail: detail, in: tx, now: now)
        }
    }

    /// Inside a write transaction: stores a password change's new state over `record` (guarded by its
    /// version) with the transition's audit row; an ended change forgets its new password's hash.
    static func persist(
        _ transition: PasswordChangeTransition,
        of machine: PasswordChangeStateMachine,
        to record: PasswordChangeRecord,
        detail: [String: String],
        in tx: any StoreTransaction,
        now: Int64
    ) throws {
        var next = record
        next.status = machine.status.rawValue
        next.machine = encode(machine)
        next.expiresAt = machine.deadline ?? record.expiresAt
        next.updatedAt = now
        if machine.status.isTerminal { next.newPasswordHash = nil }
        try tx.updatePasswordChange(next, expectedVersion: record.version)
        try tx.appendAudit(audit(transition, change: record, now: now, detail: detail))
    }
}
