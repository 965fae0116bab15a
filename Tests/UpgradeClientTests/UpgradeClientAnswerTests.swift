import Foundation
import Testing
import UpgradeAPI
import UpgradeClient
import UpgradeEngine
import UpgradeTestSupport

@testable import AccountModificationExtension

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client keeps of the server's answers, what it refuses before any request, and what it
/// sends of Apple's first authorization: each against the real server on loopback.
@Suite("UpgradeClient: errors, local refusals, forwarded fields")
struct UpgradeClientAnswerTests {
    func refusal(_ call: () async throws -> Void) async -> UpgradeClientError? {
        await #expect(throws: UpgradeClientError.self) { try await call() }
    }

    @Test("a wrong code keeps status, type, detail, result, attempts left, the upgrade and the request id")
    func wrongCodeKeepsEverything() async throws {
        let harness = try TicketHarness(.sqlite)
        let client = UpgradeClient(baseURL: try #require(URL(string: harness.server.base)))
        let first = try await client.startUpgrade(
            username: DevelopmentEnvironment.demoUsername,
            password: DevelopmentEnvironment.demoPassword,
            serviceIdentifier: "s"
        )
        guard case .twoFactorAuthRequired(let id, let attempts) = first else {
            Issue.record("\(first)")
            return
        }
        #expect(attempts == 5, "the server says how many codes it takes")
        let wrong = try #require(await refusal { _ = try await client.stepUp(upgradeID: id, code: "000000") })
        #expect(wrong.kind == .refused && wrong.status == 401)
        #expect(wrong.slug == "invalid-code" && wrong.problemType.hasPrefix("https://"))
        #expect(wrong.title?.isEmpty == false && wrong.detail?.isEmpty == false)
        #expect(wrong.result == "twoFactorAuthRequired" && wrong.attemptsRemaining == 4)
        #expect(wrong.upgradeID == id && wrong.upgradeStatus == "stepUpRequired")
        #expect(wrong.mayTryAnotherCode && wrong.extensionErrorCode == .failed)
        let requestID = try #require(wrong.requestID)
        let logged = harness.server.logs.lines.withLock { $0.contains { $0.contains(requestID) } }
        #expect(logged, "the request id finds the request in the server's log")
        #expect("\(wrong)".contains(requestID) && !"\(wrong)".contains("000000"))
    }

    @Test("delayed attempts keep retryAfter; a broken password rule keeps the rule")
    func retryAfterAndRule() async throws {
        let harness = try TicketHarness(.sqlite)
        let client = UpgradeClient(baseURL: try #require(URL(string: harness.server.base)))
        var delayed: UpgradeClientError?
        for _ in 0..<5 where delayed == nil {
            let error = await refusal {
                _ = try await client.startUpgrade(username: "plain", password: "wrong", serviceIdentifier: "s")
            }
            if error?.slug == "rate-limited" { delayed = error }
        }
        let limited = try #require(delayed, "failures past the third are delayed")
        #expect(limited.status == 429 && (limited.retryAfter ?? 0) >= 1)

        let weak = try #require(
            await refusal {
                _ = try await client.changePassword(
                    username: "other",
                    password: "pw-other",
                    newPassword: "short",
                    serviceIdentifier: "s"
                )
            }
        )
        #expect(weak.status == 422 && weak.slug == "password-policy")
        #expect(weak.rule?.isEmpty == false, "the rule broken is named")
        #expect(weak.requestID != nil)
    }

    @Test("Retry-After from the header alone; an error that is not a problem document keeps its status")
    func headerAndNonProblem() async throws {
        let harness = try TicketHarness(.sqlite)
        let faulty = FaultyTransport([("/v1/upgrades", .busy(retryAfter: "7"))])
        let busy = try #require(
            await refusal {
                _ = try await faulty.client(harness.server.base).startUpgrade(
                    username: "plain",
                    password: "pw-plain",
                    serviceIdentifier: "s"
                )
            }
        )
        #expect(busy.status == 503 && busy.slug == "server-busy" && busy.retryAfter == 7)
        #expect(busy.requestID == "busy-request")

        let proxy = UpgradeClient(baseURL: try #require(URL(string: harness.server.base))) { request in
            let response = HTTPURLResponse(
                url: request.url!,
                statusCode: 502,
                httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "text/html", "X-Request-Id": "proxy-1"]
            )!
            return (Data("<html>Bad Gateway</html>".utf8), response)
        }
        let gateway = try #require(await refusal { _ = try await proxy.stepUp(upgradeID: "u", code: "123456") })
        #expect(gateway.kind == .unexpectedAnswer && gateway.status == 502 && gateway.requestID == "proxy-1")
        #expect(gateway.problemType == "about:blank" && gateway.slug.isEmpty)
    }

    @Test("an empty password without a ticket is refused before any request")
    func emptyPasswordRefusedLocally() async throws {
        let harness = try TicketHarness(.sqlite)
        let faulty = FaultyTransport()
        let client = faulty.client(harness.server.base)
        for ticket in [nil, ""] as [String?] {
            let upgrade = await refusal {
                _ = try await client.startUpgrade(
                    username: "plain",
                    password: "",
                    ticket: ticket,
                    serviceIdentifier: "s"
                )
            }
            #expect(upgrade?.kind == .invalidArgument && upgrade?.status == 0)
            let change = await refusal {
                _ = try await client.changePassword(
                    username: "plain",
                    password: "",
                    ticket: ticket,
                    newPassword: "abcdEf-ghijK1-lmnoPq",
                    serviceIdentifier: "s"
                )
            }
            #expect(change?.kind == .invalidArgument)
        }
        #expect(faulty.sent.isEmpty, "nothing was sent")
        let attempts = try harness.server.application.store.read { try $0.auditEvents(AuditSearch()) }
        #expect(!attempts.contains { $0.event.hasPrefix("upgrade.") || $0.event.hasPrefix("password") })
    }

    @Test("email and fullName go with the credential when Apple gave them, only their filled-in parts")
    func forwardsFirstAuthorization() async throws {
        let harness = try TicketHarness(.sqlite)
        let server = harness.server
        let faulty = FaultyTransport()
        let client = faulty.client(server.base)
        // Two accounts, two upgrades: one with Apple's name and email, one without.
        try server.addAccount("second", password: "pw-second")
        let secondUser = try server.development.emulator.createUser(email: "second@example.com", fullName: "Second")

        var name = PersonNameComponents()
        name.givenName = "Ada"
        name.familyName = "Lovelace"
        name.nickname = ""
        name.middleName = String(repeating: "m", count: 300)
        let first = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        guard case .readyForApple(let id, let state, let nonce) = first else {
            Issue.record("\(first)")
            return
        }
        let sheet = try FakeSystem.emulatorCredential(server, state: state, nonce: nonce)
        _ = try await client.submitAppleCredential(
            upgradeID: id,
            identityToken: String(decoding: try #require(sheet.identityToken), as: UTF8.self),
            authorizationCode: String(decoding: try #require(sheet.authorizationCode), as: UTF8.self),
            state: try #require(sheet.state),
            user: sheet.user,
            email: "ada@privaterelay.appleid.com",
            fullName: name
        )
        let sent = try #require(faulty.sent("/apple-credential").first?.json)
        #expect(sent["email"] as? String == "ada@privaterelay.appleid.com")
        #expect(
            sent["fullName"] as? [String: String] == ["givenName": "Ada", "familyName": "Lovelace"],
            "empty and over-long parts are left out"
        )

        let second = try await client.startUpgrade(username: "second", password: "pw-second", serviceIdentifier: "s")
        guard case .readyForApple(let secondID, let secondState, let secondNonce) = second else {
            Issue.record("\(second)")
            return
        }
        let authorization = try server.development.emulator.authorize(
            userID: secondUser,
            clientID: DevelopmentEnvironment.clientID,
            nonce: secondNonce,
            state: secondState,
            emailMode: .hidden
        )
        _ = try await client.submitAppleCredential(
            upgradeID: secondID,
            identityToken: authorization.identityToken,
            authorizationCode: authorization.authorizationCode,
            state: secondState,
            user: authorization.user,
            email: nil,
            fullName: PersonNameComponents()
        )
        let bare = try #require(faulty.sent("/apple-credential").last?.json)
        #expect(bare["email"] == nil && bare["fullName"] == nil, "nothing Apple did not give is sent")
    }

    @Test("an app's test double: every result and error has a public initializer")
    func testDouble() async throws {
        struct Scripted: UpgradeServing {
            func startUpgrade(
                username: String,
                password: String,
                ticket: String?,
                serviceIdentifier: String
            ) async throws
                -> UpgradeStep
            { .twoFactorAuthRequired(upgradeID: "u1", attemptsRemaining: 5) }
            func stepUp(upgradeID: String, code: String) async throws -> UpgradeStep {
                throw UpgradeClientError(
                    kind: .refused,
                    status: 401,
                    problemType: "https://siwa-upgrade.dev/problems/invalid-code",
                    result: "twoFactorAuthRequired",
                    attemptsRemaining: 4,
                    upgradeID: upgradeID,
                    upgradeStatus: "stepUpRequired",
                    requestID: "r1"
                )
            }
            func stepUp(upgradeID: String, recoveryCode: String) async throws -> UpgradeStep {
                .readyForApple(upgradeID: upgradeID, state: "s", nonce: "n")
            }
            func submitAppleCredential(
                upgradeID: String,
                identityToken: String,
                authorizationCode: String,
                state: String,
                user: String?,
                email: String?,
                fullName: PersonNameComponents?
            ) async throws -> CompletedUpgrade { CompletedUpgrade(upgradeID: upgradeID, accountID: "a1") }
            func cancel(upgradeID: String, reason: ExtensionErrorCode) async throws {}
            func status(upgradeID: String) async throws -> UpgradeReport {
                UpgradeReport(upgradeID: upgradeID, status: "completed")
            }
            func changePassword(
                username: String,
                password: String,
                ticket: String?,
                newPassword: String,
                serviceIdentifier: String
            ) async throws -> PasswordChangeStep { .completed(id: "c1") }
            func stepUpPasswordChange(id: String, code: String) async throws -> PasswordChangeStep {
                .twoFactorAuthRequired(id: id, attemptsRemaining: 4)
            }
            func stepUpPasswordChange(id: String, recoveryCode: String) async throws -> PasswordChangeStep {
                .completed(id: id)
            }
            func cancelPasswordChange(id: String, reason: ExtensionErrorCode) async throws {}
        }
        let upgrades: any UpgradeServing = Scripted()
        #expect(try await upgrades.startUpgrade(username: "u", password: "p", serviceIdentifier: "s").upgradeID == "u1")
        let wrong = await refusal { _ = try await upgrades.stepUp(upgradeID: "u1", code: "1") }
        #expect(wrong?.slug == "invalid-code" && wrong?.mayTryAnotherCode == true)
        #expect(try await upgrades.status(upgradeID: "u1").isCompleted)
    }
}
