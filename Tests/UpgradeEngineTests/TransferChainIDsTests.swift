import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// What a later transfer must keep true for every id of an account's chain (docs/apple-protocol.md
/// §3.2, "A later transfer"; §4): two `prepare` runs at once retire each record once; every id
/// answers `credential-state`; a notification about an id only a retired record holds reaches
/// that account, and an email event about it changes nothing; a deletion leaves no audit row
/// naming any of the ids.
@Suite("Transfer service: the ids of a chain of transfers")
struct TransferChainIDsTests {
    typealias World = TransferWorld
    typealias Later = TransferServiceLaterTransferTests

    @Test("A -> B -> C: concurrent prepares, credential states, notifications, deletion", arguments: Backend.all)
    func chain(_ backend: Backend) async throws {
        let world = try World(backend: backend)
        let moved = try await Later.moveToB(world)
        let subB1 = try #require(try world.link(moved.u1)).sub
        let subB2 = try #require(try world.link(moved.u2)).sub
        let transferAB1 = try #require(try world.record(moved.u1)?.transferSub)
        world.advance(TransferStateMachine.windowLength)
        async let one = Later.prepareForC(world)
        async let two = Later.prepareForC(world)
        let (first, second) = try await (one, two)
        #expect(first.outcomes[.succeeded, default: 0] + second.outcomes[.succeeded, default: 0] == 3)
        #expect(first.outcomes[.error, default: 0] + second.outcomes[.error, default: 0] == 0)
        for user in [moved.u1, moved.u2] {
            #expect(try world.store.read { try $0.retiredTransferRecords(accountID: user.accountID) }.count == 1)
            #expect(try world.auditEvents(user, named: "transfer.beginNextTransfer") == 1)
        }

        // C migrates u1 only.
        let windowBC = try world.transferApp(to: World.teamC)
        world.advance(60)
        _ = try await world.complete(windowEndsAt: windowBC, World.options(concurrency: 1, limit: 1), by: world.third)
        let subC1 = try #require(try world.link(moved.u1)).sub
        #expect(try world.third.credentialState(userID: moved.u1.subA) == .transferred)
        #expect(try world.third.credentialState(userID: subB1) == .transferred)
        #expect(try world.third.credentialState(userID: subC1) == .authorized)
        #expect(try world.third.credentialState(userID: transferAB1) == .notFound)
        #expect(try world.third.credentialState(userID: moved.u2.subA) == .transferred)
        #expect(try world.third.credentialState(userID: subB2) == .authorized)
        #expect(try world.third.credentialState(userID: moved.stranded.subA) == .authorized)

        // A's id, held only by u2's retired record: an email event is about an address u2 no
        // longer uses; a deletion event reaches u2, and every id of it then reads as revoked.
        let email = try world.third.handleNotification(
            type: "email-disabled",
            sub: moved.u2.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(email.outcome == .unchanged)
        let deleted = try world.third.handleNotification(
            type: "account-delete",
            sub: moved.u2.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(deleted.accountID == moved.u2.accountID)
        #expect(deleted.status == .deleted)
        #expect(try world.third.credentialState(userID: moved.u2.subA) == .revoked)
        #expect(try world.third.credentialState(userID: subB2) == .revoked)
        #expect(try world.link(moved.u1)?.status == .linked, "no other account is touched")

        // Deleting u1: no audit row names any id of its chain, and none answers any more.
        _ = try AccountDeletionService(store: world.store).delete(username: "u1", deletedBy: "test", now: world.now)
        let audit = try world.store.read { try $0.auditEvents(AuditSearch(limit: 1000)) }
        for id in [moved.u1.subA, subB1, subC1, transferAB1] {
            #expect(audit.allSatisfy { !$0.detail.values.contains { $0.contains(id) } })
            #expect(try world.third.credentialState(userID: id) == .notFound)
        }
    }
}
