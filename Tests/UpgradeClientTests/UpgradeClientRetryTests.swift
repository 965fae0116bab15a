import Foundation
import Testing
import UpgradeAPI
import UpgradeClient
import UpgradeEngine
import UpgradeTestSupport

@testable import AccountModificationExtension

/// Which calls the client repeats: those the server documents as safe to repeat (the Apple credential
/// with the same state, cancel, the upgrade's status) after a lost answer, a `503`,
/// `upgrade-in-progress` or Apple's keys out of reach, within the deadline; never start, step-up or a
/// password change.
@Suite("UpgradeClient: repeating what is safe to repeat")
struct UpgradeClientRetryTests {
    /// Short waits, so that a test spends little time in back-off.
    static let quick = RetryPolicy(deadline: 10, attemptTimeout: 5, initialBackoff: 0.05, maximumBackoff: 0.2)

    func refusal(_ call: () async throws -> Void) async -> UpgradeClientError? {
        await #expect(throws: UpgradeClientError.self) { try await call() }
    }

    @Test(
        "a lost answer to the Apple credential is asked for again with the same state: one conversion, one answer",
        arguments: Backend.all
    )
    func credentialAnswerLost(_ backend: Backend) async throws {
        let harness = try TicketHarness(backend)
        let server = harness.server
        let faulty = FaultyTransport([
            ("/apple-credential", .loseAnswer), ("/apple-credential", .busy(retryAfter: "0")),
            ("/apple-credential", .inProgress),
        ])
        let client = faulty.client(server.base, retryPolicy: Self.quick)
        let step = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        guard case .readyForApple(let id, let state, let nonce) = step else {
            Issue.record("\(step)")
            return
        }
        let sheet = try FakeSystem.emulatorCredential(server, state: state, nonce: nonce)
        let completed = try await client.submitAppleCredential(
            upgradeID: id,
            identityToken: String(decoding: try #require(sheet.identityToken), as: UTF8.self),
            authorizationCode: String(decoding: try #require(sheet.authorizationCode), as: UTF8.self),
            state: try #require(sheet.state),
            user: sheet.user
        )
        #expect(completed.upgradeID == id)
        let sent = faulty.sent("/apple-credential")
        #expect(sent.count == 4, "lost, busy, in progress, answered")
        #expect(Set(sent.map { $0.json["state"] as? String }) == [state], "always the same state")
        #expect(try await client.status(upgradeID: id).isCompleted)
        let trail = try server.application.store.read { try $0.auditEvents(AuditSearch()) }
        #expect(trail.filter { $0.upgradeID == id && $0.toStatus == "completed" }.count == 1, "converted once")
        let account = try #require(
            try server.application.store.read { try $0.account(username: try Username("plain")) }
        )
        #expect(account.credentialKind == .appleOnly)
    }

    @Test(
        "Apple's keys out of reach (502 apple-unavailable, the upgrade awaiting the credential): asked again after Retry-After"
    )
    func appleUnavailableRepeated() async throws {
        let harness = try TicketHarness(.sqlite)
        let server = harness.server
        let step = try await direct(server).startUpgrade(
            username: "plain",
            password: "pw-plain",
            serviceIdentifier: "s"
        )
        guard case .readyForApple(let id, let state, let nonce) = step else {
            Issue.record("\(step)")
            return
        }
        let sheet = try FakeSystem.emulatorCredential(server, state: state, nonce: nonce)
        func submit(_ client: UpgradeClient) async throws -> CompletedUpgrade {
            try await client.submitAppleCredential(
                upgradeID: id,
                identityToken: String(decoding: try #require(sheet.identityToken), as: UTF8.self),
                authorizationCode: String(decoding: try #require(sheet.authorizationCode), as: UTF8.self),
                state: try #require(sheet.state),
                user: sheet.user
            )
        }
        func keysDown(_ members: [String: String], retryAfter: String? = nil) -> FaultyTransport {
            FaultyTransport([
                (
                    "/apple-credential",
                    .problem(502, slug: "apple-unavailable", members: members, retryAfter: retryAfter)
                )
            ])
        }

        // A 502 that ended the upgrade, or that does not say the upgrade is still open, is final.
        for members in [["upgradeStatus": "failed"], [:]] {
            let ended = keysDown(members)
            let refused = await refusal { _ = try await submit(ended.client(server.base, retryPolicy: Self.quick)) }
            #expect(refused?.status == 502 && refused?.slug == "apple-unavailable")
            #expect(ended.sent("/apple-credential").count == 1, "not repeated: \(members)")
        }

        let outage = keysDown(["upgradeStatus": "awaitingAppleCredential", "id": id], retryAfter: "1")
        let clock = ContinuousClock()
        let began = clock.now
        let completed = try await submit(outage.client(server.base, retryPolicy: Self.quick))
        #expect(completed.upgradeID == id)
        #expect(outage.sent("/apple-credential").count == 2, "the outage, then the answer")
        #expect(clock.now - began >= .seconds(1), "waited the Retry-After, not the 0.05 s back-off")
        #expect(try await direct(server).status(upgradeID: id).isCompleted)
    }

    /// The client straight to the server.
    func direct(_ server: DevServer) -> UpgradeClient {
        FaultyTransport().client(server.base, retryPolicy: Self.quick)
    }

    @Test("cancel and the upgrade's status are repeated after transport failures and 503s")
    func cancelAndStatusRepeated() async throws {
        let harness = try TicketHarness(.sqlite)
        let faulty = FaultyTransport([
            ("/cancel", .loseAnswer), ("/cancel", .unreachable(.timedOut)),
            ("/cancel", .unreachable(.cannotConnectToHost)), ("/cancel", .busy(retryAfter: nil)),
        ])
        let client = faulty.client(harness.server.base, retryPolicy: Self.quick)
        let step = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        try await client.cancel(upgradeID: step.upgradeID, reason: .userCanceled)
        #expect(faulty.sent("/cancel").count == 5)

        let id = step.upgradeID
        let reads = FaultyTransport([(id, .busy(retryAfter: "0")), (id, .unreachable(.networkConnectionLost))])
        let view = try await reads.client(harness.server.base, retryPolicy: Self.quick).status(upgradeID: id)
        #expect(view == UpgradeReport(upgradeID: id, status: "cancelled"))
        #expect(reads.sent(id).count == 3)
    }

    @Test("start, step-up and a password change are sent once, whatever happens to the answer")
    func othersSentOnce() async throws {
        let harness = try TicketHarness(.sqlite)
        let faulty = FaultyTransport([
            ("/v1/upgrades", .loseAnswer), ("/step-up", .busy(retryAfter: "0")), ("/step-up", .inProgress),
            ("/v1/password-changes", .unreachable(.timedOut)),
        ])
        let client = faulty.client(harness.server.base, retryPolicy: Self.quick)
        let lost = await refusal {
            _ = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        }
        #expect(lost?.kind == .unreachable)
        #expect(faulty.sent("/v1/upgrades").count == 1)

        let demo = try await client.startUpgrade(
            username: DevelopmentEnvironment.demoUsername,
            password: DevelopmentEnvironment.demoPassword,
            serviceIdentifier: "s"
        )
        let busy = await refusal { _ = try await client.stepUp(upgradeID: demo.upgradeID, code: "000000") }
        #expect(busy?.status == 503)
        let inProgress = await refusal { _ = try await client.stepUp(upgradeID: demo.upgradeID, recoveryCode: "x") }
        #expect(inProgress?.slug == "upgrade-in-progress")
        #expect(faulty.sent("/step-up").count == 2)

        let change = await refusal {
            _ = try await client.changePassword(
                username: "plain",
                password: "pw-plain",
                newPassword: "abcdEf-ghijK1-lmnoPq",
                serviceIdentifier: "s"
            )
        }
        #expect(change?.kind == .unreachable && faulty.sent("/v1/password-changes").count == 1)
    }

    @Test("a repeated call gives up at its deadline with the last failure; a refusal is not repeated")
    func deadlineAndRefusals() async throws {
        let harness = try TicketHarness(.sqlite)
        let down = FaultyTransport(
            Array(repeating: ("/v1/upgrades/u", .unreachable(.cannotConnectToHost)), count: 1000)
        )
        let policy = RetryPolicy(deadline: 0.5, attemptTimeout: 1, initialBackoff: 0.05, maximumBackoff: 0.1)
        let gaveUp = await refusal {
            _ = try await down.client(harness.server.base, retryPolicy: policy).status(upgradeID: "u")
        }
        #expect(gaveUp?.kind == .unreachable)
        #expect(down.sent.count > 1, "tried more than once before the deadline")

        // A 404 is an answer: asked once.
        let faulty = FaultyTransport()
        let missing = await refusal {
            try await faulty.client(harness.server.base, retryPolicy: Self.quick).cancel(
                upgradeID: "no-such-upgrade",
                reason: .userCanceled
            )
        }
        #expect(missing?.status == 404 && faulty.sent.count == 1)

        // `never`: one attempt even for a repeatable call.
        let once = FaultyTransport([("/v1/upgrades/u", .busy(retryAfter: "0"))])
        _ = await refusal { _ = try await once.client(harness.server.base, retryPolicy: .never).status(upgradeID: "u") }
        #expect(once.sent.count == 1)
    }

    @Test("a cancelled task stops repeating and throws CancellationError")
    func cancellationStops() async throws {
        let harness = try TicketHarness(.sqlite)
        let down = FaultyTransport(Array(repeating: ("/v1/upgrades/u", .unreachable(.timedOut)), count: 100_000))
        let client = down.client(
            harness.server.base,
            retryPolicy: RetryPolicy(deadline: 3600, initialBackoff: 0.01, maximumBackoff: 0.01)
        )
        let task = Task { try await client.status(upgradeID: "u") }
        while down.sent.count < 3 { await Task.yield() }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
    }
}
