import Testing

@testable import UpgradeMachines

/// Every (state, event) pair of the transfer machine, with the migration window open.
@Suite("Transfer state machine: every state and event")
struct TransferStateMachineTests {
    static let now: Int64 = 1_700_000_000
    static let windowEndsAt: Int64 = now + 86_400

    enum Sample: String, CaseIterable, CustomTestStringConvertible {
        case linked
        case prepared
        case transferred
        case failedPrepare
        case failedComplete
        case revoked
        case deleted

        var state: TransferState {
            switch self {
            case .linked: .linked(.init(sub: "sub-A"))
            case .prepared: .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-1"))
            case .transferred: .transferred(.init(sub: "sub-B", previousSub: "sub-A", transferSub: "xfer-1"))
            case .failedPrepare:
                .transferFailed(.init(sub: "sub-A", retryStep: .prepare, reason: .invalidRequest, failures: 2))
            case .failedComplete:
                .transferFailed(
                    .init(sub: "sub-A", retryStep: .complete(transferSub: "xfer-1"), reason: .invalidGrant, failures: 1)
                )
            case .revoked: .revoked(.init(sub: "sub-A", previousSub: nil))
            case .deleted: .deleted(.init(sub: "sub-B", previousSub: "sub-A"))
            }
        }

        var testDescription: String { rawValue }
    }

    enum Input: String, CaseIterable, CustomTestStringConvertible {
        case beginPreparation
        case beginPreparationBeforeTransfer
        case transferIdObtained
        case otherTransferIdObtained
        case beginCompletion
        case newSub
        case newSubWithoutEmail
        case otherNewSub
        case signIn
        case signInOtherTransferSub
        case signInOtherSub
        case stepFailed
        case nextTransferAfterWindow
        case nextTransferInWindow
        case nextTransferUnrecordedWindow
        case consentRevoked
        case accountDeleted

        var event: TransferEvent {
            switch self {
            case .beginPreparation: .beginPreparation(windowEndsAt: windowEndsAt)
            case .beginPreparationBeforeTransfer: .beginPreparation(windowEndsAt: nil)
            case .transferIdObtained: .transferIdentifierObtained(transferSub: "xfer-1")
            case .otherTransferIdObtained: .transferIdentifierObtained(transferSub: "xfer-2")
            case .beginCompletion: .beginCompletion(windowEndsAt: windowEndsAt)
            case .newSub: .newSubObtained(sub: "sub-B", email: "b@privaterelay.appleid.com")
            case .newSubWithoutEmail: .newSubObtained(sub: "sub-B", email: nil)
            case .otherNewSub: .newSubObtained(sub: "sub-C", email: nil)
            case .signIn: .signedInWithTransferSub(transferSub: "xfer-1", sub: "sub-B", email: "b@example.com")
            case .signInOtherTransferSub: .signedInWithTransferSub(transferSub: "xfer-2", sub: "sub-B", email: nil)
            case .signInOtherSub: .signedInWithTransferSub(transferSub: "xfer-1", sub: "sub-C", email: nil)
            case .stepFailed: .stepFailed(reason: .invalidRequest)
            case .nextTransferAfterWindow: .beginNextTransfer(windowEndsAt: now - 1, migratedAt: now - 90 * 86_400)
            case .nextTransferInWindow: .beginNextTransfer(windowEndsAt: now + 1, migratedAt: now - 10)
            // Migrated by sign-in before any run recorded the window: bounded by the migration.
            case .nextTransferUnrecordedWindow: .beginNextTransfer(windowEndsAt: nil, migratedAt: now - 59 * 86_400)
            case .consentRevoked: .consentRevoked
            case .accountDeleted: .accountDeleted
            }
        }

        var testDescription: String { rawValue }
    }

    enum Expected: Equatable {
        case moves(to: TransferState, effects: [TransferEffect] = [])
        /// The state stays and the step's call is handed out.
        case call(TransferEffect)
        case replay
        case refused(TransitionError.Code)
    }

    static let transferredToB = TransferState.transferred(
        .init(sub: "sub-B", previousSub: "sub-A", transferSub: "xfer-1")
    )
    static let relinkToB = TransferEffect.relinkAppleAccount(from: "sub-A", to: "sub-B")

    /// The specification, row by row. Any pair not listed is refused as not allowed.
    static func expected(_ sample: Sample, _ input: Input) -> Expected {
        switch (sample, input) {
        case (.revoked, .consentRevoked), (.revoked, .accountDeleted), (.deleted, .consentRevoked),
            (.deleted, .accountDeleted):
            return .replay
        case (.revoked, _), (.deleted, _):
            return .refused(.notAllowed)

        case (.transferred, .consentRevoked):
            return .moves(to: .revoked(.init(sub: "sub-B", previousSub: "sub-A")))
        case (.transferred, .accountDeleted):
            return .moves(to: .deleted(.init(sub: "sub-B", previousSub: "sub-A")))
        case (_, .consentRevoked):
            return .moves(to: .revoked(.init(sub: "sub-A", previousSub: nil)))
        case (_, .accountDeleted):
            return .moves(to: .deleted(.init(sub: "sub-A", previousSub: nil)))

        case (.linked, .beginPreparation), (.linked, .beginPreparationBeforeTransfer),
            (.failedPrepare, .beginPreparation), (.failedPrepare, .beginPreparationBeforeTransfer):
            return .call(.requestTransferIdentifier(sub: "sub-A"))
        case (.linked, .transferIdObtained), (.failedPrepare, .transferIdObtained):
            return .moves(to: .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-1")))
        case (.linked, .otherTransferIdObtained), (.failedPrepare, .otherTransferIdObtained):
            return .moves(to: .transferPrepared(.init(sub: "sub-A", transferSub: "xfer-2")))
        case (.prepared, .transferIdObtained):
            return .replay
        case (.prepared, .otherTransferIdObtained):
            return .refused(.conflict)
        case (.linked, .stepFailed):
            return .moves(
                to: .transferFailed(.init(sub: "sub-A", retryStep: .prepare, reason: .invalidRequest, failures: 1))
            )
        case (.failedPrepare, .stepFailed):
            return .moves(
                to: .transferFailed(.init(sub: "sub-A", retryStep: .prepare, reason: .invalidRequest, failures: 3))
            )

        case (.prepared, .beginCompletion), (.failedComplete, .beginCompletion):
            return .call(.exchangeTransferIdentifier(transferSub: "xfer-1"))
        case (.prepared, .newSub), (.failedComplete, .newSub):
            return .moves(to: transferredToB, effects: [relinkToB, .updateEmail("b@privaterelay.appleid.com")])
        case (.prepared, .newSubWithoutEmail), (.failedComplete, .newSubWithoutEmail):
            return .moves(to: transferredToB, effects: [relinkToB])
        case (.prepared, .otherNewSub), (.failedComplete, .otherNewSub):
            return .moves(
                to: .transferred(.init(sub: "sub-C", previousSub: "sub-A", transferSub: "xfer-1")),
                effects: [.relinkAppleAccount(from: "sub-A", to: "sub-C")]
            )
        case (.prepared, .signIn), (.failedComplete, .signIn):
            return .moves(to: transferredToB, effects: [relinkToB, .updateEmail("b@example.com")])
        case (.prepared, .signInOtherSub), (.failedComplete, .signInOtherSub):
            return .moves(
                to: .transferred(.init(sub: "sub-C", previousSub: "sub-A", transferSub: "xfer-1")),
                effects: [.relinkAppleAccount(from: "sub-A", to: "sub-C")]
            )
        case (.prepared, .signInOtherTransferSub), (.failedComplete, .signInOtherTransferSub):
            return .refused(.conflict)
        case (.prepared, .stepFailed):
            return .moves(
                to: .transferFailed(
                    .init(
                        sub: "sub-A",
                        retryStep: .complete(transferSub: "xfer-1"),
                        reason: .invalidRequest,
                        failures: 1
                    )
                )
            )
        case (.failedComplete, .stepFailed):
            return .moves(
                to: .transferFailed(
                    .init(
                        sub: "sub-A",
                        retryStep: .complete(transferSub: "xfer-1"),
                        reason: .invalidRequest,
                        failures: 2
                    )
                )
            )

        // Repeats after the migration are answered as done, unless they name other ids.
        case (.transferred, .newSub), (.transferred, .newSubWithoutEmail), (.transferred, .signIn):
            return .replay
        case (.transferred, .otherNewSub), (.transferred, .signInOtherTransferSub), (.transferred, .signInOtherSub):
            return .refused(.conflict)

        // A later transfer starts from the id the finished one gave, once its window has closed.
        case (.transferred, .nextTransferAfterWindow):
            return .moves(to: .linked(.init(sub: "sub-B")), effects: [.retireFinishedTransfer])
        case (.transferred, .nextTransferInWindow), (.transferred, .nextTransferUnrecordedWindow):
            return .refused(.deadlineNotReached)

        default:
            return .refused(.notAllowed)
        }
    }

    @Test("each pair is its defined transition or a refusal", arguments: Sample.allCases, Input.allCases)
    func everyPair(sample: Sample, input: Input) {
        var machine = TransferStateMachine(state: sample.state)
        let before = machine
        let event = input.event
        switch Self.expected(sample, input) {
        case .moves(let next, let effects):
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine.state == next)
            #expect(
                transition
                    == TransferTransition(
                        from: sample.state.status,
                        to: next.status,
                        event: event.name,
                        effects: effects,
                        stateChanged: true,
                        isReplay: false
                    )
            )
        case .call(let effect):
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine == before, "starting a step changes nothing")
            #expect(transition?.effects == [effect])
            #expect(transition?.stateChanged == false)
            #expect(transition?.isReplay == false)
        case .replay:
            let transition = try? machine.apply(event, now: Self.now)
            #expect(machine == before, "a replay changes nothing")
            #expect(transition?.isReplay == true)
            #expect(transition?.stateChanged == false)
            #expect(transition?.effects == [])
        case .refused(let code):
            let error = #expect(throws: TransitionError.self) { try machine.apply(event, now: Self.now) }
            #expect(error?.code == code)
            #expect(error?.state == sample.state.status.rawValue)
            #expect(error?.event == event.name)
            #expect(machine == before, "a refused event changes nothing")
        }
    }

    /// What `getCredentialState` answers for each id against each state (docs/apple-protocol.md §3.5).
    @Test("credential state of each known id in each state", arguments: Sample.allCases)
    func credentialState(sample: Sample) {
        let expected: [String: AppleCredentialState]
        switch sample {
        case .linked, .prepared, .failedPrepare, .failedComplete:
            expected = ["sub-A": .authorized, "sub-B": .notFound, "xfer-1": .notFound]
        case .transferred:
            expected = ["sub-A": .transferred, "sub-B": .authorized, "xfer-1": .notFound]
        case .revoked:
            expected = ["sub-A": .revoked, "sub-B": .notFound, "xfer-1": .notFound]
        case .deleted:
            expected = ["sub-A": .revoked, "sub-B": .revoked, "xfer-1": .notFound]
        }
        let machine = TransferStateMachine(state: sample.state)
        for (userID, state) in expected {
            #expect(machine.credentialState(for: userID) == state, "\(userID)")
            #expect(AppleCredentialState(userID: userID, link: sample.state) == state, "\(userID)")
        }
        #expect(machine.credentialState(for: "") == .notFound)
    }

    @Test("an id linked to no account is not found; raw values and names are Apple's")
    func credentialStateVocabulary() {
        #expect(AppleCredentialState(userID: "sub-A", link: nil) == .notFound)
        #expect(AppleCredentialState.revoked.rawValue == 0)
        #expect(AppleCredentialState.authorized.rawValue == 1)
        #expect(AppleCredentialState.notFound.rawValue == 2)
        #expect(AppleCredentialState.transferred.rawValue == 3)
        #expect(AppleCredentialState.allCases.map(\.name) == ["revoked", "authorized", "notFound", "transferred"])
    }

    @Test(
        "an earlier window ends when recorded, never later than 60 days after the migration",
        arguments: [
            (Int64?.none, Int64(1_000), Int64(1_000) + TransferStateMachine.windowLength),
            (Int64?.some(2_000), Int64(1_000), Int64(2_000)),
            // A recorded end after migration + 60 days came from a mistaken acceptance time.
            (
                Int64?.some(1_000 + TransferStateMachine.windowLength + 5), Int64(1_000),
                Int64(1_000) + TransferStateMachine.windowLength
            ),
            (Int64?.none, Int64.max - 1, Int64.max),
        ]
    )
    func earlierWindowEnd(recorded: Int64?, migratedAt: Int64, expected: Int64) {
        #expect(TransferStateMachine.earlierWindowEnd(recorded: recorded, migratedAt: migratedAt) == expected)
    }

    /// A -> B, then B -> C: the same account through two transfers, one event at a time.
    @Test("a migrated account is prepared and migrated again by a later transfer")
    func secondTransfer() throws {
        var machine = TransferStateMachine(linkedTo: "sub-A")
        _ = try machine.apply(.transferIdentifierObtained(transferSub: "xfer-AB"), now: Self.now)
        _ = try machine.apply(.newSubObtained(sub: "sub-B", email: nil), now: Self.now)
        let later = Self.now + TransferStateMachine.windowLength
        let retire = try machine.apply(.beginNextTransfer(windowEndsAt: later - 1, migratedAt: Self.now), now: later)
        #expect(retire.effects == [.retireFinishedTransfer])
        #expect(machine.state == .linked(.init(sub: "sub-B")))
        let begin = try machine.apply(.beginPreparation(windowEndsAt: nil), now: later)
        #expect(begin.effects == [.requestTransferIdentifier(sub: "sub-B")])
        _ = try machine.apply(.transferIdentifierObtained(transferSub: "xfer-BC"), now: later)
        let done = try machine.apply(.newSubObtained(sub: "sub-C", email: nil), now: later)
        #expect(done.effects == [.relinkAppleAccount(from: "sub-B", to: "sub-C")])
        #expect(machine.state == .transferred(.init(sub: "sub-C", previousSub: "sub-B", transferSub: "xfer-BC")))
        #expect(machine.credentialState(for: "sub-B") == .transferred)
        #expect(machine.credentialState(for: "sub-C") == .authorized)
    }
}
