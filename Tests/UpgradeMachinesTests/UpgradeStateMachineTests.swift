import Testing

@testable import UpgradeMachines

/// Every (state, event) pair of the upgrade machine: either the defined transition, with its exact
/// next state, effects and problem, or a refusal that changes nothing.
@Suite("Upgrade state machine: every state and event")
struct UpgradeStateMachineTests {
    /// Samples are built around `t0`; events in the table arrive at `now`, before every deadline.
    static let t0: Int64 = 1_700_000_000
    static let now: Int64 = t0 + 10

    /// One sample per state, two for `stepUpRequired` so both sides of the attempt limit are covered.
    enum Sample: String, CaseIterable, CustomTestStringConvertible {
        case started
        case stepUpFresh
        case stepUpLastTry
        case awaiting
        case converting
        case completed
        case failed
        case cancelled
        case expired

        var state: UpgradeState {
            switch self {
            case .started: .started(.init(deadline: t0 + 600))
            case .stepUpFresh: .stepUpRequired(.init(deadline: t0 + 300, sessionDeadline: t0 + 600, failedAttempts: 0))
            case .stepUpLastTry:
                .stepUpRequired(.init(deadline: t0 + 300, sessionDeadline: t0 + 600, failedAttempts: 4))
            case .awaiting: .awaitingAppleCredential(.init(deadline: t0 + 300))
            case .converting: .converting(.init(sub: "sub-A", deadline: t0 + 120))
            case .completed: .completed(.init(sub: "sub-A"))
            case .failed: .failed(.init(reason: .invalidCredentials))
            case .cancelled: .cancelled(.init(reason: .userCanceled))
            case .expired: .expired
            }
        }

        var testDescription: String { rawValue }
    }

    /// One input per event and per outcome the event can carry.
    enum Input: String, CaseIterable, CustomTestStringConvertible {
        case passwordOK
        case password2FA
        case passwordWrong
        case passwordLocked
        case passwordNotEligible
        case ticketOK
        case ticket2FA
        case ticketInvalid
        case ticketLocked
        case ticketNotEligible
        case codeOK
        case codeWrong
        case codeLocked
        case credentialSubA
        case credentialSubB
        case stateMismatch
        case nonceMismatch
        case invalidToken
        case credentialSubConflict
        case credentialNotEligible
        case credentialCodeMismatch
        case codeExchanged
        case exchangeFailed
        case conversionSubConflict
        case conversionNotEligible
        case conversionCodeMismatch
        case cancelFailed
        case cancelUser
        case cancelInteraction
        case cancelNotFound
        case deadlinePassed
        case superseded
        case credentialsChanged
        case passwordChangedMeanwhile
        case conversionCredentialsChanged

        var event: UpgradeEvent {
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
            case .credentialSubA: .appleCredentialEvaluated(.verified(sub: "sub-A"))
            case .credentialSubB: .appleCredentialEvaluated(.verified(sub: "sub-B"))
            case .stateMismatch: .appleCredentialEvaluated(.rejected(reason: .stateMismatch))
            case .nonceMismatch: .appleCredentialEvaluated(.rejected(reason: .nonceMismatch))
            case .invalidToken: .appleCredentialEvaluated(.rejected(reason: .invalidIdentityToken))
            case .credentialSubConflict: .appleCredentialEvaluated(.rejected(reason: .subConflict))
            case .credentialNotEligible: .appleCredentialEvaluated(.rejected(reason: .notEligible))
            case .credentialCodeMismatch: .appleCredentialEvaluated(.rejected(reason: .codeMismatch))
            case .codeExchanged: .authorizationCodeExchanged
            case .exchangeFailed: .conversionFailed(.appleExchangeFailed)
            case .conversionSubConflict: .conversionFailed(.subConflict)
            case .conversionNotEligible: .conversionFailed(.notEligible)
            case .conversionCodeMismatch: .conversionFailed(.codeMismatch)
            case .cancelFailed: .cancel(reason: .failed)
            case .cancelUser: .cancel(reason: .userCanceled)
            case .cancelInteraction: .cancel(reason: .userInteractionRequired)
            case .cancelNotFound: .cancel(reason: .credentialIdentityNotFound)
            case .deadlinePassed: .deadlinePassed
            case .superseded: .superseded
            case .credentialsChanged: .credentialsChanged
            case .passwordChangedMeanwhile: .passwordEvaluated(.rejected(reason: .credentialsChanged))
            case .conversionCredentialsChanged: .conversionFailed(.credentialsChanged)
            }
        }

        var testDescription: String { rawValue }
    }

    enum Expected: Equatable {
        case moves(to: UpgradeState, effects: [UpgradeEffect] = [], problem: UpgradeFailureReason? = nil)
        case replay
        case refused(TransitionError.Code)
    }

    static func failed(_ reason: UpgradeFailureReason) -> Expected {
        .moves(to: .failed(.init(reason: reason)), problem: reason)
    }

    static func cancelled(_ code: ASExtensionErrorCode) -> Expected {
        .moves(to: .cancelled(.init(reason: code)))
    }

    /// The specification, row by row. Any pair not listed is refused as not allowed.
    static func expected(_ sample: Sample, _ input: Input) -> Expected {
        // Default policy: sessions 600 s, step-up 300 s, Apple credential 300 s, conversion 120 s,
        // 5 attempts. At `now` = t0 + 10 the 300 s windows end at t0 + 310, inside the session.
        let awaiting = Expected.moves(
            to: .awaitingAppleCredential(.init(deadline: t0 + 310)),
            effects: [.issueStateAndNonce]
        )
        switch (sample, input) {
        // An in-app upgrade's ticket stands in for the password: the same transitions.
        case (.started, .passwordOK), (.started, .ticketOK): return awaiting
        case (.started, .password2FA), (.started, .ticket2FA):
            return .moves(
                to: .stepUpRequired(.init(deadline: t0 + 310, sessionDeadline: t0 + 600, failedAttempts: 0))
            )
        case (.started, .passwordWrong): return failed(.invalidCredentials)
        case (.started, .passwordLocked): return failed(.locked)
        case (.started, .passwordNotEligible), (.started, .ticketNotEligible): return failed(.notEligible)
        case (.started, .ticketInvalid): return failed(.invalidTicket)
        case (.started, .ticketLocked): return failed(.locked)

        case (.stepUpFresh, .codeOK), (.stepUpLastTry, .codeOK): return awaiting
        case (.stepUpFresh, .codeWrong):
            return .moves(
                to: .stepUpRequired(.init(deadline: t0 + 300, sessionDeadline: t0 + 600, failedAttempts: 1)),
                problem: .invalidCode
            )
        case (.stepUpLastTry, .codeWrong): return failed(.tooManyAttempts)
        case (.stepUpFresh, .codeLocked), (.stepUpLastTry, .codeLocked): return failed(.locked)

        case (.awaiting, .credentialSubA):
            return .moves(
                to: .converting(.init(sub: "sub-A", deadline: t0 + 130)),
                effects: [.exchangeAuthorizationCode]
            )
        case (.awaiting, .credentialSubB):
            return .moves(
                to: .converting(.init(sub: "sub-B", deadline: t0 + 130)),
                effects: [.exchangeAuthorizationCode]
            )
        case (.awaiting, .stateMismatch): return failed(.stateMismatch)
        case (.awaiting, .nonceMismatch): return failed(.nonceMismatch)
        case (.awaiting, .invalidToken): return failed(.invalidIdentityToken)
        case (.awaiting, .credentialSubConflict): return failed(.subConflict)
        case (.awaiting, .credentialNotEligible): return failed(.notEligible)
        case (.awaiting, .credentialCodeMismatch): return failed(.invalidAuthorizationCode)

        case (.converting, .codeExchanged):
            return .moves(to: .completed(.init(sub: "sub-A")), effects: [.convertAccount(sub: "sub-A")])
        case (.converting, .exchangeFailed): return failed(.appleExchangeFailed)
        case (.converting, .conversionSubConflict): return failed(.subConflict)
        case (.converting, .conversionNotEligible): return failed(.notEligible)
        case (.converting, .conversionCodeMismatch): return failed(.invalidAuthorizationCode)

        case (.started, .cancelFailed), (.stepUpFresh, .cancelFailed), (.stepUpLastTry, .cancelFailed),
            (.awaiting, .cancelFailed):
            return cancelled(.failed)
        case (.started, .cancelUser), (.stepUpFresh, .cancelUser), (.stepUpLastTry, .cancelUser),
            (.awaiting, .cancelUser):
            return cancelled(.userCanceled)
        case (.started, .cancelInteraction), (.stepUpFresh, .cancelInteraction), (.stepUpLastTry, .cancelInteraction),
            (.awaiting, .cancelInteraction):
            return cancelled(.userInteractionRequired)
        case (.started, .cancelNotFound), (.stepUpFresh, .cancelNotFound), (.stepUpLastTry, .cancelNotFound),
            (.awaiting, .cancelNotFound):
            return cancelled(.credentialIdentityNotFound)
        // A newer upgrade of the same account cancels the open ones; a conversion runs to its end.
        case (.started, .superseded), (.stepUpFresh, .superseded), (.stepUpLastTry, .superseded),
            (.awaiting, .superseded):
            return cancelled(.failed)
        // A credential change ends what the old credentials opened; a claimed conversion decides at its
        // own commit (docs/architecture.md §4.4).
        case (.started, .credentialsChanged), (.stepUpFresh, .credentialsChanged),
            (.stepUpLastTry, .credentialsChanged),
            (.awaiting, .credentialsChanged):
            return failed(.credentialsChanged)
        case (.started, .passwordChangedMeanwhile): return failed(.credentialsChanged)
        case (.converting, .conversionCredentialsChanged): return failed(.credentialsChanged)

        case (.started, .deadlinePassed), (.stepUpFresh, .deadlinePassed), (.stepUpLastTry, .deadlinePassed),
            (.awaiting, .deadlinePassed), (.converting, .deadlinePassed):
            return .refused(.deadlineNotReached)

        // Retrying the call that finished the upgrade is answered again, without changes.
        case (.completed, .credentialSubA): return .replay
        case (.completed, .credentialSubB): return .refused(.conflict)
        case (.cancelled, .cancelFailed), (.cancelled, .cancelUser), (.cancelled, .cancelInteraction),
            (.cancelled, .cancelNotFound):
            return .replay

        default: return .refused(.notAllowed)
        }
    }

    @Test("each pair is its defined transition or a refusal", arguments: Sample.allCases, Input.allCases)
    func everyPair(sample: Sample, input: Input) {
        var machine = UpgradeStateMachine(state: sample.state)
        let before = machine
        let event = input.event
        switch Self.expected(sample, input) {
        case .moves(let next, let effects, let problem):
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine.state == next)
            #expect(
                transition
                    == UpgradeTransition(
                        from: sample.state.status,
                        to: next.status,
                        event: event.name,
                        effects: effects,
                        problem: problem,
                        isReplay: false
                    )
            )
        case .replay:
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine == before, "a replay changes nothing")
            #expect(transition?.isReplay == true)
            #expect(transition?.stateChanged == false)
            #expect(transition?.effects == [])
            #expect(transition?.problem == nil)
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
        let machine = UpgradeStateMachine(state: sample.state)
        let admission = machine.admission(of: input.event.kind, now: Self.now)
        switch Self.expected(sample, input) {
        case .moves:
            #expect(admission == .proceed)
        case .replay:
            #expect(admission == .replay)
        case .refused(let code):
            if sample == .completed && input.event.kind == .appleCredentialEvaluated {
                // By its kind the credential call is a replay; its outcome (another `sub`, a rejection)
                // is what apply refuses, and the driver checks the call's identity (the `state`) itself.
                #expect(admission == .replay)
            } else if sample == .converting && input.event.kind == .appleCredentialEvaluated {
                #expect(admission == .inProgress, "a second credential waits for the conversion")
            } else if case .refused(let error) = admission {
                #expect(error.code == code)
                #expect(error.event == input.event.name)
            } else {
                Issue.record("\(sample) + \(input): apply refuses, admission says \(admission)")
            }
        }
    }

    static let openSamples: [Sample] = [.started, .stepUpFresh, .stepUpLastTry, .awaiting]

    @Test("any event at or after an open state's deadline expires the upgrade", arguments: openSamples, Input.allCases)
    func lateEventExpires(sample: Sample, input: Input) throws {
        let deadline = try #require(sample.state.deadline)
        var machine = UpgradeStateMachine(state: sample.state)
        let transition = try machine.apply(input.event, now: deadline)
        #expect(machine.state == .expired)
        #expect(transition.effects == [])
        #expect(transition.problem == .upgradeExpired)
        #expect(transition.to == .expired)
        #expect(!transition.isReplay)
    }

    @Test("any event at or after a conversion's deadline fails it as interrupted", arguments: Input.allCases)
    func lateEventInterruptsConversion(input: Input) throws {
        let deadline = try #require(Sample.converting.state.deadline)
        var machine = UpgradeStateMachine(state: Sample.converting.state)
        let transition = try machine.apply(input.event, now: deadline)
        #expect(machine.state == .failed(.init(reason: .conversionInterrupted)))
        #expect(transition.effects == [])
        #expect(transition.problem == .conversionInterrupted)
        #expect(!transition.isReplay)
    }

    @Test("admission at or after an open state's deadline is lapsed", arguments: openSamples + [.converting])
    func admissionLapsed(sample: Sample) throws {
        let deadline = try #require(sample.state.deadline)
        let machine = UpgradeStateMachine(state: sample.state)
        for kind in UpgradeEvent.Kind.allCases {
            #expect(machine.admission(of: kind, now: deadline) == .lapsed, "\(kind)")
        }
    }

    @Test("terminal states refuse late events as they refuse early ones", arguments: [Sample.failed, .expired])
    func terminalIgnoresDeadline(sample: Sample) {
        var machine = UpgradeStateMachine(state: sample.state)
        for input in Input.allCases {
            let error = #expect(throws: TransitionError.self) { try machine.apply(input.event, now: .max) }
            #expect(error?.code == .notAllowed, "\(input)")
        }
        #expect(machine.state == sample.state)
    }
}
