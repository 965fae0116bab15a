import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Account deletion and the revocation queue (`AccountStore.deleteAccount`, `AppleRevocationStore`).
extension StoreConformanceTests {
    func revocation(_ id: String, accountID: String = "deleted", due: Int64 = Self.now) -> AppleRevocationRecord {
        AppleRevocationRecord(
            id: id,
            accountID: accountID,
            tokenCiphertext: [9, 8, 7],
            clientID: "com.example.app",
            createdAt: Self.now,
            nextAttemptAt: due
        )
    }

    @Test(
        "deleting an account deletes everything of it, keeps its audit trail and frees the username",
        arguments: Backend.all
    )
    func deleteAccount(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        let bob = account("bob")
        try db.store.write { tx in
            for account in [alice, bob] {
                try tx.insertAccount(account)
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(accountID: account.id, hash: "h", format: "bcrypt", updatedAt: Self.now)
                )
                try tx.upsertTOTPEnrollment(enrollment(account))
                try tx.insertRecoveryCodes(accountID: account.id, codeHashes: ["c-\(account.id)"])
                try tx.insertAppleLink(link(account.id, sub: "001.\(account.username)"))
                try tx.insertUpgradeSession(
                    UpgradeSessionRecord(
                        id: "upg-\(account.username)",
                        accountID: account.id,
                        usernameKey: account.username,
                        serviceIdentifier: "s",
                        status: "started",
                        machine: "{}",
                        stateHash: nil,
                        nonceHash: nil,
                        linkedSub: nil,
                        createdAt: Self.now,
                        expiresAt: Self.now + 600,
                        updatedAt: Self.now
                    )
                )
                try tx.insertUpgradeTicket(
                    UpgradeTicketRecord(
                        ticketHash: "t-\(account.id)",
                        accountID: account.id,
                        secondFactorVerified: false,
                        createdAt: Self.now,
                        expiresAt: Self.now + 300
                    ),
                    now: Self.now
                )
                try tx.upsertTransferRecord(
                    TransferRecord(
                        accountID: account.id,
                        status: "transferPrepared",
                        machine: "{}",
                        oldSub: "001.\(account.username)",
                        transferSub: "t.\(account.username)",
                        newSub: nil,
                        targetTeamID: "TEAMB12345",
                        failureReason: nil,
                        attempts: 1,
                        windowEndsAt: nil,
                        updatedAt: Self.now
                    ),
                    expectedVersion: nil
                )
                try tx.appendAudit(AuditEvent(at: Self.now, accountID: account.id, upgradeID: nil, event: "e"))
            }
        }
        #expect(try db.store.write { try $0.deleteAccount(id: alice.id) })
        #expect(try !db.store.write { try $0.deleteAccount(id: alice.id) }, "a second delete finds nothing")
        try db.store.read { tx throws in
            #expect(try tx.account(id: alice.id) == nil)
            #expect(try tx.passwordCredential(accountID: alice.id) == nil)
            #expect(try tx.totpEnrollment(accountID: alice.id) == nil)
            #expect(try tx.unusedRecoveryCodeCount(accountID: alice.id) == 0)
            #expect(try tx.appleLink(accountID: alice.id) == nil)
            #expect(try tx.appleLink(sub: "001.alice") == nil)
            #expect(try tx.upgradeSession(id: "upg-alice") == nil)
            #expect(try tx.upgradeTicket(hash: "t-\(alice.id)") == nil)
            #expect(try tx.transferRecord(accountID: alice.id) == nil)
            #expect(try tx.transferRecord(oldSub: "001.alice") == nil)
            #expect(try tx.auditTrail(accountID: alice.id, limit: 10).count == 1)
            // The other account is untouched.
            #expect(try tx.account(id: bob.id) != nil)
            #expect(try tx.appleLink(accountID: bob.id) != nil)
            #expect(try tx.upgradeTicket(hash: "t-\(bob.id)") != nil)
        }
        try db.store.write { try $0.insertAccount(account("alice")) }
    }

    @Test(
        "a revocation is claimed when due, by one claimer, deferred only by its claimer, done once",
        arguments: Backend.all
    )
    func revocationQueue(_ backend: Backend) throws {
        let db = try backend.database()
        let store = db.store
        try store.write { tx in
            try tx.insertAppleRevocation(revocation("r1"))
            try tx.insertAppleRevocation(revocation("r2", due: Self.now + 100))
        }
        #expect(try store.read { try $0.appleRevocation(id: "r1") } == revocation("r1"))
        #expect(try store.read { try $0.pendingAppleRevocationCount() } == 2)

        let claimed = try store.write {
            try $0.claimDueAppleRevocations(now: Self.now, token: "a", claimedUntil: Self.now + 30, limit: 10)
        }
        #expect(claimed.map(\.id) == ["r1"], "r2 is not due yet")
        #expect(claimed.first?.claimToken == "a" && claimed.first?.claimedUntil == Self.now + 30)
        #expect(claimed.first?.tokenCiphertext == [9, 8, 7])
        // Held by "a": nobody else gets it until the claim lapses.
        #expect(
            try store.write {
                try $0.claimDueAppleRevocations(now: Self.now + 10, token: "b", claimedUntil: Self.now + 40, limit: 10)
            }.isEmpty
        )
        #expect(
            try store.write {
                try $0.claimAppleRevocation(id: "r1", now: Self.now + 10, token: "b", claimedUntil: Self.now + 40)
            } == nil
        )
        // Only the claimer defers it.
        #expect(
            try !store.write {
                try $0.deferAppleRevocation(id: "r1", token: "b", nextAttemptAt: Self.now + 60, error: "HTTP 503")
            }
        )
        #expect(
            try store.write {
                try $0.deferAppleRevocation(id: "r1", token: "a", nextAttemptAt: Self.now + 60, error: "HTTP 503")
            }
        )
        var deferred = try #require(try store.read { try $0.appleRevocation(id: "r1") })
        #expect(deferred.attempts == 1 && deferred.nextAttemptAt == Self.now + 60 && deferred.lastError == "HTTP 503")
        #expect(deferred.claimToken == nil && deferred.claimedUntil == nil && deferred.doneAt == nil)
        // A lapsed claim is taken over.
        _ = try store.write {
            try $0.claimAppleRevocation(id: "r1", now: Self.now, token: "c", claimedUntil: Self.now + 5)
        }
        deferred = try #require(
            try store.write {
                try $0.claimAppleRevocation(id: "r1", now: Self.now + 5, token: "d", claimedUntil: Self.now + 35)
            }
        )
        #expect(deferred.claimToken == "d")

        #expect(try store.write { try $0.finishAppleRevocation(id: "r1", now: Self.now + 6, note: nil) })
        #expect(try !store.write { try $0.finishAppleRevocation(id: "r1", now: Self.now + 7, note: "again") })
        let done = try #require(try store.read { try $0.appleRevocation(id: "r1") })
        #expect(done.doneAt == Self.now + 6 && done.attempts == 2 && done.lastError == nil)
        #expect(done.tokenCiphertext.isEmpty, "a done row keeps no token")
        #expect(done.claimToken == nil)
        #expect(try store.read { try $0.pendingAppleRevocationCount() } == 1)
        // Done rows are never claimed again, due or not.
        #expect(
            try store.write {
                try $0.claimDueAppleRevocations(
                    now: Self.now + 1000,
                    token: "e",
                    claimedUntil: Self.now + 1030,
                    limit: 10
                )
            }.map(\.id) == ["r2"]
        )
        #expect(
            try store.write {
                try $0.claimAppleRevocation(id: "r1", now: Self.now + 2000, token: "f", claimedUntil: Self.now + 2030)
            } == nil
        )
        #expect(
            try !store.write {
                try $0.deferAppleRevocation(id: "r1", token: "f", nextAttemptAt: Self.now, error: "x")
            }
        )
    }

    @Test("claimers racing for due revocations each get distinct rows", arguments: Backend.all)
    func revocationClaimRace(_ backend: Backend) async throws {
        let db = try backend.database()
        let store = db.store
        try store.write { tx in
            for index in 0..<12 { try tx.insertAppleRevocation(revocation("r\(index)")) }
        }
        let claims = await withTaskGroup(of: [String].self) { group in
            for claimer in 0..<6 {
                group.addTask {
                    (try? store.write {
                        try $0.claimDueAppleRevocations(
                            now: Self.now,
                            token: "claimer-\(claimer)",
                            claimedUntil: Self.now + 30,
                            limit: 3
                        )
                    })?.map(\.id) ?? []
                }
            }
            var all: [String] = []
            for await ids in group { all += ids }
            return all
        }
        #expect(claims.count == Set(claims).count, "a row went to two claimers: \(claims.sorted())")
        #expect(claims.count == 12, "every row was claimed by someone")
    }
}
