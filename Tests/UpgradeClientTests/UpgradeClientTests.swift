import AppleEmulator
import Foundation
import Glibc
import Testing
import UpgradeAPI
import UpgradeClient
import UpgradeEngine
import UpgradeTestSupport

@testable import AccountModificationExtension

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The extension's library against the real server on loopback (in process, with the emulator as
/// Apple): each path an Account Authentication Modification extension takes, and how each refusal
/// maps to the code the extension cancels with.
@Suite("UpgradeClient against the server")
struct UpgradeClientTests {
    /// A server with an admin token file and a client pointed at it.
    struct Fixture {
        let harness: TicketHarness
        let client: UpgradeClient
        var server: DevServer { harness.server }

        init(_ backend: Backend = .sqlite) throws {
            harness = try TicketHarness(backend)
            client = UpgradeClient(baseURL: try #require(URL(string: harness.server.base)))
        }

        /// Apple's sheet, as the emulator's user, for the given state and nonce.
        func appleSheet(state: String, nonce: String) throws -> AppleAuthorization {
            try server.development.emulator.authorize(
                userID: server.development.appleUserID,
                clientID: DevelopmentEnvironment.clientID,
                nonce: nonce,
                state: state,
                emailMode: .hidden
            )
        }

        /// Signs in with Apple's sheet and sends the credential: what the extension does after
        /// `readyForApple`.
        func finish(_ step: UpgradeStep) async throws -> CompletedUpgrade {
            guard case .readyForApple(let id, let state, let nonce) = step else {
                Issue.record("expected readyForApple, got \(step)")
                throw CancellationError()
            }
            let sheet = try appleSheet(state: state, nonce: nonce)
            return try await client.submitAppleCredential(
                upgradeID: id,
                identityToken: sheet.identityToken,
                authorizationCode: sheet.authorizationCode,
                state: sheet.state ?? "",
                user: sheet.user
            )
        }

        func accountID(_ username: String) throws -> String {
            try #require(try server.application.store.read { try $0.account(username: try Username(username)) }?.id)
        }
    }

    /// What `call` threw, which must be an `UpgradeClientError`.
    func refusal(_ call: () async throws -> Void) async -> UpgradeClientError? {
        await #expect(throws: UpgradeClientError.self) { try await call() }
    }

    @Test("convert without UI: the saved password, Apple's sheet, completed; sending it again is the same answer")
    func convertWithoutUI() async throws {
        let fixture = try Fixture()
        let client = fixture.client
        let step = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        guard case .readyForApple(let id, let state, let nonce) = step else {
            Issue.record("\(step)")
            return
        }
        #expect(!state.isEmpty && !nonce.isEmpty)
        let completed = try await fixture.finish(step)
        #expect(completed.upgradeID == id)
        #expect(completed.accountID == (try fixture.accountID("plain")))
        #expect(try await fixture.finish(step) == completed, "a retried credential gets the same answer")

        // Converted: its password no longer starts anything.
        let again = await refusal {
            _ = try await fixture.client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        }
        #expect(again?.status == 401 && again?.problemType.hasSuffix("/invalid-credentials") == true)
        #expect(again?.extensionErrorCode == .failed)
    }

    @Test("convert with the step-up UI: a wrong code asks for the UI again, the right one goes on to Apple")
    func convertWithStepUp() async throws {
        let fixture = try Fixture()
        let demo = DevelopmentEnvironment.demoUsername
        let first = try await fixture.client.startUpgrade(
            username: demo,
            password: DevelopmentEnvironment.demoPassword,
            serviceIdentifier: "s"
        )
        guard case .twoFactorAuthRequired(let id, _) = first else {
            Issue.record("\(first)")
            return
        }
        let wrong = await refusal { _ = try await fixture.client.stepUp(upgradeID: id, code: "000000") }
        #expect(wrong?.status == 401 && wrong?.problemType.hasSuffix("/invalid-code") == true)
        #expect(wrong?.mayTryAnotherCode == true, "tries are left: ask again")
        #expect(wrong?.extensionErrorCode == .failed, "never userInteractionRequired: the UI is showing")
        let stepped = try await fixture.client.stepUp(upgradeID: id, code: fixture.server.totpCode())
        let completed = try await fixture.finish(stepped)
        #expect(completed.accountID == (try fixture.accountID(demo)))
    }

    @Test("a recovery code stands in for the TOTP code")
    func recoveryCode() async throws {
        let fixture = try Fixture()
        let demo = DevelopmentEnvironment.demoUsername
        let codes = RecoveryCodes.generate(count: 2)
        let accountID = try fixture.accountID(demo)
        try fixture.server.application.store.write { tx in
            try tx.insertRecoveryCodes(accountID: accountID, codeHashes: codes.map(RecoveryCodes.hash))
        }
        let first = try await fixture.client.startUpgrade(
            username: demo,
            password: DevelopmentEnvironment.demoPassword,
            serviceIdentifier: "s"
        )
        guard case .twoFactorAuthRequired(let id, _) = first else {
            Issue.record("\(first)")
            return
        }
        let stepped = try await fixture.client.stepUp(upgradeID: id, recoveryCode: codes[0])
        guard case .readyForApple = stepped else {
            Issue.record("\(stepped)")
            return
        }
        #expect(try await fixture.finish(stepped).accountID == accountID)
    }

    @Test("an in-app upgrade: an empty password and the app's ticket", arguments: Backend.all)
    func inAppUpgrade(_ backend: Backend) async throws {
        let fixture = try Fixture(backend)
        let ticket = try await fixture.harness.ticket("plain")
        let step = try await fixture.client.startUpgrade(
            username: "plain",
            password: "",
            ticket: ticket,
            serviceIdentifier: "s"
        )
        #expect(try await fixture.finish(step).accountID == (try fixture.accountID("plain")))
        // Spent: the same ticket is refused.
        let reused = await refusal {
            _ = try await fixture.client.startUpgrade(
                username: "plain",
                password: "",
                ticket: ticket,
                serviceIdentifier: "s"
            )
        }
        #expect(reused?.status == 401 && reused?.problemType.hasSuffix("/invalid-ticket") == true)
        #expect(reused?.extensionErrorCode == .failed)
        fixture.harness.expectNoSecrets([ticket])
    }

    @Test("refusals: wrong password, a cancelled upgrade, a bad request, an unreachable server")
    func refusals() async throws {
        let fixture = try Fixture()
        let client = fixture.client
        let wrong = await refusal {
            _ = try await client.startUpgrade(username: "plain", password: "nope", serviceIdentifier: "s")
        }
        #expect(wrong?.status == 401 && wrong?.extensionErrorCode == .failed)
        #expect(wrong?.detail?.isEmpty == false)
        #expect(wrong.map { "\($0)" }?.contains("nope") == false, "the description holds no password")

        let step = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        guard case .readyForApple(let id, let state, let nonce) = step else {
            Issue.record("\(step)")
            return
        }
        try await client.cancel(upgradeID: id, reason: .userCanceled)
        try await client.cancel(upgradeID: id, reason: .userCanceled)
        let sheet = try fixture.appleSheet(state: state, nonce: nonce)
        let late = await refusal {
            _ = try await client.submitAppleCredential(
                upgradeID: id,
                identityToken: sheet.identityToken,
                authorizationCode: sheet.authorizationCode,
                state: state,
                user: nil
            )
        }
        #expect(late?.status == 409 && late?.extensionErrorCode == .failed)

        let invalid = await refusal {
            _ = try await client.startUpgrade(username: "", password: "x", serviceIdentifier: "s")
        }
        #expect(invalid?.status == 422 && invalid?.problemType.hasSuffix("/validation") == true)

        let unknown = await refusal { _ = try await client.stepUp(upgradeID: "no-such-upgrade", code: "123456") }
        #expect(unknown?.status == 404 && unknown?.extensionErrorCode == .failed)

        // Nothing listens on a port just closed.
        let closed = UpgradeClient(baseURL: try #require(URL(string: "http://127.0.0.1:\(try Self.closedPort())")))
        let unreachable = await refusal {
            _ = try await closed.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        }
        #expect(
            unreachable?.status == 0 && unreachable?.kind == .unreachable && unreachable?.extensionErrorCode == .failed
        )
        #expect(unreachable?.problemType == "about:blank" && unreachable?.requestID == nil)
    }

    @Test("strong-password change: plain, a broken rule refused, the old password gone after")
    func changePassword() async throws {
        let fixture = try Fixture()
        let client = fixture.client
        let weak = await refusal {
            _ = try await client.changePassword(
                username: "plain",
                password: "pw-plain",
                newPassword: "short",
                serviceIdentifier: "s"
            )
        }
        #expect(weak?.status == 422 && weak?.problemType.hasSuffix("/password-policy") == true)
        #expect(weak?.extensionErrorCode == .failed)
        #expect(weak.map { "\($0)" }?.contains("short") == false, "the description holds no password")

        let strong = "abcdEf-ghijK1-lmnoPq"
        let step = try await client.changePassword(
            username: "plain",
            password: "pw-plain",
            newPassword: strong,
            serviceIdentifier: "s"
        )
        guard case .completed = step else {
            Issue.record("\(step)")
            return
        }
        let old = await refusal {
            _ = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        }
        #expect(old?.status == 401 && old?.extensionErrorCode == .failed)
        let upgrade = try await client.startUpgrade(username: "plain", password: strong, serviceIdentifier: "s")
        guard case .readyForApple = upgrade else {
            Issue.record("\(upgrade)")
            return
        }
    }

    @Test("strong-password change with TOTP: a wrong code asks for the UI again, the right one completes it")
    func changePasswordWithStepUp() async throws {
        let fixture = try Fixture()
        let client = fixture.client
        let demo = DevelopmentEnvironment.demoUsername
        let strong = "Qrst12-uvwxYz-abcdEf"
        let step = try await client.changePassword(
            username: demo,
            password: DevelopmentEnvironment.demoPassword,
            newPassword: strong,
            serviceIdentifier: "s"
        )
        guard case .twoFactorAuthRequired(let id, _) = step else {
            Issue.record("\(step)")
            return
        }
        let wrong = await refusal { _ = try await client.stepUpPasswordChange(id: id, code: "000000") }
        #expect(wrong?.status == 401 && wrong?.mayTryAnotherCode == true && wrong?.attemptsRemaining == 4)
        #expect(try await client.stepUpPasswordChange(id: id, code: fixture.server.totpCode()) == .completed(id: id))
        let upgrade = try await client.startUpgrade(username: demo, password: strong, serviceIdentifier: "s")
        guard case .twoFactorAuthRequired = upgrade else {
            Issue.record("\(upgrade)")
            return
        }
    }

    @Test("the library imports Foundation and nothing of the server")
    func importsFoundationOnly() throws {
        let sources = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Clients/UpgradeClient/Sources/UpgradeClient")
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.contains(" import ") {
                let module = line.split(separator: " ").last.map(String.init) ?? ""
                #expect(["Foundation", "FoundationNetworking"].contains(module), "\(file): \(line)")
            }
        }
    }

    /// A loopback port that was bound a moment ago and is closed now.
    static func closedPort() throws -> UInt16 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socket >= 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        try #require(bound)
        return UInt16(bigEndian: address.sin_port)
    }
}
