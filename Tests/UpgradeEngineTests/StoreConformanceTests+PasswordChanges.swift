import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

extension StoreConformanceTests {
    @Test(
        "a password change round-trips; its update stores what a transition changes under a version guard",
        arguments: Backend.all
    )
    func passwordChanges(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let change = PasswordChangeRecord(
            id: "pwc_1",
            accountID: alice.id,
            usernameKey: "alice",
            serviceIdentifier: "example.com",
            status: "stepUpRequired",
            machine: #"{"deadline":1700000300,"failedAttempts":0,"status":"stepUpRequired"}"#,
            newPasswordHash: "$argon2id$v=19$m=256,t=1,p=1$c2FsdHNhbHQ$aGFzaA",
            createdAt: Self.now,
            expiresAt: Self.now + 300,
            updatedAt: Self.now
        )
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertPasswordChange(change)
        }
        #expect(try db.store.read { try $0.passwordChange(id: "pwc_1") } == change)
        #expect(try db.store.read { try $0.passwordChange(id: "pwc_2") } == nil)

        var next = change
        next.status = "completed"
        next.machine = #"{"status":"completed"}"#
        next.newPasswordHash = nil
        next.expiresAt = Self.now + 1
        next.updatedAt = Self.now + 1
        // Fixed at insert: an update leaves these as they were.
        next.usernameKey = "mallory"
        next.serviceIdentifier = "other.example"
        next.createdAt = 0
        try db.store.write { try $0.updatePasswordChange(next, expectedVersion: 1) }
        let stored = try #require(try db.store.read { try $0.passwordChange(id: "pwc_1") })
        #expect(stored.status == "completed" && stored.machine == next.machine)
        #expect(stored.newPasswordHash == nil, "the hash is cleared once the change ended")
        #expect(stored.expiresAt == Self.now + 1 && stored.updatedAt == Self.now + 1)
        #expect(stored.usernameKey == "alice" && stored.serviceIdentifier == "example.com")
        #expect(stored.createdAt == Self.now && stored.version == 2)

        #expect(throws: StorageError.self) {
            try db.store.write { try $0.updatePasswordChange(next, expectedVersion: 1) }
        }
        #expect(try db.store.read { try $0.passwordChange(id: "pwc_1") }?.version == 2)
        // An unknown username's failed change has no account.
        var anonymous = change
        anonymous.id = "pwc_3"
        anonymous.accountID = nil
        try db.store.write { try $0.insertPasswordChange(anonymous) }
        #expect(try db.store.read { try $0.passwordChange(id: "pwc_3") }?.accountID == nil)
    }
}
