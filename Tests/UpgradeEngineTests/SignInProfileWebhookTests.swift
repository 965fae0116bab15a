import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `account.profile-filled`: a sign-in that fills the profile tells the backend in the fill's own
/// transaction, with the profile in `account.converted`'s shape; a fill of nothing, or of an account
/// whose link is no longer the token's `sub`, tells nothing; a deletion nulls what names the person.
@Suite("Webhook event of a sign-in that fills the profile")
struct SignInProfileWebhookTests {
    static let now: Int64 = 1_700_000_000
    static let accountID = "acc_ada"
    static let sub = "001.ada"

    /// What the device forwards on the account's first authorization.
    static func ada() throws -> DeviceGivenProfile {
        try DeviceGivenProfile(email: "ada@example.com", fullName: PersonName(givenName: "Ada", familyName: "Lovelace"))
    }

    /// A converted account `ada` linked to `sub`, with `account.converted` already in the outbox.
    static func linkedAccount(_ backend: Backend) throws -> TestDatabase {
        let db = try backend.database()
        try db.store.write { tx in
            try tx.insertAccount(
                AccountRecord(
                    id: accountID,
                    username: "ada",
                    credentialKind: .appleOnly,
                    createdAt: now,
                    updatedAt: now
                )
            )
            try tx.insertAppleLink(
                AppleLinkRecord(
                    accountID: accountID,
                    sub: sub,
                    teamID: "TEAMA12345",
                    clientID: "com.example.app",
                    email: nil,
                    isPrivateEmail: nil,
                    refreshTokenCiphertext: nil,
                    status: .linked,
                    linkedAt: now,
                    updatedAt: now
                )
            )
            try WebhookOutbox.enqueue(
                .accountConverted,
                accountID: accountID,
                data: [("accountId", .string(accountID)), ("sub", .string(sub))] + UpgradeService.profileData(nil),
                in: tx,
                now: now
            )
        }
        return db
    }

    static func fill(
        _ db: TestDatabase,
        _ given: DeviceGivenProfile,
        realUserStatus: AppleRealUserStatus? = nil,
        sub: String = sub,
        at now: Int64 = now + 60
    ) throws {
        try db.store.write { tx in
            try SignInService.fillProfile(
                given,
                realUserStatus: realUserStatus,
                sub: sub,
                accountID: accountID,
                in: tx,
                now: now
            )
        }
    }

    /// The account's events in the order a sender delivers them.
    static func events(_ db: TestDatabase) throws -> [WebhookEventRecord] {
        try TransferWebhookTests.delivered(db.store).filter { $0.accountID == accountID }
    }

    @Test(
        "a fill enqueues one account.profile-filled after the account's earlier events, naming the fields and carrying the profile as account.converted does",
        arguments: Backend.all
    )
    func fillEnqueues(_ backend: Backend) throws {
        let db = try Self.linkedAccount(backend)
        try Self.fill(db, Self.ada(), realUserStatus: .likelyReal)

        let events = try Self.events(db)
        #expect(events.map(\.type) == ["account.converted", "account.profile-filled"])
        #expect(events.map(\.accountSequence) == [1, 2])
        let filled = try #require(events.last)
        let timestamp = WebhookOutbox.timestamp(Self.now + 60)
        #expect(
            filled.payload
                == #"{"type":"account.profile-filled","timestamp":"\#(timestamp)","data":{"accountId":"acc_ada","sub":"001.ada","fields":["email","displayName","fullName","realUserStatus"],"displayName":"Ada Lovelace","displayNameSource":"device","email":"ada@example.com","emailSource":"device","fullName":{"givenName":"Ada","familyName":"Lovelace"},"realUserStatus":"likelyReal"}}"#
        )
        // The profile part is the conversion's own builder over the stored profile.
        let stored = try db.store.read { try $0.accountProfile(accountID: Self.accountID) }
        let data = try #require(try JSONValue.parse(Array(filled.payload.utf8))["data"]?.members)
        #expect(
            Array(data.dropFirst(3)) == UpgradeService.profileData(stored).map { JSONValue.Member($0.0, $0.1) }
        )
        let trail = try db.store.read { try $0.auditTrail(accountID: Self.accountID, limit: 10) }
        #expect(
            trail.filter { $0.event == "account.profileFilled" }.map(\.detail) == [
                ["fields": "email,displayName,fullName,realUserStatus", "source": "sign-in"]
            ]
        )
    }

    @Test(
        "a sign-in that fills nothing enqueues nothing: the profile already has each value, or nothing was forwarded",
        arguments: Backend.all
    )
    func nothingFilled(_ backend: Backend) throws {
        let db = try Self.linkedAccount(backend)
        try Self.fill(db, Self.ada(), realUserStatus: .likelyReal)
        let other = try DeviceGivenProfile(
            email: "other@example.com",
            fullName: PersonName(givenName: "Someone", familyName: "Else")
        )
        try Self.fill(db, other, realUserStatus: .unsupported, at: Self.now + 120)
        try Self.fill(db, DeviceGivenProfile(), at: Self.now + 180)
        #expect(try Self.events(db).map(\.type) == ["account.converted", "account.profile-filled"])
        let trail = try db.store.read { try $0.auditTrail(accountID: Self.accountID, limit: 10) }
        #expect(trail.filter { $0.event == "account.profileFilled" }.count == 1)

        // Nothing forwarded and no real_user_status, on an account without a profile: none either.
        let bare = try Self.linkedAccount(backend)
        try Self.fill(bare, DeviceGivenProfile())
        #expect(try Self.events(bare).map(\.type) == ["account.converted"])
        #expect(try bare.store.read { try $0.accountProfile(accountID: Self.accountID) } == nil)
    }

    @Test(
        "a sign-in whose sub is no longer the account's link fills nothing and enqueues nothing",
        arguments: Backend.all
    )
    func relinkedFillsNothing(_ backend: Backend) throws {
        let db = try Self.linkedAccount(backend)
        try Self.fill(db, Self.ada(), realUserStatus: .likelyReal, sub: "001.someone-else")
        #expect(try Self.events(db).map(\.type) == ["account.converted"])
        #expect(try db.store.read { try $0.accountProfile(accountID: Self.accountID) } == nil)
        let trail = try db.store.read { try $0.auditTrail(accountID: Self.accountID, limit: 10) }
        #expect(!trail.contains { $0.event == "account.profileFilled" })
    }

    @Test(
        "deleting the account afterwards nulls the stored event's sub, email, display name and name's parts, keeping the rest",
        arguments: Backend.all
    )
    func deletionRedacts(_ backend: Backend) throws {
        let db = try Self.linkedAccount(backend)
        try Self.fill(db, Self.ada(), realUserStatus: .likelyReal)
        let id = try #require(try Self.events(db).last { $0.type == "account.profile-filled" }?.id)
        let filled = try #require(try db.store.read { try $0.webhookEvent(id: id) })

        _ = try AccountDeletionService(store: db.store).delete(username: "ada", deletedBy: "test", now: Self.now + 120)
        let after = try #require(try db.store.read { try $0.webhookEvent(id: id) })
        let timestamp = WebhookOutbox.timestamp(Self.now + 60)
        #expect(
            after.payload
                == #"{"type":"account.profile-filled","timestamp":"\#(timestamp)","data":{"accountId":"acc_ada","sub":null,"fields":["email","displayName","fullName","realUserStatus"],"displayName":null,"displayNameSource":"device","email":null,"emailSource":"device","fullName":null,"realUserStatus":"likelyReal"}}"#
        )
        #expect(!after.payload.contains("Lovelace") && !after.payload.contains("ada@"))
        var unchanged = after
        unchanged.payload = filled.payload
        #expect(unchanged == filled, "only the payload changes")
    }
}
