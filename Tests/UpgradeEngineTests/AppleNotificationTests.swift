import Foundation
import Testing

@testable import AppleEmulator
@testable import UpgradeEngine

@Suite("Apple server-to-server notifications")
struct AppleNotificationTests {
    static let clientID = "com.example.app"
    static let now: Int64 = 1_760_000_000

    /// An emulator with one user who authorized the app, so events can be raised for them.
    static func emulator(
        _ configure: (inout AppleIDEmulator.Configuration) -> Void = { _ in }
    ) throws -> (AppleIDEmulator, String) {
        var configuration = AppleIDEmulator.Configuration()
        configure(&configuration)
        let emulator = AppleIDEmulator(configuration: configuration, clock: { now })
        try emulator.addTeam("TEAMA12345")
        try emulator.addApp(clientID: clientID, teamID: "TEAMA12345")
        let user = try emulator.createUser(email: "alice@example.com")
        _ = try emulator.authorize(userID: user, clientID: clientID, nonce: "n", state: nil, emailMode: .hidden)
        return (emulator, user)
    }

    @Test("each event the emulator sends verifies, with events as a string or an object and either deletion spelling")
    func verifiesEveryShape() throws {
        for eventsAsString in [true, false] {
            for deletion in [AppleServerNotification.EventType("account-delete"), .accountDeleted] {
                let (emulator, user) = try Self.emulator {
                    $0.eventsAsString = eventsAsString
                    $0.accountDeletedEventType = deletion
                }
                try emulator.setEmailForwarding(userID: user, teamID: "TEAMA12345", enabled: false)
                try emulator.setEmailForwarding(userID: user, teamID: "TEAMA12345", enabled: true)
                try emulator.revokeConsent(userID: user, clientID: Self.clientID)
                // Deletion is notified for apps the user still uses, so a second user deletes their account.
                let second = try emulator.createUser(email: "bob@example.com")
                _ = try emulator.authorize(
                    userID: second,
                    clientID: Self.clientID,
                    nonce: "n",
                    state: nil,
                    emailMode: .shared
                )
                try emulator.deleteAccount(userID: second)
                let sent = emulator.drainNotifications()
                let verifier = AppleNotificationVerifier(allowedAudiences: [Self.clientID])
                let received = try sent.map { try verifier.verify($0.payload, keys: emulator.keySet, now: Self.now) }
                #expect(received.map(\.type) == [.emailDisabled, .emailEnabled, .consentRevoked, .accountDeleted])
                #expect(Set(received.map(\.jti)).count == received.count, "each delivery has its own jti")
                let sub = try emulator.subject(userID: user, teamID: "TEAMA12345")
                #expect(received.prefix(3).allSatisfy { $0.sub == sub && $0.audience == Self.clientID })
                #expect(received.last?.sub == (try emulator.subject(userID: second, teamID: "TEAMA12345")))
            }
        }
    }

    @Test("a forged or foreign notification is refused")
    func refusesForgeries() throws {
        let (emulator, user) = try Self.emulator()
        try emulator.revokeConsent(userID: user, clientID: Self.clientID)
        let payload = try #require(emulator.drainNotifications().first?.payload)
        let verifier = AppleNotificationVerifier(allowedAudiences: [Self.clientID])
        #expect(throws: IdentityTokenError.self) {
            try verifier.verify(String(payload.dropLast(3)) + "AAA", keys: emulator.keySet, now: Self.now)
        }
        let other = AppleIDEmulator(clock: { Self.now })
        #expect(throws: IdentityTokenError.self, "another key set's signature") {
            try verifier.verify(payload, keys: other.keySet, now: Self.now)
        }
        let otherAudience = AppleNotificationVerifier(allowedAudiences: ["com.other.app"])
        #expect(throws: IdentityTokenError.self) {
            try otherAudience.verify(payload, keys: emulator.keySet, now: Self.now)
        }
        // A payload re-signed with an unknown key and alg none.
        let parts = payload.split(separator: ".")
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + parts[1] + "."
        #expect(throws: IdentityTokenError.self) { try verifier.verify(none, keys: emulator.keySet, now: Self.now) }
    }
}
