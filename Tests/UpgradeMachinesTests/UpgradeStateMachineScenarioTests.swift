import Testing

@testable import UpgradeMachines

/// Whole upgrade sessions fed event by event, the way the driver will, checking each answer.
@Suite("Upgrade state machine: scenarios")
struct UpgradeStateMachineScenarioTests {
    let t0: Int64 = 1_700_000_000

    @Test("happy path without a second factor")
    func happyPathWithoutSecondFactor() throws {
        var machine = UpgradeStateMachine.start(now: t0)
        #expect(machine.status == .started)
        #expect(machine.deadline == t0 + 600)
        #expect(machine.result == nil)

        let password = try machine.apply(.passwordEvaluated(.accepted(secondFactor: false)), now: t0 + 1)
        #expect(password.effects == [.issueStateAndNonce])
        #expect(password.problem == nil)
        #expect(machine.status == .awaitingAppleCredential)
        #expect(machine.result == .success)
        #expect(machine.deadline == t0 + 301)

        let credential = try machine.apply(.appleCredentialEvaluated(.verified(sub: "001234.abc.0001")), now: t0 + 60)
        #expect(credential.effects == [.exchangeAuthorizationCode])
        #expect(machine.status == .converting)
        #expect(machine.result == nil, "converting has no answer of its own")

        let exchanged = try machine.apply(.authorizationCodeExchanged, now: t0 + 61)
        #expect(exchanged.effects == [.convertAccount(sub: "001234.abc.0001")])
        #expect(exchanged.auditSummary == "converting -> completed on authorizationCodeExchanged")
        #expect(machine.state == .completed(.init(sub: "001234.abc.0001")))
        #expect(machine.result == .success)
        #expect(machine.deadline == nil)
    }

    @Test("with a second factor: a wrong code, then the right one")
    func secondFactorWrongThenRight() throws {
        var machine = UpgradeStateMachine.start(now: t0)
        let password = try machine.apply(.passwordEvaluated(.accepted(secondFactor: true)), now: t0 + 2)
        #expect(password.effects == [], "no state or nonce before the second factor")
        #expect(machine.status == .stepUpRequired)
        #expect(machine.result == .twoFactorAuthRequired)
        #expect(machine.attemptsRemaining == 5)
        #expect(machine.deadline == t0 + 302)

        let wrong = try machine.apply(.stepUpEvaluated(.rejected(reason: .invalidCode)), now: t0 + 20)
        #expect(wrong.problem == .invalidCode)
        #expect(wrong.from == .stepUpRequired && wrong.to == .stepUpRequired)
        #expect(wrong.stateChanged, "the attempt count must be persisted")
        #expect(machine.result == .twoFactorAuthRequired)
        #expect(machine.attemptsRemaining == 4)
        #expect(machine.deadline == t0 + 302, "a wrong code does not extend the deadline")

        let right = try machine.apply(.stepUpEvaluated(.accepted), now: t0 + 30)
        #expect(right.effects == [.issueStateAndNonce])
        #expect(machine.status == .awaitingAppleCredential)
        #expect(machine.attemptsRemaining == nil)
        #expect(machine.deadline == t0 + 330)

        _ = try machine.apply(.appleCredentialEvaluated(.verified(sub: "sub-A")), now: t0 + 40)
        let done = try machine.apply(.authorizationCodeExchanged, now: t0 + 41)
        #expect(done.effects == [.convertAccount(sub: "sub-A")])
        #expect(machine.status == .completed)
    }

    @Test("step-up attempts exhausted fails the upgrade on the last allowed wrong code")
    func attemptsExhausted() throws {
        let policy = try UpgradePolicy(maxStepUpAttempts: 3)
        var machine = UpgradeStateMachine.start(now: t0, policy: policy)
        _ = try machine.apply(.passwordEvaluated(.accepted(secondFactor: true)), now: t0)
        let wrongCode = UpgradeEvent.stepUpEvaluated(.rejected(reason: .invalidCode))

        #expect(try machine.apply(wrongCode, now: t0 + 1).problem == .invalidCode)
        #expect(machine.attemptsRemaining == 2)
        #expect(try machine.apply(wrongCode, now: t0 + 2).problem == .invalidCode)
        #expect(machine.attemptsRemaining == 1)

        let last = try machine.apply(wrongCode, now: t0 + 3)
        #expect(last.problem == .tooManyAttempts)
        #expect(last.auditSummary == "stepUpRequired -> failed on stepUpEvaluated (too-many-attempts)")
        #expect(machine.state == .failed(.init(reason: .tooManyAttempts)))
        #expect(machine.result == .failure)

        let error = #expect(throws: TransitionError.self) {
            try machine.apply(.stepUpEvaluated(.accepted), now: t0 + 4)
        }
        #expect(error?.code == .notAllowed, "a right code after the limit changes nothing")
        #expect(error?.code.name == "not-allowed-in-state")
    }

    @Test("a lowered limit applies to a session already in flight")
    func loweredLimitAppliesInFlight() throws {
        let stored = UpgradeState.stepUpRequired(
            .init(deadline: t0 + 300, sessionDeadline: t0 + 600, failedAttempts: 3)
        )
        var machine = UpgradeStateMachine(state: stored, policy: try UpgradePolicy(maxStepUpAttempts: 2))
        #expect(machine.attemptsRemaining == 0)
        _ = try machine.apply(.stepUpEvaluated(.rejected(reason: .invalidCode)), now: t0)
        #expect(machine.state == .failed(.init(reason: .tooManyAttempts)))
    }

    /// Drives a fresh session into `status` through the events a client would cause.
    func machine(in status: UpgradeStatus) throws -> UpgradeStateMachine {
        var machine = UpgradeStateMachine.start(now: t0)
        if status == .started { return machine }
        _ = try machine.apply(.passwordEvaluated(.accepted(secondFactor: true)), now: t0 + 1)
        if status == .stepUpRequired { return machine }
        _ = try machine.apply(.stepUpEvaluated(.accepted), now: t0 + 2)
        if status == .awaitingAppleCredential { return machine }
        _ = try machine.apply(.appleCredentialEvaluated(.verified(sub: "sub-A")), now: t0 + 3)
        try #require(status == .converting)
        return machine
    }

    @Test(
        "cancel from each open state records the extension's error code",
        arguments: [UpgradeStatus.started, .stepUpRequired, .awaitingAppleCredential],
        ASExtensionErrorCode.allCases
    )
    func cancelFromOpenState(status: UpgradeStatus, code: ASExtensionErrorCode) throws {
        var machine = try machine(in: status)
        let transition = try machine.apply(.cancel(reason: code), now: t0 + 10)
        #expect(transition.from == status)
        #expect(transition.effects == [])
        #expect(transition.problem == nil, "a cancellation is answered with 2xx")
        #expect(machine.state == .cancelled(.init(reason: code)))
        #expect(machine.result == .failure)

        let again = try machine.apply(.cancel(reason: .userCanceled), now: t0 + 11)
        #expect(again.isReplay, "re-cancelling is answered idempotently")
        #expect(machine.state == .cancelled(.init(reason: code)), "the first reason stays")
    }

    @Test("cancel while converting is refused: the outcome is the server's to decide")
    func cancelWhileConverting() throws {
        var machine = try machine(in: .converting)
        let error = #expect(throws: TransitionError.self) {
            try machine.apply(.cancel(reason: .userCanceled), now: t0 + 10)
        }
        #expect(error?.code == .notAllowed)
        #expect(machine.status == .converting)
    }

    @Test(
        "deadline passed in each open state",
        arguments: [UpgradeStatus.started, .stepUpRequired, .awaitingAppleCredential]
    )
    func deadlinePassed(status: UpgradeStatus) throws {
        var machine = try machine(in: status)
        let deadline = try #require(machine.deadline)

        #expect(!machine.hasExpired(now: deadline - 1))
        #expect(machine.status(now: deadline - 1) == status)
        let early = #expect(throws: TransitionError.self) { try machine.apply(.deadlinePassed, now: deadline - 1) }
        #expect(early?.code == .deadlineNotReached)

        #expect(machine.hasExpired(now: deadline))
        #expect(machine.status(now: deadline) == .expired, "a read shows expiry before anything is persisted")
        #expect(machine.status == status)

        let expiry = try machine.apply(.deadlinePassed, now: deadline)
        #expect(expiry.from == status)
        #expect(expiry.problem == .upgradeExpired)
        #expect(machine.state == .expired)
        #expect(machine.result == .failure)
        #expect(machine.state.problem == .upgradeExpired)
    }

    @Test(
        "a conversion whose claim lapsed fails as interrupted, whatever event finds it",
        arguments: [
            UpgradeEvent.deadlinePassed, .authorizationCodeExchanged, .conversionFailed(.appleExchangeFailed),
            .cancel(reason: .userCanceled), .appleCredentialEvaluated(.verified(sub: "001.a.1")),
        ]
    )
    func conversionInterrupted(event: UpgradeEvent) throws {
        var machine = try machine(in: .converting)
        let deadline = try #require(machine.deadline)
        #expect(!machine.conversionInterrupted(now: deadline - 1))
        #expect(machine.status(now: deadline - 1) == .converting)
        #expect(machine.conversionInterrupted(now: deadline))
        #expect(machine.status(now: deadline) == .failed, "a read shows the failure before anything is persisted")

        let transition = try machine.apply(event, now: deadline)
        #expect(transition.from == .converting)
        #expect(transition.to == .failed)
        #expect(transition.problem == .conversionInterrupted)
        #expect(machine.state.problem == .conversionInterrupted)
        #expect(machine.result == .failure)
        let again = #expect(throws: TransitionError.self) { try machine.apply(.deadlinePassed, now: deadline + 1) }
        #expect(again?.code == .notAllowed, "failed is final")
    }

    @Test("a late valid event still expires the upgrade")
    func lateValidEventExpires() throws {
        var machine = try machine(in: .awaitingAppleCredential)
        let deadline = try #require(machine.deadline)
        let transition = try machine.apply(.appleCredentialEvaluated(.verified(sub: "sub-A")), now: deadline + 5)
        #expect(transition.effects == [], "no code exchange once expired")
        #expect(transition.problem == .upgradeExpired)
        #expect(machine.state == .expired)
    }

    @Test("every user-facing deadline is capped by the session; converting is not")
    func sessionCap() throws {
        var machine = UpgradeStateMachine.start(now: t0)
        _ = try machine.apply(.passwordEvaluated(.accepted(secondFactor: true)), now: t0 + 500)
        #expect(machine.deadline == t0 + 600, "step-up would run to t0 + 800")
        _ = try machine.apply(.stepUpEvaluated(.accepted), now: t0 + 590)
        #expect(machine.deadline == t0 + 600, "Apple's sheet would run to t0 + 890")
        _ = try machine.apply(.appleCredentialEvaluated(.verified(sub: "sub-A")), now: t0 + 599)
        #expect(machine.deadline == t0 + 719, "the server's own work gets its full time")
        _ = try machine.apply(.authorizationCodeExchanged, now: t0 + 650)
        #expect(machine.status == .completed)
    }

    @Test("retrying the last call on a completed upgrade is idempotent")
    func completedRetryIsIdempotent() throws {
        var machine = try machine(in: .converting)
        _ = try machine.apply(.authorizationCodeExchanged, now: t0 + 20)
        let completed = machine

        for later in [t0 + 21, t0 + 86_400] {
            let retry = try machine.apply(.appleCredentialEvaluated(.verified(sub: "sub-A")), now: later)
            #expect(retry.isReplay)
            #expect(!retry.stateChanged)
            #expect(retry.effects == [], "no second exchange, no second conversion")
            #expect(retry.problem == nil)
            #expect(retry.to == .completed)
            #expect(retry.auditSummary == "completed -> completed on appleCredentialEvaluated (replay)")
            #expect(machine == completed)
            #expect(machine.result == .success)
        }

        let other = #expect(throws: TransitionError.self) {
            try machine.apply(.appleCredentialEvaluated(.verified(sub: "sub-B")), now: t0 + 22)
        }
        #expect(other?.code == .conflict)
        #expect(other?.code.name == "conflict")
        let rejected = #expect(throws: TransitionError.self) {
            try machine.apply(.appleCredentialEvaluated(.rejected(reason: .invalidIdentityToken)), now: t0 + 22)
        }
        #expect(rejected?.code == .notAllowed, "a retry that fails verification gets no success")
        #expect(machine == completed)
    }

    @Test("a rejected password fails the upgrade with the reason's slug")
    func rejectedPassword() throws {
        for (reason, slug) in [
            (UpgradeEvent.PasswordRejection.invalidCredentials, "invalid-credentials"),
            (.locked, "locked"),
            (.notEligible, "not-eligible"),
        ] {
            var machine = UpgradeStateMachine.start(now: t0)
            let transition = try machine.apply(.passwordEvaluated(.rejected(reason: reason)), now: t0)
            #expect(transition.problem?.rawValue == slug)
            #expect(machine.result == .failure)
        }
    }

    @Test("a failed conversion is reported with its reason")
    func conversionFailure() throws {
        var machine = try machine(in: .converting)
        let transition = try machine.apply(.conversionFailed(.subConflict), now: t0 + 20)
        #expect(transition.problem == .subConflict)
        #expect(transition.problem?.rawValue == "sub-conflict")
        #expect(machine.state == .failed(.init(reason: .subConflict)))
    }

    @Test("results and problems per state follow the response rules")
    func answersPerState() {
        let answers: [(UpgradeState, UpgradeResult?, UpgradeFailureReason?)] = [
            (.started(.init(deadline: t0)), nil, nil),
            (.stepUpRequired(.init(deadline: t0, sessionDeadline: t0, failedAttempts: 0)), .twoFactorAuthRequired, nil),
            (.awaitingAppleCredential(.init(deadline: t0)), .success, nil),
            (.converting(.init(sub: "s", deadline: t0)), nil, nil),
            (.completed(.init(sub: "s")), .success, nil),
            (.failed(.init(reason: .nonceMismatch)), .failure, .nonceMismatch),
            (.cancelled(.init(reason: .failed)), .failure, nil),
            (.expired, .failure, .upgradeExpired),
        ]
        #expect(answers.count == UpgradeStatus.allCases.count)
        for (state, result, problem) in answers {
            #expect(state.result == result, "\(state.status)")
            #expect(state.problem == problem, "\(state.status)")
        }
    }

    @Test("stable strings: statuses, results, slugs and extension error codes")
    func stableStrings() {
        #expect(
            UpgradeStatus.allCases.map(\.rawValue) == [
                "started", "stepUpRequired", "awaitingAppleCredential", "converting", "completed", "failed",
                "cancelled", "expired",
            ]
        )
        #expect(UpgradeStatus.allCases.filter(\.isTerminal) == [.completed, .failed, .cancelled, .expired])
        #expect(UpgradeResult.allCases.map(\.rawValue) == ["success", "failure", "twoFactorAuthRequired"])
        #expect(
            UpgradeFailureReason.allCases.map(\.rawValue) == [
                "invalid-credentials", "invalid-ticket", "locked", "not-eligible", "invalid-code", "too-many-attempts",
                "state-mismatch",
                "nonce-mismatch", "invalid-identity-token", "sub-conflict", "apple-exchange-failed",
                "apple-unavailable",
                "invalid-authorization-code", "conversion-interrupted", "upgrade-expired", "credentials-changed",
            ]
        )
        #expect(UpgradeFailureReason.allCases.filter { !$0.endsUpgrade } == [.invalidCode, .upgradeExpired])
        #expect(ASExtensionErrorCode.allCases.map(\.rawValue) == [0, 1, 100, 101])
        #expect(
            ASExtensionErrorCode.allCases.map(\.name) == [
                "failed", "userCanceled", "userInteractionRequired", "credentialIdentityNotFound",
            ]
        )
        for code in ASExtensionErrorCode.allCases {
            #expect(ASExtensionErrorCode(name: code.name) == code)
        }
        #expect(ASExtensionErrorCode(name: "cancelled") == nil)
    }

    @Test("policy values that cannot work are refused with the setting named")
    func policyValidation() {
        #expect(throws: PolicyError(setting: "UpgradePolicy.maxStepUpAttempts", value: 0, requirement: "at least 1")) {
            try UpgradePolicy(maxStepUpAttempts: 0)
        }
        #expect(throws: PolicyError(setting: "UpgradePolicy.sessionLifetime", value: -5, requirement: "at least 1")) {
            try UpgradePolicy(sessionLifetime: -5)
        }
        let error = #expect(throws: PolicyError.self) { try UpgradePolicy(conversionLifetime: 0) }
        #expect(error?.description == "UpgradePolicy.conversionLifetime is 0; it must be at least 1")
        #expect((try? UpgradePolicy()) == UpgradePolicy.default)
    }

    @Test("a refusal explains itself")
    func refusalMessage() {
        var machine = UpgradeStateMachine(state: .failed(.init(reason: .locked)))
        let error = #expect(throws: TransitionError.self) { try machine.apply(.cancel(reason: .userCanceled), now: t0) }
        #expect(
            error?.description == "'cancel' is not allowed in state 'failed'; read the current status before retrying"
        )
    }

    @Test("deadlines saturate instead of overflowing on a wild clock value")
    func saturatingDeadline() throws {
        var machine = UpgradeStateMachine.start(now: .max - 10)
        #expect(machine.deadline == .max)
        _ = try machine.apply(.passwordEvaluated(.accepted(secondFactor: false)), now: .max - 5)
        #expect(machine.deadline == .max)
    }
}
