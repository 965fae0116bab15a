extension TransferService {
    /// Apple's server-to-server event types (docs/apple-protocol.md §4). The deletion event is spelled both ways in
    /// Apple's documentation, so both are accepted.
    public enum NotificationType: String, Sendable, CaseIterable {
        case consentRevoked = "consent-revoked"
        case accountDelete = "account-delete"
        case accountDeleted = "account-deleted"
        case emailEnabled = "email-enabled"
        case emailDisabled = "email-disabled"
    }

    /// Applies one verified server-to-server event to the account linked to `sub` (docs/apple-protocol.md §4):
    ///
    /// - `consent-revoked`: the machine's `consentRevoked`; the link ends as `revoked` and its stored
    ///   refresh token is deleted (TN3194: credentials are invalid; delete stored tokens).
    /// - `account-delete` / `account-deleted`: the machine's `accountDeleted`; the link ends as
    ///   `deleted`, its refresh token deleted, and relay forwarding recorded as off (Apple disables
    ///   it). The account itself is kept: deleting user data is a support decision, not an event.
    /// - `email-enabled` / `email-disabled`: the user turned Hide My Email forwarding on or off. The
    ///   link records forwarding on or off, the event's time, and the relay address the event names;
    ///   the transfer state is untouched (forwarding says nothing about the identity link). A deleted
    ///   account's forwarding stays off.
    ///
    /// Idempotent: a redelivered event changes nothing (the machine answers it as a replay, and email
    /// facts already equal are not rewritten); an email event older than the one recorded is
    /// ignored. An id no account is linked to, and an undocumented type, are acknowledged without
    /// effect. `eventTime` is the event's `event_time`, in seconds or milliseconds since the epoch
    /// (Apple's examples disagree); `now` when absent.
    public func handleNotification(
        type: String,
        sub: String,
        email: String?,
        isPrivateEmail: Bool?,
        eventTime: Int64? = nil,
        now: Int64
    ) throws(TransferFailure) -> TransferNotificationResult {
        guard let kind = NotificationType(rawValue: type) else {
            return TransferNotificationResult(outcome: .unknownEventType)
        }
        guard !sub.isEmpty else { return TransferNotificationResult(outcome: .unknownUser) }
        let accountID: String?
        do {
            accountID = try store.read { tx in
                if let link = try tx.appleLink(sub: sub) { return link.accountID }
                // The sender team's id after a transfer still names the account, an earlier one's too.
                if let record = try tx.transferRecord(oldSub: sub) { return record.accountID }
                return try tx.retiredTransferRecord(oldSub: sub)?.record.accountID
            }
        } catch {
            throw Self.storageFailure(error)
        }
        guard let accountID else { return TransferNotificationResult(outcome: .unknownUser) }

        switch kind {
        case .consentRevoked, .accountDelete, .accountDeleted:
            let commit = Commit(
                event: kind == .consentRevoked ? .consentRevoked : .accountDeleted,
                detail: ["source": "notification", "notification": type]
            )
            let (_, result) = try self.commit(accountID: accountID, commit, now: now)
            switch result {
            case .applied(_, let state):
                return TransferNotificationResult(outcome: .changed, accountID: accountID, status: state.status)
            case .replay(let state), .refused(_, let state), .subConflict(let state), .idsHeld(let state, _):
                return TransferNotificationResult(outcome: .unchanged, accountID: accountID, status: state.status)
            }
        case .emailEnabled, .emailDisabled:
            let changed = try recordEmailForwarding(
                accountID: accountID,
                sub: sub,
                enabled: kind == .emailEnabled,
                email: email,
                isPrivateEmail: isPrivateEmail,
                eventTime: eventTime.map(Self.seconds) ?? now,
                type: type,
                now: now
            )
            return TransferNotificationResult(outcome: changed ? .changed : .unchanged, accountID: accountID)
        }
    }

    /// `event_time` in seconds: a value past year 5000 in seconds is a millisecond count.
    static func seconds(_ eventTime: Int64) -> Int64 {
        eventTime > 100_000_000_000 ? eventTime / 1000 : eventTime
    }

    /// Records Hide My Email forwarding on the link, guarded by its version; returns whether
    /// anything changed.
    private func recordEmailForwarding(
        accountID: String,
        sub: String,
        enabled: Bool,
        email: String?,
        isPrivateEmail: Bool?,
        eventTime: Int64,
        type: String,
        now: Int64
    ) throws(TransferFailure) -> Bool {
        for _ in 0..<Self.maxCommitAttempts {
            let current: AppleLinkRecord?
            do {
                current = try store.read { try $0.appleLink(accountID: accountID) }
            } catch {
                throw Self.storageFailure(error)
            }
            // Forwarding is about the relay address of the id the account is reached by now; an
            // event about the sender team's old id describes an address this account no longer uses.
            guard let current, current.sub == sub else { return false }
            // Apple turns forwarding off for a deleted account for good; a late event cannot revive it.
            guard current.status != .deleted else { return false }
            if let recordedAt = current.emailForwardingAt, recordedAt > eventTime { return false }
            var link = current
            link.emailForwardingEnabled = enabled
            link.emailForwardingAt = max(eventTime, current.emailForwardingAt ?? eventTime)
            if let email, !email.isEmpty {
                link.email = email
                link.isPrivateEmail = isPrivateEmail ?? true
            }
            let factsChanged =
                link.emailForwardingEnabled != current.emailForwardingEnabled || link.email != current.email
                || link.isPrivateEmail != current.isPrivateEmail
            guard factsChanged else { return false }
            link.updatedAt = now
            var detail = ["source": "notification", "notification": type, "forwarding": enabled ? "on" : "off"]
            if link.email != current.email { detail["emailUpdated"] = "true" }
            let audit = AuditEvent(
                at: now,
                accountID: accountID,
                upgradeID: nil,
                event: enabled ? "apple.emailForwardingEnabled" : "apple.emailForwardingDisabled",
                detail: detail
            )
            do {
                try store.write { tx in
                    try tx.updateAppleLink(link, expectedVersion: current.version)
                    try tx.appendAudit(audit)
                    try WebhookOutbox.enqueue(
                        .appleEmailChanged,
                        accountID: accountID,
                        data: [
                            ("accountId", .string(accountID)), ("sub", .string(link.sub)),
                            ("email", link.email.map(JSONValue.string) ?? .null),
                            ("isPrivateEmail", link.isPrivateEmail.map(JSONValue.bool) ?? .null),
                            ("emailForwarding", .bool(enabled)),
                        ],
                        in: tx,
                        now: now
                    )
                }
                return true
            } catch let error as StorageError where error.code == .versionConflict {
                continue
            } catch {
                throw Self.storageFailure(error)
            }
        }
        throw TransferFailure(
            .internalError,
            "account \(accountID) kept changing while recording the email event; retry"
        )
    }
}
