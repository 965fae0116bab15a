import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// When admin tokens were last used, in the database shared by every server: a later use is never
/// replaced by an earlier one, and each server writes a token's use at most once a minute.
@Suite("Admin token last use in the store")
struct AdminTokenUsageTests {
    static let now: Int64 = 1_800_000_000
    static let token = AdminToken(name: "ops", scopes: [.accounts], createdAt: 5, hash: Array(repeating: 1, count: 32))

    @Test(
        "two servers on one database: one row per token, the latest use kept, a write a minute each",
        arguments: Backend.all
    )
    func sharedAndThrottled(backend: Backend) throws {
        let database = try backend.database()
        let first = AdminTokenUsage(store: database.store)
        let second = AdminTokenUsage(store: try database.reopen())
        #expect(try first.record(Self.token, now: Self.now))
        #expect(try !first.record(Self.token, now: Self.now + 59), "a second write within the minute")
        #expect(try second.record(Self.token, now: Self.now + 30), "each server writes its own first use")
        #expect(
            try AdminTokenUsage.lastUses(store: database.store) == [
                AdminTokenUseRecord(name: "ops", createdAt: 5, lastUsedAt: Self.now + 30)
            ]
        )
        #expect(try first.record(Self.token, now: Self.now + 60))
        // An older time (a slow server's) never replaces a newer one.
        try database.store.writeStorageErrors { try $0.recordAdminTokenUse(name: "ops", createdAt: 5, at: Self.now) }
        // The same name created again is another token.
        try database.store.writeStorageErrors { try $0.recordAdminTokenUse(name: "ops", createdAt: 9, at: Self.now) }
        #expect(
            try AdminTokenUsage.lastUses(store: database.store) == [
                AdminTokenUseRecord(name: "ops", createdAt: 5, lastUsedAt: Self.now + 60),
                AdminTokenUseRecord(name: "ops", createdAt: 9, lastUsedAt: Self.now),
            ]
        )
    }
}
