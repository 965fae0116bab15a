import Testing

@testable import UpgradeMachines

/// Team-transfer migrations fed event by event, as the batch jobs and the sign-in endpoint will.
@Suite("Transfer state machine: scenarios")
struct TransferStateMachineScenarioTests {
    let acceptedAt: Int64 = 1_700_000_000
    var windowEndsAt: Int64 { acceptedAt + TransferStateMachine.windowLength }

    @Test("the window is 60 days")
    func windowLength() {
        #expect(TransferStateMachine.windowLength == 5_184_000)
    }

    @Test("prepare on the sender side, then complete on the recipient side")
    func prepareThenComplete() throws {
        var machine = TransferStateMachine(linkedTo: "sub-A")
        #expect(machine.status == .linked)

        let begin = try machine.apply(.beginPreparation(windowEndsAt: nil), now: acceptedAt - 3_600)
        #expect(begin.effects == [.requestTransferIdentifier(sub: "sub-A")])
        #expect(!begin.stateChanged)

        let prepared = try machine.apply(.transferIdentifierObtained(transferSub: "xfer-1"), now: acceptedAt - 3_599)
        #expect(prepared.effects == [])
        #expect(prepared.auditSummary == "linked -> transferPrepared on transferIdentifierObtained")
        #expect(machine.state == .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-1")))
        #expect(machine.credentialState(for: "sub-A") == .authorized)

        let exchange = try machine.apply(.beginCompletion(windowEndsAt: windowEndsAt), now: acceptedAt + 60)
        #expect(exchange.effects == [.exchangeTransferIdentifier(transferSub: "xfer-1")])

        let done = try machine.apply(
            .newSubObtained(sub: "sub-B", email: "new@privaterelay.appleid.com"),
            now: acceptedAt + 61
        )
        #expect(
            done.effects == [
                .relinkAppleAccount(from: "sub-A", to: "sub-B"), .updateEmail("new@privaterelay.appleid.com"),
            ]
        )
        #expect(machine.status == .transferred)
        #expect(machine.credentialState(for: "sub-A") == .transferred)
        #expect(machine.credentialState(for: "sub-B") == .authorized)

        let rerun = try machine.apply(
            .newSubObtained(sub: "sub-B", email: "new@privaterelay.appleid.com"),
            now: acceptedAt + 99
        )
        #expect(rerun.isReplay, "a re-run batch does nothing twice")
        #expect(rerun.effects == [])
    }

    @Test("prepare, then the user signs in with transfer_sub before the batch runs")
    func prepareThenSignIn() throws {
        var machine = TransferStateMachine(linkedTo: "sub-A")
        _ = try machine.apply(.transferIdentifierObtained(transferSub: "xfer-1"), now: acceptedAt)

        let signIn = try machine.apply(
            .signedInWithTransferSub(transferSub: "xfer-1", sub: "sub-B", email: nil),
            now: acceptedAt + 10
        )
        #expect(signIn.effects == [.relinkAppleAccount(from: "sub-A", to: "sub-B")])
        #expect(machine.state == .transferred(.init(sub: "sub-B", previousSub: "sub-A", transferSub: "xfer-1")))

        let again = try machine.apply(
            .signedInWithTransferSub(transferSub: "xfer-1", sub: "sub-B", email: nil),
            now: acceptedAt + 20
        )
        #expect(again.isReplay, "every token in the window carries transfer_sub")

        let batch = #expect(throws: TransitionError.self) {
            try machine.apply(.beginCompletion(windowEndsAt: windowEndsAt), now: acceptedAt + 30)
        }
        #expect(batch?.code == .notAllowed, "nothing left to exchange")
    }

    @Test("a token whose transfer_sub is not this account's is a conflict")
    func signInWithForeignTransferSub() throws {
        var machine = TransferStateMachine(state: .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-1")))
        let error = #expect(throws: TransitionError.self) {
            try machine.apply(
                .signedInWithTransferSub(transferSub: "xfer-9", sub: "sub-B", email: nil),
                now: acceptedAt
            )
        }
        #expect(error?.code == .conflict)
        #expect(error?.message == "the token's transfer_sub is not the one stored for this account")
        #expect(machine.status == .transferPrepared)
    }

    @Test("a failed preparation is retried and then succeeds")
    func prepareFailureThenRetry() throws {
        var machine = TransferStateMachine(linkedTo: "sub-A")
        _ = try machine.apply(.beginPreparation(windowEndsAt: windowEndsAt), now: acceptedAt)
        let failed = try machine.apply(
            .stepFailed(reason: TransferFailureReason(appleError: "invalid_request")),
            now: acceptedAt
        )
        #expect(failed.to == .transferFailed)
        #expect(
            machine.state
                == .transferFailed(.init(sub: "sub-A", retryStep: .prepare, reason: .invalidRequest, failures: 1))
        )
        #expect(machine.credentialState(for: "sub-A") == .authorized, "still reached by the sender's id")

        let retry = try machine.apply(.beginPreparation(windowEndsAt: windowEndsAt), now: acceptedAt + 600)
        #expect(retry.effects == [.requestTransferIdentifier(sub: "sub-A")])
        let wrongStep = #expect(throws: TransitionError.self) {
            try machine.apply(.beginCompletion(windowEndsAt: windowEndsAt), now: acceptedAt + 600)
        }
        #expect(wrongStep?.code == .notAllowed, "only the step that failed is retried")

        _ = try machine.apply(.transferIdentifierObtained(transferSub: "xfer-1"), now: acceptedAt + 601)
        #expect(machine.state == .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-1")))
    }

    @Test("a failed exchange keeps the transfer identifier for the retry")
    func completeFailureThenRetry() throws {
        var machine = TransferStateMachine(state: .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-1")))
        _ = try machine.apply(.stepFailed(reason: .invalidGrant), now: acceptedAt)
        _ = try machine.apply(.stepFailed(reason: .invalidRequest), now: acceptedAt + 1)
        #expect(
            machine.state
                == .transferFailed(
                    .init(
                        sub: "sub-A",
                        retryStep: .complete(transferSub: "xfer-1"),
                        reason: .invalidRequest,
                        failures: 2
                    )
                )
        )
        let retry = try machine.apply(.beginCompletion(windowEndsAt: windowEndsAt), now: acceptedAt + 2)
        #expect(retry.effects == [.exchangeTransferIdentifier(transferSub: "xfer-1")])
        let done = try machine.apply(.newSubObtained(sub: "sub-B", email: nil), now: acceptedAt + 3)
        #expect(done.effects == [.relinkAppleAccount(from: "sub-A", to: "sub-B")])
        #expect(machine.status == .transferred)
    }

    @Test("exchanging after the window is a typed failure, and a new window makes it retryable")
    func afterWindow() throws {
        var machine = TransferStateMachine(state: .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-1")))

        let lastSecond = try machine.apply(.beginCompletion(windowEndsAt: windowEndsAt), now: windowEndsAt - 1)
        #expect(lastSecond.effects == [.exchangeTransferIdentifier(transferSub: "xfer-1")])

        let closed = try machine.apply(.beginCompletion(windowEndsAt: windowEndsAt), now: windowEndsAt)
        #expect(closed.effects == [], "Apple is not called once the window has closed")
        #expect(closed.stateChanged)
        #expect(
            machine.state
                == .transferFailed(
                    .init(sub: "sub-A", retryStep: .complete(transferSub: "xfer-1"), reason: .windowClosed, failures: 1)
                )
        )
        #expect(TransferFailureReason.windowClosed.rawValue == "window-closed")

        _ = try machine.apply(.beginCompletion(windowEndsAt: windowEndsAt), now: windowEndsAt + 86_400)
        if case .transferFailed(let failed) = machine.state {
            #expect(failed.failures == 2)
        } else {
            Issue.record("expected transferFailed, got \(machine.state)")
        }

        // The app was transferred back and forth again: a new window opens.
        let newWindow = windowEndsAt + 70 * 86_400
        let retry = try machine.apply(.beginCompletion(windowEndsAt: newWindow), now: windowEndsAt + 10 * 86_400)
        #expect(retry.effects == [.exchangeTransferIdentifier(transferSub: "xfer-1")])
    }

    @Test("preparing after the window fails too; before the transfer there is no window yet")
    func preparationWindow() throws {
        var machine = TransferStateMachine(linkedTo: "sub-A")
        let early = try machine.apply(.beginPreparation(windowEndsAt: nil), now: .max)
        #expect(early.effects == [.requestTransferIdentifier(sub: "sub-A")])

        let late = try machine.apply(.beginPreparation(windowEndsAt: windowEndsAt), now: windowEndsAt + 1)
        #expect(late.effects == [])
        #expect(
            machine.state
                == .transferFailed(.init(sub: "sub-A", retryStep: .prepare, reason: .windowClosed, failures: 1))
        )
    }

    @Test(
        "consent revoked or account deleted ends the migration from every state",
        arguments: TransferStateMachineTests.Sample.allCases,
        [TransferEvent.consentRevoked, .accountDeleted]
    )
    func revokeFromEachState(sample: TransferStateMachineTests.Sample, event: TransferEvent) throws {
        var machine = TransferStateMachine(state: sample.state)
        let transition = try machine.apply(event, now: acceptedAt)
        #expect(machine.status.isTerminal)
        #expect(transition.effects == [])
        if sample.state.status.isTerminal {
            #expect(transition.isReplay, "a redelivered notification changes nothing")
            #expect(machine.state == sample.state)
        } else {
            #expect(machine.status == (event == .consentRevoked ? .revoked : .deleted))
            #expect(machine.credentialState(for: sample.state.sub) == .revoked)
        }
        for later in [TransferEvent.beginPreparation(windowEndsAt: nil), .transferIdentifierObtained(transferSub: "x")]
        {
            let error = #expect(throws: TransitionError.self) { try machine.apply(later, now: acceptedAt + 1) }
            #expect(error?.code == .notAllowed, "not migratable")
        }
    }

    @Test("Apple's error values map to stable reasons")
    func failureReasons() {
        #expect(TransferFailureReason(appleError: "invalid_request") == .invalidRequest)
        #expect(TransferFailureReason(appleError: "invalid_client") == .invalidClient)
        #expect(TransferFailureReason(appleError: "invalid_grant") == .invalidGrant)
        #expect(TransferFailureReason(appleError: "unauthorized_client") == .unauthorizedClient)
        #expect(TransferFailureReason(appleError: "invalid_scope") == .rejected)
        #expect(TransferFailureReason(appleError: "INVALID_REQUEST") == .rejected, "Apple's values are lower case")
        #expect(
            TransferStatus.allCases.map(\.rawValue) == [
                "linked", "transferPrepared", "transferred", "transferFailed", "revoked", "deleted",
            ]
        )
    }
}
