/// One upgrade session: a password account becoming a Sign in with Apple account (docs/architecture.md §4).
///
/// ```
/// started --password ok, no 2FA--> awaitingAppleCredential   [issueStateAndNonce]
/// started --password ok, 2FA-----> stepUpRequired
/// started --ticket accepted------> as after a correct password (in-app upgrade)
/// stepUpRequired --code ok-------> awaitingAppleCredential   [issueStateAndNonce]
/// stepUpRequired --wrong code----> stepUpRequired, then failed(too-many-attempts) at the limit
/// awaitingAppleCredential --credential verified--> converting [exchangeAuthorizationCode]
/// converting --code exchanged----> completed                 [convertAccount(sub:)]
/// converting, its claim lapsed --any event--> failed(conversion-interrupted)
/// rejections and conversion failures -> failed(reason); cancel, superseded -> cancelled; late -> expired
/// open, not converting --credentials changed--> failed(credentials-changed)
/// ```
///
/// Pure: time comes in as `now` (Unix seconds), cryptography is done by the driver and reported
/// as event outcomes, and everything else the driver must do comes back as ``UpgradeEffect``s.
/// The driver loads the record, restores the machine, calls ``apply(_:now:)``, performs the
/// effects and persists ``state`` with the audit entry in one transaction guarded by a version.
public struct UpgradeStateMachine: Sendable, Hashable {
    public private(set) var state: UpgradeState
    public let policy: UpgradePolicy

    /// Restores a machine from a stored state.
    public init(state: UpgradeState, policy: UpgradePolicy = .default) {
        self.state = state
        self.policy = policy
    }

    /// A new session, created when a client posts a password; its session deadline starts now.
    public static func start(now: Int64, policy: UpgradePolicy = .default) -> UpgradeStateMachine {
        UpgradeStateMachine(
            state: .started(.init(deadline: now.adding(seconds: policy.sessionLifetime))),
            policy: policy
        )
    }

    public var status: UpgradeStatus { state.status }
    public var result: UpgradeResult? { state.result }
    /// For `expiresAt` in answers: the current state's deadline.
    public var deadline: Int64? { state.deadline }

    /// Step-up codes the client may still try, for `attemptsRemaining`; `nil` outside `stepUpRequired`.
    public var attemptsRemaining: Int? {
        guard case .stepUpRequired(let stepUp) = state else { return nil }
        return max(0, policy.maxStepUpAttempts - stepUp.failedAttempts)
    }

    /// Whether an open state's deadline is behind `now`: the next event will expire the upgrade.
    public func hasExpired(now: Int64) -> Bool {
        guard let deadline = state.deadline else { return false }
        return now >= deadline
    }

    /// The status a read-only query reports: an open state past its deadline reads as `expired`
    /// (a lapsed conversion as `failed`) before any event has persisted that.
    public func status(now: Int64) -> UpgradeStatus {
        guard hasExpired(now: now) else { return state.status }
        return conversionInterrupted(now: now) ? .failed : .expired
    }

    /// Whether this is a conversion whose claim has lapsed: the request that claimed it never
    /// finished (the process died, or the database refused its last write). The next event fails it.
    public func conversionInterrupted(now: Int64) -> Bool {
        guard case .converting = state else { return false }
        return hasExpired(now: now)
    }

    /// What applying an event of `kind` at `now` would do, without applying it. A driver asks this
    /// before the work that produces the event's outcome (hashing a password, verifying a token,
    /// calling Apple), so that work is never done for a call the machine would refuse. It agrees with
    /// ``apply(_:now:)`` for every state and event (tested pair by pair).
    public func admission(of kind: UpgradeEvent.Kind, now: Int64) -> Admission {
        switch (state, kind) {
        case (.completed, .appleCredentialEvaluated), (.cancelled, .cancel):
            return .replay
        case (.completed, _), (.cancelled, _), (.failed, _), (.expired, _):
            return .refused(refusal(of: kind))
        default:
            break
        }
        if hasExpired(now: now) { return .lapsed }
        switch (state, kind) {
        case (_, .deadlinePassed):
            return .refused(
                TransitionError(
                    code: .deadlineNotReached,
                    state: status.rawValue,
                    event: kind.rawValue,
                    message: "the '\(status.rawValue)' state runs until \(state.deadline ?? now); expire it only after"
                )
            )
        case (.started, .passwordEvaluated), (.started, .ticketAccepted), (.started, .ticketRejected),
            (.stepUpRequired, .stepUpEvaluated),
            (.awaitingAppleCredential, .appleCredentialEvaluated), (.converting, .authorizationCodeExchanged),
            (.converting, .conversionFailed):
            return .proceed
        case (.started, .cancel), (.stepUpRequired, .cancel), (.awaitingAppleCredential, .cancel),
            (.started, .superseded), (.stepUpRequired, .superseded), (.awaitingAppleCredential, .superseded),
            (.started, .credentialsChanged), (.stepUpRequired, .credentialsChanged),
            (.awaitingAppleCredential, .credentialsChanged):
            return .proceed
        case (.converting, .appleCredentialEvaluated):
            return .inProgress
        default:
            return .refused(refusal(of: kind))
        }
    }

    /// The machine's answer to ``admission(of:now:)``.
    public enum Admission: Sendable, Hashable {
        /// The event changes the state: do the work and apply its outcome.
        case proceed
        /// The call that ended the upgrade, repeated: answer what is stored, change nothing. (The
        /// identity of the call, e.g. the same `state`, is the driver's to check.)
        case replay
        /// Another request's transition is under way (a conversion): its outcome is the answer.
        case inProgress
        /// The state's deadline has passed: apply ``UpgradeEvent/deadlinePassed`` instead.
        case lapsed
        /// Not allowed in this state; nothing to do or store.
        case refused(TransitionError)
    }

    /// Applies `event` at `now` and returns what happened. Every (state, event) pair is either a
    /// transition, a replay of the call that ended the upgrade, or a thrown ``TransitionError``
    /// (then nothing changed). In an open state whose deadline has passed, every event expires the
    /// upgrade, whatever it says.
    public mutating func apply(_ event: UpgradeEvent, now: Int64) throws(TransitionError) -> UpgradeTransition {
        switch state {
        case .completed(let completed):
            return try replayOnCompleted(completed, event)
        case .cancelled:
            // The extension re-cancels after the user dismisses Apple's sheet; a network retry
            // does the same. The first reason stays recorded.
            guard case .cancel = event else { throw notAllowed(event) }
            return replay(event)
        case .failed, .expired:
            throw notAllowed(event)
        case .started, .stepUpRequired, .awaitingAppleCredential, .converting:
            break
        }

        if hasExpired(now: now) {
            // A lapsed claim is not the user's lateness: the server lost the conversion it started.
            // The account is unchanged (converting commits in one transaction or not at all), so the
            // upgrade fails for good and the client starts a new one.
            if case .converting = state {
                return move(to: .failed(.init(reason: .conversionInterrupted)), on: event)
            }
            return move(to: .expired, on: event)
        }

        switch (state, event) {
        case (_, .deadlinePassed):
            throw TransitionError(
                code: .deadlineNotReached,
                state: status.rawValue,
                event: event.name,
                message: "the '\(status.rawValue)' state runs until \(state.deadline ?? now) and it is \(now); "
                    + "expire it only once its deadline has passed"
            )

        // A ticket stands in for the password: the same transitions follow.
        case (.started(let started), .passwordEvaluated(.accepted(secondFactor: false))),
            (.started(let started), .ticketAccepted(secondFactor: false)):
            return awaitAppleCredential(sessionDeadline: started.deadline, now: now, on: event)

        case (.started(let started), .passwordEvaluated(.accepted(secondFactor: true))),
            (.started(let started), .ticketAccepted(secondFactor: true)):
            let deadline = min(started.deadline, now.adding(seconds: policy.stepUpLifetime))
            let stepUp = UpgradeState.StepUpRequired(
                deadline: deadline,
                sessionDeadline: started.deadline,
                failedAttempts: 0
            )
            return move(to: .stepUpRequired(stepUp), on: event)

        case (.started, .passwordEvaluated(.rejected(let reason))):
            return move(to: .failed(.init(reason: reason.failureReason)), on: event)

        case (.started, .ticketRejected(let reason)):
            return move(to: .failed(.init(reason: reason.failureReason)), on: event)

        case (.stepUpRequired(let stepUp), .stepUpEvaluated(.accepted)):
            return awaitAppleCredential(sessionDeadline: stepUp.sessionDeadline, now: now, on: event)

        case (.stepUpRequired(var stepUp), .stepUpEvaluated(.rejected(.invalidCode))):
            stepUp.failedAttempts += 1
            guard stepUp.failedAttempts < policy.maxStepUpAttempts else {
                return move(to: .failed(.init(reason: .tooManyAttempts)), on: event)
            }
            return move(to: .stepUpRequired(stepUp), on: event, problem: .invalidCode)

        case (.stepUpRequired, .stepUpEvaluated(.rejected(.locked))):
            return move(to: .failed(.init(reason: .locked)), on: event)

        case (.awaitingAppleCredential, .appleCredentialEvaluated(.verified(let sub))):
            let converting = UpgradeState.Converting(sub: sub, deadline: now.adding(seconds: policy.conversionLifetime))
            return move(to: .converting(converting), on: event, effects: [.exchangeAuthorizationCode])

        case (.awaitingAppleCredential, .appleCredentialEvaluated(.rejected(let reason))):
            return move(to: .failed(.init(reason: reason.failureReason)), on: event)

        case (.converting(let converting), .authorizationCodeExchanged):
            return move(
                to: .completed(.init(sub: converting.sub)),
                on: event,
                effects: [.convertAccount(sub: converting.sub)]
            )

        case (.converting, .conversionFailed(let reason)):
            return move(to: .failed(.init(reason: reason.failureReason)), on: event)

        // Once the credential is handed over the outcome is the server's to decide; a cancel
        // racing the conversion would only leave the user unsure whether the account changed.
        case (.started, .cancel(let reason)),
            (.stepUpRequired, .cancel(let reason)),
            (.awaitingAppleCredential, .cancel(let reason)):
            return move(to: .cancelled(.init(reason: reason)), on: event)

        case (.started, .superseded), (.stepUpRequired, .superseded), (.awaitingAppleCredential, .superseded):
            return move(to: .cancelled(.init(reason: .failed)), on: event)

        // What authorized the upgrade no longer holds. A conversion already claimed is not ended here:
        // its own commit checks the password it claimed with (docs/architecture.md §4.4).
        case (.started, .credentialsChanged), (.stepUpRequired, .credentialsChanged),
            (.awaitingAppleCredential, .credentialsChanged):
            return move(to: .failed(.init(reason: .credentialsChanged)), on: event)

        default:
            throw notAllowed(event)
        }
    }

    private func replayOnCompleted(
        _ completed: UpgradeState.Completed,
        _ event: UpgradeEvent
    ) throws(TransitionError) -> UpgradeTransition {
        guard case .appleCredentialEvaluated(.verified(let sub)) = event else { throw notAllowed(event) }
        guard sub == completed.sub else {
            throw TransitionError(
                code: .conflict,
                state: status.rawValue,
                event: event.name,
                message: "this upgrade already completed with a different Apple account; start a new upgrade"
            )
        }
        return replay(event)
    }

    private mutating func awaitAppleCredential(
        sessionDeadline: Int64,
        now: Int64,
        on event: UpgradeEvent
    ) -> UpgradeTransition {
        let deadline = min(sessionDeadline, now.adding(seconds: policy.appleCredentialLifetime))
        return move(to: .awaitingAppleCredential(.init(deadline: deadline)), on: event, effects: [.issueStateAndNonce])
    }

    private mutating func move(
        to next: UpgradeState,
        on event: UpgradeEvent,
        effects: [UpgradeEffect] = [],
        problem: UpgradeFailureReason? = nil
    ) -> UpgradeTransition {
        let from = state.status
        state = next
        return UpgradeTransition(
            from: from,
            to: next.status,
            event: event.name,
            effects: effects,
            problem: problem ?? next.problem,
            isReplay: false
        )
    }

    private func replay(_ event: UpgradeEvent) -> UpgradeTransition {
        UpgradeTransition(
            from: state.status,
            to: state.status,
            event: event.name,
            effects: [],
            problem: nil,
            isReplay: true
        )
    }

    private func notAllowed(_ event: UpgradeEvent) -> TransitionError {
        refusal(of: event.kind)
    }

    /// The refusal of an event of `kind` that this state does not take: what ``admission(of:now:)``
    /// and ``apply(_:now:)`` answer, for a driver that has no event to apply.
    public func refusal(of kind: UpgradeEvent.Kind) -> TransitionError {
        .notAllowed(state: status.rawValue, event: kind.rawValue)
    }
}
