import Foundation
import Synchronization
import Testing
import UpgradeClient
import UpgradeEngine
import UpgradeTestSupport

@testable import AccountModificationExtension

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client forwards of Apple's first authorization (`email`, `fullName`) is exactly what the
/// server accepts: each input through the client, then what it sent through the server's own checks
/// (`DeviceGivenProfile`, `PersonName`); and an upgrade whose name and email the server would refuse
/// still completes.
@Suite("UpgradeClient: Apple's name and email checked as the server checks them")
struct UpgradeClientGivenProfileTests {
    /// The body of the last request.
    final class Recorder: Sendable {
        let body = Mutex<Data?>(nil)
    }

    /// What goes with the credential of Apple's first authorization.
    typealias Forwarded = (email: String?, name: [String: String]?)

    /// What the client sends of `email` and `name`, read off its request, which a fixed answer ends.
    static func sent(email: String?, name: [String: String]?) async throws -> Forwarded {
        let recorder = Recorder()
        let base = try #require(URL(string: "https://accounts.example.com"))
        let client = UpgradeClient(baseURL: base, retryPolicy: .never) { request in
            recorder.body.withLock { $0 = request.httpBody }
            let answer = #"{"id":"u","status":"completed","result":"success","accountId":"a"}"#
            let response = HTTPURLResponse(
                url: request.url ?? base,
                statusCode: 200,
                httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "application/json"]
            )!
            return (Data(answer.utf8), response)
        }
        _ = try await client.submitAppleCredential(
            upgradeID: "u",
            identityToken: "t",
            authorizationCode: "c",
            state: "s",
            user: nil,
            email: email,
            fullName: name.map(components)
        )
        let body = try #require(recorder.body.withLock { $0 })
        let json = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        return (json["email"] as? String, json["fullName"] as? [String: String])
    }

    static func components(_ parts: [String: String]) -> PersonNameComponents {
        var name = PersonNameComponents()
        name.namePrefix = parts["namePrefix"]
        name.givenName = parts["givenName"]
        name.middleName = parts["middleName"]
        name.familyName = parts["familyName"]
        name.nameSuffix = parts["nameSuffix"]
        name.nickname = parts["nickname"]
        return name
    }

    static let han = "漢"

    /// Each email, and whether the server takes it.
    static let emails: [(String, Bool)] = [
        ("ada@example.com", true),
        ("日本@例え.jp", true),
        ("a@" + String(repeating: "é", count: 159), true),
        // 162 characters, 322 bytes: the bound is in bytes.
        ("a@" + String(repeating: "é", count: 160), false),
        (String(repeating: "a", count: 309) + "@example.com", false),
        ("", false),
        ("no-at-sign", false),
        ("a@b@example.com", false),
        ("@example.com", false),
        ("ada@", false),
        ("ada lovelace@example.com", false),
        ("ada\u{7F}@example.com", false),
        ("ada\u{200B}@example.com", false),
        ("ada\u{A0}@example.com", false),
        ("ada\u{2028}@example.com", false),
    ]

    /// Each name, and the parts the client sends of it (nil: no `fullName` at all).
    static let names: [([String: String], [String: String]?)] = [
        (["givenName": "Ada", "familyName": "Lovelace"], ["givenName": "Ada", "familyName": "Lovelace"]),
        // 100 characters, 300 bytes.
        (["givenName": String(repeating: han, count: 100), "familyName": "Lovelace"], ["familyName": "Lovelace"]),
        (["namePrefix": String(repeating: "é", count: 200), "givenName": "Ada"], ["givenName": "Ada"]),
        (["givenName": "Ada", "nickname": "A\u{2028}B"], ["givenName": "Ada"]),
        (["givenName": "Ada", "familyName": "Love\u{2029}lace"], ["givenName": "Ada"]),
        (["givenName": "Ada\u{202E}", "familyName": "Lovelace"], ["familyName": "Lovelace"]),
        (["givenName": "Ada\u{2067}x", "nickname": "A"], ["nickname": "A"]),
        (["givenName": "Ada\u{7}"], nil),
        // Each part within its bound, the display name they form over it: the whole name goes.
        (["givenName": String(repeating: "a", count: 150), "familyName": String(repeating: "b", count: 150)], nil),
        (["givenName": String(repeating: "a", count: 129), "familyName": String(repeating: "b", count: 127)], nil),
        (
            ["givenName": String(repeating: "a", count: 128), "familyName": String(repeating: "b", count: 127)],
            ["givenName": String(repeating: "a", count: 128), "familyName": String(repeating: "b", count: 127)]
        ),
        // A Japanese name is formed unspaced: 256 bytes.
        (
            ["givenName": String(repeating: han, count: 43), "familyName": String(repeating: han, count: 42) + "a"],
            ["givenName": String(repeating: han, count: 43), "familyName": String(repeating: han, count: 42) + "a"]
        ),
        // White space only counts as absent, a line separator alone too; joiners are part of names.
        (["givenName": "   ", "nickname": "Ada"], ["nickname": "Ada"]),
        (["givenName": "\u{2028}", "nickname": "Ada"], ["nickname": "Ada"]),
        (
            ["givenName": "Zoë\u{200D}", "familyName": "\u{200C}Ng"],
            ["givenName": "Zoë\u{200D}", "familyName": "\u{200C}Ng"]
        ),
    ]

    @Test("an email is sent exactly when the server takes it", arguments: emails)
    func email(_ email: String, taken: Bool) async throws {
        let sent = try await Self.sent(email: email, name: nil).email
        #expect(sent == (taken ? email : nil))
        let server = try? DeviceGivenProfile(email: email, fullName: nil)
        #expect(sent == server?.email, "the client and the server agree")
    }

    @Test("a name's parts are sent as the server takes them", arguments: names)
    func name(_ parts: [String: String], expected: [String: String]?) async throws {
        let sent = try await Self.sent(email: nil, name: parts).name
        #expect(sent == expected)
        // What the client sends, the server takes; what it takes whole, the client sends whole.
        let kept = try PersonName(parts: sent ?? [:]).validated()
        var takenWhole = true
        var whole: PersonName?
        do {
            whole = try PersonName(parts: parts).validated()
        } catch {
            takenWhole = false
        }
        if takenWhole { #expect(kept == whole, "the client and the server agree") }
    }

    @Test("an upgrade whose name part and email the server would refuse completes, without them")
    func refusedLeftOut() async throws {
        let harness = try TicketHarness(.sqlite)
        let server = harness.server
        let faulty = FaultyTransport()
        let client = faulty.client(server.base)
        let step = try await client.startUpgrade(username: "plain", password: "pw-plain", serviceIdentifier: "s")
        guard case .readyForApple(let id, let state, let nonce) = step else {
            Issue.record("\(step)")
            return
        }
        let sheet = try FakeSystem.emulatorCredential(server, state: state, nonce: nonce)
        let name = Self.components([
            "givenName": String(repeating: Self.han, count: 100), "familyName": "Lovelace", "nickname": "A\u{2028}B",
        ])
        let completed = try await client.submitAppleCredential(
            upgradeID: id,
            identityToken: String(decoding: try #require(sheet.identityToken), as: UTF8.self),
            authorizationCode: String(decoding: try #require(sheet.authorizationCode), as: UTF8.self),
            state: try #require(sheet.state),
            user: sheet.user,
            email: "ada lovelace@example.com",
            fullName: name
        )
        #expect(completed.upgradeID == id)
        let sent = try #require(faulty.sent("/apple-credential").first?.json)
        #expect(sent["email"] == nil)
        #expect(sent["fullName"] as? [String: String] == ["familyName": "Lovelace"])
        let profile = try server.application.store.read { tx in
            try tx.account(username: try Username("plain")).flatMap { try tx.accountProfile(accountID: $0.id) }
        }
        #expect(profile?.displayName == "Lovelace" && profile?.email == nil)
    }
}
