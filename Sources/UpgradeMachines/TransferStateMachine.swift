/// The team-transfer migration of one Apple-linked account (docs/architecture.md §6, docs/apple-protocol.md §3).
///
/// ```
/// linked(subA) --transferIdentifierObtained--> transferPrepared(transferSub)
/// transferPrepared --newSubObtained-----------> transferred(subB)   [relink, updateEmail]
/// transferPrepared --signedInWithTransferSub--> transferred(subB)   [relink, updateEmail]
/// linked / transferPrepared --stepFailed------> transferFailed(step, reason), retryable
/// transferFailed --the failed step succeeds---> transferPrepared / transferred
/// transferred --beginNextTransfer------------> linked(subB)        [retireFinishedTransfer]
/// any --consentRevoked / accountDeleted-------> revoked / deleted    (terminal)
/// ```
///
/// `beginNextTransfer` lets the team that received the app move it on (to a third team, or back):
/// only once the finished transfer's window has closed, and the driver records it only together
/// with the new transfer's first step (docs/apple-protocol.md §3.2, "A later transfer").
///
/// A step starts with a `begin…` event: the machine checks the 60-day window and returns the
/// Apple call to make, or records `transferFailed(window-closed)` instead. Repeating an outcome
/// already recorded is a replay; repeating it with different ids is a conflict.
public struct TransferStateMachine: Sendable, Hashable {
    /// How long after the transfer is accepted both teams may still generate and exchange
    /// transfer identifiers: 60 days (docs/apple-protocol.md §3.2).
    public static let windowLength: Int64 = 60 * 86_400

    public private(set) var state: TransferState

    /// Restores a machine from a stored state.
    public init(state: TransferState) {
        self.state = state
    }

    /// The machine of an account just linked to `sub` (e.g. by a completed upgrade).
    public init(linkedTo sub: String) {
        self.state = .linked(.init(sub: sub))
    }

    public var status: TransferStatus { state.status }

    /// What `getCredentialState` answers for `userID` given this account's transfer state.
    public func credentialState(for userID: String) -> AppleCredentialState {
        AppleCredentialState(userID: userID, link: state)
    }

    /// Applies `event` at `now`. Every (state, event) pair is a transition, a replay, or a thrown
    /// ``TransitionError`` (then nothing changed).
    public mutating func apply(_ event: TransferEvent, now: Int64) throws(TransitionError) -> TransferTransition {
        switch (state, event) {
        // Terminal: notifications are redelivered and both mean "not migratable", so either one
        // is acknowledged as a replay; nothing else is accepted.
        case (.revoked, .consentRevoked), (.revoked, .accountDeleted),
            (.deleted, .consentRevoked), (.deleted, .accountDeleted):
            return replay(event)
        case (.revoked, _), (.deleted, _):
            throw notAllowed(event)

        case (_, .consentRevoked):
            return move(to: .revoked(.init(sub: state.sub, previousSub: state.previousSub)), on: event)
        case (_, .accountDeleted):
            return move(to: .deleted(.init(sub: state.sub, previousSub: state.previousSub)), on: event)

        // Sender side.
        case (.linked(let linked), .beginPreparation(let windowEndsAt)):
            return beginPreparation(sub: linked.sub, failures: 0, windowEndsAt: windowEndsAt, now: now, on: event)
        case (.transferFailed(let failed), .beginPreparation(let windowEndsAt)) where failed.retryStep == .prepare:
            return beginPreparation(
                sub: failed.sub,
                failures: failed.failures,
                windowEndsAt: windowEndsAt,
                now: now,
                on: event
            )

        case (.linked(let linked), .transferIdentifierObtained(let transferSub)):
            return move(to: .transferPrepared(.init(sub: linked.sub, transferSub: transferSub)), on: event)
        case (.transferFailed(let failed), .transferIdentifierObtained(let transferSub))
        where failed.retryStep == .prepare:
            return move(to: .transferPrepared(.init(sub: failed.sub, transferSub: transferSub)), on: event)
        case (.transferPrepared(let prepared), .transferIdentifierObtained(let transferSub)):
            // Apple's transfer identifier is stable per user and recipient team, so a re-run that
            // gets another one was aimed at another team.
            guard transferSub == prepared.transferSub else {
                throw conflict(
                    event,
                    "a different transfer identifier is already stored; was another target team used?"
                )
            }
            return replay(event)

        case (.linked(let linked), .stepFailed(let reason)):
            return move(
                to: .transferFailed(.init(sub: linked.sub, retryStep: .prepare, reason: reason, failures: 1)),
                on: event
            )

        // A later transfer: the account starts over from the id the finished transfer gave it.
        case (.transferred(let transferred), .beginNextTransfer(let windowEndsAt, let migratedAt)):
            let closes = Self.earlierWindowEnd(recorded: windowEndsAt, migratedAt: migratedAt)
            guard now >= closes else {
                throw TransitionError(
                    code: .deadlineNotReached,
                    state: state.status.rawValue,
                    event: event.name,
                    message:
                        "the transfer that migrated this account is still in its 60-day window (until \(closes)); a later transfer may begin once it has closed"
                )
            }
            return move(to: .linked(.init(sub: transferred.sub)), on: event, effects: [.retireFinishedTransfer])

        // Recipient side.
        case (.transferPrepared(let prepared), .beginCompletion(let windowEndsAt)):
            return beginCompletion(
                sub: prepared.sub,
                transferSub: prepared.transferSub,
                failures: 0,
                windowEndsAt: windowEndsAt,
                now: now,
                on: event
            )
        case (.transferFailed(let failed), .beginCompletion(let windowEndsAt)):
            guard let transferSub = failed.transferSub else { throw notAllowed(event) }
            return beginCompletion(
                sub: failed.sub,
                transferSub: transferSub,
                failures: failed.failures,
                windowEndsAt: windowEndsAt,
                now: now,
                on: event
            )

        case (.transferPrepared(let prepared), .newSubObtained(let sub, let email)):
            return complete(from: prepared.sub, transferSub: prepared.transferSub, to: sub, email: email, on: event)
        case (.transferFailed(let failed), .newSubObtained(let sub, let email)):
            guard let transferSub = failed.transferSub else { throw notAllowed(event) }
            return complete(from: failed.sub, transferSub: transferSub, to: sub, email: email, on: event)
        case (.transferred(let transferred), .newSubObtained(let sub, _)):
            guard sub == transferred.sub else {
                throw conflict(event, "the account was already migrated to a different Apple id")
            }
            return replay(event)

        case (.transferPrepared(let prepared), .signedInWithTransferSub(let transferSub, let sub, let email)):
            try requireSameTransferSub(transferSub, prepared.transferSub, event)
            return complete(from: prepared.sub, transferSub: transferSub, to: sub, email: email, on: event)
        case (.transferFailed(let failed), .signedInWithTransferSub(let transferSub, let sub, let email)):
            guard let known = failed.transferSub else { throw notAllowed(event) }
            try requireSameTransferSub(transferSub, known, event)
            return complete(from: failed.sub, transferSub: transferSub, to: sub, email: email, on: event)
        case (.transferred(let transferred), .signedInWithTransferSub(let transferSub, let sub, _)):
            // Tokens carry `transfer_sub` for the whole window, so most of these are repeats.
            try requireSameTransferSub(transferSub, transferred.transferSub, event)
            guard sub == transferred.sub else {
                throw conflict(event, "the account was already migrated to a different Apple id")
            }
            return replay(event)

        case (.transferPrepared(let prepared), .stepFailed(let reason)):
            let failed = TransferState.Failed(
                sub: prepared.sub,
                retryStep: .complete(transferSub: prepared.transferSub),
                reason: reason,
                failures: 1
            )
            return move(to: .transferFailed(failed), on: event)
        case (.transferFailed(var failed), .stepFailed(let reason)):
            failed.reason = reason
            failed.failures += 1
            return move(to: .transferFailed(failed), on: event)

        default:
            throw notAllowed(event)
        }
    }

    /// When the window of a finished transfer closes, as far as can be known: the recorded end,
    /// but never later than ``windowLength`` after the account was migrated, since a migration
    /// happens only once the transfer was accepted (a later recorded end was a mistaken acceptance
    /// time). A transfer migrated by sign-in before any run recorded the window is bounded the same way.
    public static func earlierWindowEnd(recorded: Int64?, migratedAt: Int64) -> Int64 {
        let bound = migratedAt.adding(seconds: windowLength)
        guard let recorded else { return bound }
        return min(recorded, bound)
    }

    private mutating func beginPreparation(
        sub: String,
        failures: Int,
        windowEndsAt: Int64?,
        now: Int64,
        on event: TransferEvent
    ) -> TransferTransition {
        if let windowEndsAt, now >= windowEndsAt {
            let failed = TransferState.Failed(
                sub: sub,
                retryStep: .prepare,
                reason: .windowClosed,
                failures: failures + 1
            )
            return move(to: .transferFailed(failed), on: event)
        }
        return stay(on: event, effects: [.requestTransferIdentifier(sub: sub)])
    }

    private mutating func beginCompletion(
        sub: String,
        transferSub: String,
        failures: Int,
        windowEndsAt: Int64,
        now: Int64,
        on event: TransferEvent
    ) -> TransferTransition {
        guard now < windowEndsAt else {
            let failed = TransferState.Failed(
                sub: sub,
                retryStep: .complete(transferSub: transferSub),
                reason: .windowClosed,
                failures: failures + 1
            )
            return move(to: .transferFailed(failed), on: event)
        }
        return stay(on: event, effects: [.exchangeTransferIdentifier(transferSub: transferSub)])
    }

    private mutating func complete(
        from previousSub: String,
        transferSub: String,
        to sub: String,
        email: String?,
        on event: TransferEvent
    ) -> TransferTransition {
        var effects: [TransferEffect] = [.relinkAppleAccount(from: previousSub, to: sub)]
        if let email {
            effects.append(.updateEmail(email))
        }
        let transferred = TransferState.Transferred(sub: sub, previousSub: previousSub, transferSub: transferSub)
        return move(to: .transferred(transferred), on: event, effects: effects)
    }

    private func requireSameTransferSub(
        _ presented: String,
        _ stored: String,
        _ event: TransferEvent
    ) throws(TransitionError) {
        guard presented == stored else {
            throw conflict(event, "the token's transfer_sub is not the one stored for this account")
        }
    }

    private mutating func move(
        to next: TransferState,
        on event: TransferEvent,
        effects: [TransferEffect] = []
    ) -> TransferTransition {
        let from = state.status
        state = next
        return TransferTransition(
            from: from,
            to: next.status,
            event: event.name,
            effects: effects,
            stateChanged: true,
            isReplay: false
        )
    }

    private func stay(on event: TransferEvent, effects: [TransferEffect]) -> TransferTransition {
        TransferTransition(
            from: state.status,
            to: state.status,
            event: event.name,
            effects: effects,
            stateChanged: false,
            isReplay: false
        )
    }

    private func replay(_ event: TransferEvent) -> TransferTransition {
        TransferTransition(
            from: state.status,
            to: state.status,
            event: event.name,
            effects: [],
            stateChanged: false,
            isReplay: true
        )
    }

    private func notAllowed(_ event: TransferEvent) -> TransitionError {
        .notAllowed(state: state.status.rawValue, event: event.name)
    }

    private func conflict(_ event: TransferEvent, _ message: String) -> TransitionError {
        TransitionError(code: .conflict, state: state.status.rawValue, event: event.name, message: message)
    }
}
