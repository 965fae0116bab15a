import Testing

@testable import UpgradeMachines

/// Every (state, event) pair of the password-change machine: the defined transition with its exact
/// next state, effects and problem, or a refusal that changes nothing.
@Suite("Password change state machine: every state and event")
struct PasswordChangeStateMachineTests {
    static let t0: Int64 = 1_700_000_000
    static let now: Int64 = t0 + 10

    enum Sample: String, CaseIterable, CustomTestStringConvertible {
        case started
        case stepUpFresh
        case stepUpLastTry
        case completed
        case failed
        case cancelled
        case expired

        var state: PasswordChangeState {
            switch self {
            case .started: .started(.init(deadline: t0 + 600))
            case .stepUpFresh: .stepUpRequired(.init(deadline: t0 + 300, failedAttempts: 0))
            case .stepUpLastTry: .stepUpRequired(.init(deadline: t0 + 300, failedAttempts: 4))
            case .completed: .completed
            case .failed: .failed(.init(reason: .invalidCredentials))
            case .cancelled: .cancelled(.init(reason: .userInteractionRequired))
            case .expired: .expired
            }
        }

        var testDescription: String { rawValue }
    }

    enum Input: String, CaseIterable, CustomTestStringConvertible {
        case passwordOK, password2FA, passwordWrong, passwordLocked, passwordNotEligible
        case ticketOK, ticket2FA, ticketInvalid, ticketLocked, ticketNotEligible
        case codeOK, codeWrong, codeLocked
        case newPasswordRefused, accountChanged, deadlinePassed
        case credentialsChanged, superseded, cancelUser, cancelInteraction, passwordChangedMeanwhile

        var event: PasswordChangeEvent {
            switch self {
            case .passwordOK: .passwordEvaluated(.accepted(secondFactor: false))
            case .password2FA: .passwordEvaluated(.accepted(secondFactor: true))
            case .passwordWrong: .passwordEvaluated(.rejected(reason: .invalidCredentials))
            case .passwordLocked: .passwordEvaluated(.rejected(reason: .locked))
            case .passwordNotEligible: .passwordEvaluated(.rejected(reason: .notEligible))
            case .ticketOK: .ticketAccepted(secondFactor: false)
            case .ticket2FA: .ticketAccepted(secondFactor: true)
            case .ticketInvalid: .ticketRejected(reason: .invalidTicket)
            case .ticketLocked: .ticketRejected(reason: .locked)
            case .ticketNotEligible: .ticketRejected(reason: .notEligible)
            case .codeOK: .stepUpEvaluated(.accepted)
            case .codeWrong: .stepUpEvaluated(.rejected(reason: .invalidCode))
            case .codeLocked: .stepUpEvaluated(.rejected(reason: .locked))
            case .newPasswordRefused: .newPasswordRefused
            case .accountChanged: .accountChanged
            case .deadlinePassed: .deadlinePassed
            case .credentialsChanged: .credentialsChanged
            case .superseded: .superseded
            case .cancelUser: .cancel(reason: .userCanceled)
            case .cancelInteraction: .cancel(reason: .userInteractionRequired)
            case .passwordChangedMeanwhile: .passwordEvaluated(.rejected(reason: .credentialsChanged))
            }
        }

        var testDescription: String { rawValue }
    }

    enum Expected: Equatable {
        case moves(
            to: PasswordChangeState,
            effects: [PasswordChangeEffect] = [],
            problem: PasswordChangeFailureReason? = nil
        )
        /// The state stays exactly as it was and nothing is to be stored.
        case stays(problem: PasswordChangeFailureReason)
        /// The call that ended the change, repeated: answered again, nothing stored.
        case replay
        case refused(TransitionError.Code)
    }

    static func failed(_ reason: PasswordChangeFailureReason) -> Expected {
        .moves(to: .failed(.init(reason: reason)), problem: reason)
    }

    /// The specification, row by row (docs/architecture.md §4.3). Any pair not listed is refused.
    static func expected(_ sample: Sample, _ input: Input) -> Expected {
        let completed = Expected.moves(to: .completed, effects: [.storeNewPassword])
        switch (sample, input) {
        case (.started, .passwordOK), (.started, .ticketOK): return completed
        case (.started, .password2FA), (.started, .ticket2FA):
            // Step-up window 300 s from now, inside the 600 s change.
            return .moves(to: .stepUpRequired(.init(deadline: t0 + 310, failedAttempts: 0)))
        case (.started, .passwordWrong): return failed(.invalidCredentials)
        case (.started, .passwordLocked), (.started, .ticketLocked): return failed(.locked)
        case (.started, .passwordNotEligible), (.started, .ticketNotEligible): return failed(.notEligible)
        case (.started, .ticketInvalid): return failed(.invalidTicket)

        case (.stepUpFresh, .codeOK), (.stepUpLastTry, .codeOK): return completed
        case (.stepUpFresh, .codeWrong):
            return .moves(to: .stepUpRequired(.init(deadline: t0 + 300, failedAttempts: 1)), problem: .invalidCode)
        case (.stepUpLastTry, .codeWrong): return failed(.tooManyAttempts)
        case (.stepUpFresh, .codeLocked), (.stepUpLastTry, .codeLocked): return failed(.locked)

        case (.started, .newPasswordRefused), (.stepUpFresh, .newPasswordRefused),
            (.stepUpLastTry, .newPasswordRefused):
            return .stays(problem: .passwordPolicy)
        case (.started, .accountChanged), (.stepUpFresh, .accountChanged), (.stepUpLastTry, .accountChanged):
            return failed(.notEligible)
        case (.started, .deadlinePassed), (.stepUpFresh, .deadlinePassed), (.stepUpLastTry, .deadlinePassed):
            return .refused(.deadlineNotReached)
        case (.started, .credentialsChanged), (.stepUpFresh, .credentialsChanged),
            (.stepUpLastTry, .credentialsChanged):
            return failed(.credentialsChanged)
        case (.started, .passwordChangedMeanwhile): return failed(.credentialsChanged)
        case (.started, .superseded), (.stepUpFresh, .superseded), (.stepUpLastTry, .superseded):
            return failed(.superseded)
        case (.started, .cancelUser), (.stepUpFresh, .cancelUser), (.stepUpLastTry, .cancelUser):
            return .moves(to: .cancelled(.init(reason: .userCanceled)))
        case (.started, .cancelInteraction), (.stepUpFresh, .cancelInteraction), (.stepUpLastTry, .cancelInteraction):
            return .moves(to: .cancelled(.init(reason: .userInteractionRequired)))
        // Cancelling again answers the same; the first code stays recorded.
        case (.cancelled, .cancelUser), (.cancelled, .cancelInteraction): return .replay
        default: return .refused(.notAllowed)
        }
    }

    @Test("each pair is its defined transition or a refusal", arguments: Sample.allCases, Input.allCases)
    func everyPair(sample: Sample, input: Input) {
        var machine = PasswordChangeStateMachine(state: sample.state)
        let before = machine
        let event = input.event
        switch Self.expected(sample, input) {
        case .moves(let next, let effects, let problem):
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine.state == next)
            #expect(
                transition
                    == PasswordChangeTransition(
                        from: sample.state.status,
                        to: next.status,
                        event: event.name,
                        effects: effects,
                        problem: problem,
                        stateChanged: true
                    )
            )
        case .stays(let problem):
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine == before, "a refused new password changes nothing")
            #expect(transition?.stateChanged == false)
            #expect(transition?.problem == problem)
            #expect(transition?.effects == [])
            #expect(transition?.to == sample.state.status)
        case .replay:
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine == before, "a replay changes nothing")
            #expect(transition?.stateChanged == false && transition?.problem == nil && transition?.effects == [])
        case .refused(let code):
            let error = #expect(throws: TransitionError.self) { try machine.apply(event, now: Self.now) }
            #expect(error?.code == code)
            #expect(error?.state == sample.state.status.rawValue)
            #expect(error?.event == event.name)
            #expect(machine == before, "a refused event changes nothing")
        }
    }

    @Test("admission agrees with apply for each pair", arguments: Sample.allCases, Input.allCases)
    func admissionAgrees(sample: Sample, input: Input) {
        let admission = PasswordChangeStateMachine(state: sample.state).admission(of: input.event.kind, now: Self.now)
        switch Self.expected(sample, input) {
        case .moves, .stays:
            #expect(admission == .proceed)
        case .replay:
            #expect(admission == .replay)
        case .refused(let code):
            guard case .refused(let error) = admission else {
                Issue.record("\(sample) + \(input): apply refuses, admission says \(admission)")
                return
            }
            #expect(error.code == code)
            #expect(error.event == input.event.name)
        }
    }

    static let openSamples: [Sample] = [.started, .stepUpFresh, .stepUpLastTry]

    @Test("any event at or after an open state's deadline expires the change", arguments: openSamples, Input.allCases)
    func lateEventExpires(sample: Sample, input: Input) throws {
        let deadline = try #require(sample.state.deadline)
        var machine = PasswordChangeStateMachine(state: sample.state)
        #expect(machine.admission(of: input.event.kind, now: deadline) == .lapsed)
        #expect(machine.status(now: deadline) == .expired)
        let transition = try machine.apply(input.event, now: deadline)
        #expect(machine.state == .expired)
        #expect(transition.effects == [])
        #expect(transition.problem == .expired)
        #expect(transition.stateChanged)
    }

    @Test(
        "terminal states refuse late events as they refuse early ones",
        arguments: [Sample.completed, .failed, .expired]
    )
    func terminalIgnoresDeadline(sample: Sample) {
        var machine = PasswordChangeStateMachine(state: sample.state)
        for input in Input.allCases {
            let error = #expect(throws: TransitionError.self) { try machine.apply(input.event, now: .max) }
            #expect(error?.code == .notAllowed, "\(input)")
        }
        #expect(machine.state == sample.state)
    }

    @Test("a step-up window never outlives the change", arguments: [Int64(0), 400, 590])
    func stepUpCappedByChange(elapsed: Int64) throws {
        var machine = PasswordChangeStateMachine.start(now: Self.t0)
        _ = try machine.apply(.passwordEvaluated(.accepted(secondFactor: true)), now: Self.t0 + elapsed)
        #expect(machine.deadline == min(Self.t0 + 600, Self.t0 + elapsed + 300))
        #expect(machine.attemptsRemaining == 5)
        #expect(machine.result == .twoFactorAuthRequired)
    }

    @Test("each state survives its stored form; malformed records are refused", arguments: Sample.allCases)
    func persistence(sample: Sample) throws {
        #expect(try PasswordChangeState(persisted: sample.state.persisted) == sample.state)
        var extra = sample.state.persisted
        if extra.failureReason == nil { extra.failureReason = "locked" } else { extra.deadline = 1 }
        #expect(throws: PersistedStateError.self) { try PasswordChangeState(persisted: extra) }
    }

    @Test("stored records that describe no state are refused")
    func unreadableRecords() {
        let records: [PasswordChangeState.Persisted] = [
            .init(status: "converting"),
            .init(status: "started"),
            .init(status: "stepUpRequired", deadline: 1),
            .init(status: "stepUpRequired", deadline: 1, failedAttempts: -1),
            .init(status: "failed", failureReason: "password-policy"),
            .init(status: "failed", failureReason: "nonsense"),
        ]
        for record in records {
            #expect(throws: PersistedStateError.self, "\(record)") { try PasswordChangeState(persisted: record) }
        }
    }
}
