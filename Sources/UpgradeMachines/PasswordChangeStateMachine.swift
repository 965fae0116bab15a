/// One strong-password change: the extension's `changePasswordWithoutUserInteraction` (docs/architecture.md §4.7).
///
/// ```
/// started --password or ticket ok, no 2FA--> completed        [storeNewPassword]
/// started --password or ticket ok, 2FA-----> stepUpRequired
/// started --wrong / locked / not eligible--> failed(reason)
/// stepUpRequired --code ok-----------------> completed        [storeNewPassword]
/// stepUpRequired --wrong code--------------> stepUpRequired, then failed(too-many-attempts) at the limit
/// open --new password breaks a rule--------> the same state (password-policy), nothing stored
/// open --account changed meanwhile---------> failed(not-eligible)
/// open --credentials changed---------------> failed(credentials-changed)
/// open --superseded by a newer change------> failed(superseded)
/// open --cancel----------------------------> cancelled(code); cancelled --cancel--> replay
/// open, deadline passed --any event--------> expired
/// ```
///
/// The rules are checked by the driver before anything else, so "rules met" is the precondition of
/// every transition to `completed`. Pure: time comes in as `now`; the driver performs the effects and
/// persists ``state`` with its audit row in one transaction guarded by a version.
public struct PasswordChangeStateMachine: Sendable, Hashable {
    public private(set) var state: PasswordChangeState
    /// The upgrade's lifetimes and attempt limit: `sessionLifetime` for the whole change,
    /// `stepUpLifetime` for typing a code, `maxStepUpAttempts`.
    public let policy: UpgradePolicy

    public init(state: PasswordChangeState, policy: UpgradePolicy = .default) {
        self.state = state
        self.policy = policy
    }

    /// A new change, created when a client posts its current password (or ticket) and a new one.
    public static func start(now: Int64, policy: UpgradePolicy = .default) -> PasswordChangeStateMachine {
        PasswordChangeStateMachine(
            state: .started(.init(deadline: now.adding(seconds: policy.sessionLifetime))),
            policy: policy
        )
    }

    public var status: PasswordChangeStatus { state.status }
    public var result: UpgradeResult? { state.result }
    public var deadline: Int64? { state.deadline }

    /// Step-up codes the client may still try; `nil` outside `stepUpRequired`.
    public var attemptsRemaining: Int? {
        guard case .stepUpRequired(let stepUp) = state else { return nil }
        return max(0, policy.maxStepUpAttempts - stepUp.failedAttempts)
    }

    public func hasExpired(now: Int64) -> Bool {
        guard let deadline = state.deadline else { return false }
        return now >= deadline
    }

    /// The status a read reports: an open state past its deadline reads as `expired`.
    public func status(now: Int64) -> PasswordChangeStatus { hasExpired(now: now) ? .expired : state.status }

    /// What applying an event of `kind` at `now` would do, asked before the work that produces its
    /// outcome (checking a code), so that work is never done for a call the machine would refuse.
    /// Agrees with ``apply(_:now:)`` for every state and event (tested pair by pair).
    public func admission(of kind: PasswordChangeEvent.Kind, now: Int64) -> Admission {
        if case .cancelled = state, kind == .cancel { return .replay }
        guard !status.isTerminal else { return .refused(.notAllowed(state: status.rawValue, event: kind.rawValue)) }
        if hasExpired(now: now) { return .lapsed }
        switch (state, kind) {
        case (_, .deadlinePassed):
            return .refused(deadlineNotReached(kind.rawValue, now: now))
        case (.started, .passwordEvaluated), (.started, .ticketAccepted), (.started, .ticketRejected),
            (.stepUpRequired, .stepUpEvaluated), (_, .newPasswordRefused), (_, .accountChanged),
            (_, .credentialsChanged), (_, .superseded), (_, .cancel):
            return .proceed
        default:
            return .refused(.notAllowed(state: status.rawValue, event: kind.rawValue))
        }
    }

    public enum Admission: Sendable, Hashable {
        /// Do the work and apply its outcome.
        case proceed
        /// The call that ended the change, repeated (a second cancel): answer what is stored.
        case replay
        /// The state's deadline has passed: apply ``PasswordChangeEvent/deadlinePassed`` instead.
        case lapsed
        /// Not allowed in this state; nothing to do or store.
        case refused(TransitionError)
    }

    /// Applies `event` at `now`: a transition, or a thrown ``TransitionError`` (nothing changed). In an
    /// open state whose deadline has passed, every event expires the change.
    public mutating func apply(
        _ event: PasswordChangeEvent,
        now: Int64
    ) throws(TransitionError) -> PasswordChangeTransition {
        // The extension may cancel twice (a retry, or the system's own cancel after its cleanup).
        if case .cancelled = state, case .cancel = event {
            return PasswordChangeTransition(
                from: status,
                to: status,
                event: event.name,
                effects: [],
                problem: nil,
                stateChanged: false
            )
        }
        guard !status.isTerminal else { throw TransitionError.notAllowed(state: status.rawValue, event: event.name) }
        if hasExpired(now: now) { return move(to: .expired, on: event) }

        switch (state, event) {
        case (_, .deadlinePassed):
            throw deadlineNotReached(event.name, now: now)

        case (.started, .passwordEvaluated(.accepted(secondFactor: false))),
            (.started, .ticketAccepted(secondFactor: false)):
            return move(to: .completed, on: event, effects: [.storeNewPassword])

        case (.started(let started), .passwordEvaluated(.accepted(secondFactor: true))),
            (.started(let started), .ticketAccepted(secondFactor: true)):
            let deadline = min(started.deadline, now.adding(seconds: policy.stepUpLifetime))
            return move(to: .stepUpRequired(.init(deadline: deadline, failedAttempts: 0)), on: event)

        case (.started, .passwordEvaluated(.rejected(let reason))):
            return move(to: .failed(.init(reason: Self.reason(reason))), on: event)

        case (.started, .ticketRejected(let reason)):
            return move(to: .failed(.init(reason: Self.reason(reason))), on: event)

        case (.stepUpRequired, .stepUpEvaluated(.accepted)):
            return move(to: .completed, on: event, effects: [.storeNewPassword])

        case (.stepUpRequired(var stepUp), .stepUpEvaluated(.rejected(.invalidCode))):
            stepUp.failedAttempts += 1
            guard stepUp.failedAttempts < policy.maxStepUpAttempts else {
                return move(to: .failed(.init(reason: .tooManyAttempts)), on: event)
            }
            return move(to: .stepUpRequired(stepUp), on: event, problem: .invalidCode)

        case (.stepUpRequired, .stepUpEvaluated(.rejected(.locked))):
            return move(to: .failed(.init(reason: .locked)), on: event)

        // The state stays open for a corrected try; nothing is stored.
        case (_, .newPasswordRefused):
            return PasswordChangeTransition(
                from: status,
                to: status,
                event: event.name,
                effects: [],
                problem: .passwordPolicy,
                stateChanged: false
            )

        case (_, .accountChanged):
            return move(to: .failed(.init(reason: .notEligible)), on: event)

        case (_, .credentialsChanged):
            return move(to: .failed(.init(reason: .credentialsChanged)), on: event)

        case (_, .superseded):
            return move(to: .failed(.init(reason: .superseded)), on: event)

        case (_, .cancel(let reason)):
            return move(to: .cancelled(.init(reason: reason)), on: event)

        default:
            throw TransitionError.notAllowed(state: status.rawValue, event: event.name)
        }
    }

    private static func reason(_ rejection: UpgradeEvent.PasswordRejection) -> PasswordChangeFailureReason {
        switch rejection {
        case .invalidCredentials: .invalidCredentials
        case .locked: .locked
        case .notEligible: .notEligible
        case .credentialsChanged: .credentialsChanged
        }
    }

    private static func reason(_ rejection: UpgradeEvent.TicketRejection) -> PasswordChangeFailureReason {
        switch rejection {
        case .invalidTicket: .invalidTicket
        case .locked: .locked
        case .notEligible: .notEligible
        }
    }

    private func deadlineNotReached(_ event: String, now: Int64) -> TransitionError {
        TransitionError(
            code: .deadlineNotReached,
            state: status.rawValue,
            event: event,
            message: "the '\(status.rawValue)' state runs until \(state.deadline ?? now) and it is \(now); "
                + "expire it only once its deadline has passed"
        )
    }

    private mutating func move(
        to next: PasswordChangeState,
        on event: PasswordChangeEvent,
        effects: [PasswordChangeEffect] = [],
        problem: PasswordChangeFailureReason? = nil
    ) -> PasswordChangeTransition {
        let from = state.status
        state = next
        return PasswordChangeTransition(
            from: from,
            to: next.status,
            event: event.name,
            effects: effects,
            problem: problem ?? next.problem,
            stateChanged: true
        )
    }
}
