import Foundation
import Testing

@testable import UpgradeMachines

/// The stored form of both machines' states: every state survives the round trip, and a record
/// that no state would write is refused with the field named.
@Suite("State machines: persisted records")
struct StateMachinePersistenceTests {
    @Test("every upgrade state round-trips", arguments: UpgradeStateMachineTests.Sample.allCases)
    func upgradeRoundTrip(sample: UpgradeStateMachineTests.Sample) throws {
        let record = sample.state.persisted
        #expect(record.status == sample.state.status.rawValue)
        #expect(try UpgradeState(persisted: record) == sample.state)
        let json = try JSONEncoder().encode(record)
        #expect(
            try UpgradeState(persisted: JSONDecoder().decode(UpgradeState.Persisted.self, from: json)) == sample.state
        )
    }

    @Test("every transfer state round-trips", arguments: TransferStateMachineTests.Sample.allCases)
    func transferRoundTrip(sample: TransferStateMachineTests.Sample) throws {
        let record = sample.state.persisted
        #expect(record.status == sample.state.status.rawValue)
        #expect(try TransferState(persisted: record) == sample.state)
        let json = try JSONEncoder().encode(record)
        #expect(
            try TransferState(persisted: JSONDecoder().decode(TransferState.Persisted.self, from: json)) == sample.state
        )
    }

    @Test("the flat upgrade record holds exactly the fields of its status")
    func upgradeRecordShape() {
        let stepUp = UpgradeState.stepUpRequired(.init(deadline: 10, sessionDeadline: 20, failedAttempts: 2))
        #expect(
            stepUp.persisted
                == UpgradeState.Persisted(
                    status: "stepUpRequired",
                    deadline: 10,
                    sessionDeadline: 20,
                    failedAttempts: 2
                )
        )
        #expect(
            UpgradeState.failed(.init(reason: .nonceMismatch)).persisted
                == UpgradeState.Persisted(status: "failed", failureReason: "nonce-mismatch")
        )
        #expect(
            UpgradeState.cancelled(.init(reason: .userInteractionRequired)).persisted
                == UpgradeState.Persisted(status: "cancelled", cancelCode: 100)
        )
        #expect(UpgradeState.expired.persisted == UpgradeState.Persisted(status: "expired"))
    }

    @Test(
        "upgrade records no state would write are refused",
        arguments: [
            (UpgradeState.Persisted(status: "pending"), "unknown status"),
            (UpgradeState.Persisted(status: "started"), "deadline is missing"),
            (UpgradeState.Persisted(status: "started", deadline: 5, sub: "s"), "sub does not belong to this status"),
            (
                UpgradeState.Persisted(status: "stepUpRequired", deadline: 5, sessionDeadline: 9),
                "failedAttempts is missing"
            ),
            (
                UpgradeState.Persisted(status: "stepUpRequired", deadline: 5, sessionDeadline: 9, failedAttempts: -1),
                "failedAttempts is negative (-1)"
            ),
            (
                UpgradeState.Persisted(status: "stepUpRequired", deadline: 10, sessionDeadline: 9, failedAttempts: 0),
                "deadline 10 is after sessionDeadline 9"
            ),
            (UpgradeState.Persisted(status: "converting", deadline: 5, sub: ""), "sub is empty"),
            (
                UpgradeState.Persisted(status: "completed", deadline: 5, sub: "s"),
                "deadline does not belong to this status"
            ),
            (
                UpgradeState.Persisted(status: "failed", failureReason: "invalid-code"),
                "'invalid-code' is not a reason an upgrade can fail with"
            ),
            (
                UpgradeState.Persisted(status: "failed", failureReason: "wrong-password"),
                "'wrong-password' is not a reason an upgrade can fail with"
            ),
            (UpgradeState.Persisted(status: "cancelled", cancelCode: 2), "2 is not an ASExtensionError code"),
            (UpgradeState.Persisted(status: "expired", cancelCode: 1), "cancelCode does not belong to this status"),
        ]
    )
    func upgradeRecordRefused(record: UpgradeState.Persisted, problem: String) {
        #expect(throws: PersistedStateError(machine: "upgrade", status: record.status, problem: problem)) {
            try UpgradeState(persisted: record)
        }
    }

    @Test(
        "transfer records no state would write are refused",
        arguments: [
            (TransferState.Persisted(status: "migrating", sub: "a"), "unknown status"),
            (TransferState.Persisted(status: "linked", sub: ""), "sub is empty"),
            (
                TransferState.Persisted(status: "linked", sub: "a", transferSub: "x"),
                "transferSub does not belong to this status"
            ),
            (TransferState.Persisted(status: "transferPrepared", sub: "a"), "transferSub is missing"),
            (TransferState.Persisted(status: "transferred", sub: "b", transferSub: "x"), "previousSub is missing"),
            (
                TransferState.Persisted(status: "transferFailed", sub: "a", failureReason: "rejected", failures: 1),
                "retryStep is missing"
            ),
            (
                TransferState.Persisted(
                    status: "transferFailed",
                    sub: "a",
                    retryStep: "exchange",
                    failureReason: "rejected",
                    failures: 1
                ),
                "'exchange' is not a transfer step (prepare or complete)"
            ),
            (
                TransferState.Persisted(
                    status: "transferFailed",
                    sub: "a",
                    retryStep: "complete",
                    failureReason: "rejected",
                    failures: 1
                ),
                "transferSub is missing"
            ),
            (
                TransferState.Persisted(
                    status: "transferFailed",
                    sub: "a",
                    transferSub: "x",
                    retryStep: "prepare",
                    failureReason: "rejected",
                    failures: 1
                ),
                "transferSub does not belong to this status"
            ),
            (
                TransferState.Persisted(
                    status: "transferFailed",
                    sub: "a",
                    retryStep: "prepare",
                    failureReason: "invalid_request",
                    failures: 1
                ),
                "'invalid_request' is not a transfer failure reason"
            ),
            (
                TransferState.Persisted(
                    status: "transferFailed",
                    sub: "a",
                    retryStep: "prepare",
                    failureReason: "rejected",
                    failures: 0
                ),
                "failures is 0; a failed step has failed at least once"
            ),
            (TransferState.Persisted(status: "revoked", sub: "a", previousSub: ""), "previousSub is empty"),
            (
                TransferState.Persisted(status: "deleted", sub: "a", transferSub: "x"),
                "transferSub does not belong to this status"
            ),
        ]
    )
    func transferRecordRefused(record: TransferState.Persisted, problem: String) {
        #expect(throws: PersistedStateError(machine: "transfer", status: record.status, problem: problem)) {
            try TransferState(persisted: record)
        }
    }

    @Test("a restored machine carries on where the stored one stopped")
    func restoreAndContinue() throws {
        var machine = UpgradeStateMachine.start(now: 1_000)
        _ = try machine.apply(.passwordEvaluated(.accepted(secondFactor: true)), now: 1_001)
        _ = try machine.apply(.stepUpEvaluated(.rejected(reason: .invalidCode)), now: 1_002)
        let stored = machine.state.persisted

        var restored = UpgradeStateMachine(state: try UpgradeState(persisted: stored))
        #expect(restored == machine)
        #expect(restored.attemptsRemaining == 4)
        _ = try restored.apply(.stepUpEvaluated(.accepted), now: 1_003)
        #expect(restored.status == .awaitingAppleCredential)
    }

    @Test("the refusal names the machine, the status and the field")
    func errorDescription() {
        let error = #expect(throws: PersistedStateError.self) {
            try UpgradeState(persisted: .init(status: "converting", deadline: 1))
        }
        #expect(error?.description == "cannot restore upgrade state 'converting': sub is missing")
    }
}
