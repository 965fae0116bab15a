import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The webhook events of a team transfer, written by the transitions' own transactions.
@Suite("Webhook events of transfers")
struct TransferWebhookTests {
    /// Every pending event, in the order a sender delivers them: claim, record, finish, again.
    static func delivered(_ store: any UpgradeStore) throws -> [WebhookEventRecord] {
        var events: [WebhookEventRecord] = []
        for round in 0..<50 {
            let claimed = try store.write {
                try $0.claimDueWebhookEvents(now: .max - 1000, token: "t\(round)", claimedUntil: .max, limit: 100)
            }
            if claimed.isEmpty { break }
            for event in claimed {
                #expect(try store.write { try $0.finishWebhookEvent(id: event.id, token: "t\(round)", now: 1) })
            }
            events += claimed
        }
        return events
    }

    @Test(
        "prepare then complete: transfer.prepared, then transfer.completed with the old and new sub and the relay email",
        arguments: Backend.all
    )
    func preparedThenCompleted(_ backend: Backend) async throws {
        let world = try TransferWorld(backend: backend)
        let alice = try world.addLinkedUser("alice", emailMode: .hidden)
        let bob = try world.addLinkedUser("bob", emailMode: .shared)
        #expect(try await world.prepare().outcomes[.succeeded] == 2)
        world.advance(86_400)
        let windowEndsAt = try world.transferApp()
        world.advance(3600)
        #expect(try await world.complete(windowEndsAt: windowEndsAt).outcomes[.succeeded] == 2)

        let events = try Self.delivered(world.store)
        for user in [alice, bob] {
            let mine = events.filter { $0.accountID == user.accountID }
            #expect(mine.map(\.type) == ["transfer.prepared", "transfer.completed"])
            #expect(mine.map(\.accountSequence) == [1, 2])
            let link = try #require(try world.link(user))
            let completed = try JSONValue.parse(Array(try #require(mine.last).payload.utf8))
            let data = try #require(completed["data"])
            #expect(completed["type"]?.stringValue == "transfer.completed")
            #expect(data["accountId"]?.stringValue == user.accountID)
            #expect(data["oldSub"]?.stringValue == user.subA)
            #expect(data["newSub"]?.stringValue == link.sub && link.sub != user.subA)
            #expect(data["email"]?.stringValue == link.email)
            let prepared = try JSONValue.parse(Array(try #require(mine.first).payload.utf8))
            #expect(prepared["data"]?["sub"]?.stringValue == user.subA)
            // No transfer_sub, token or secret in a payload: only the fields documented.
            #expect(data.members?.map(\.key) == ["accountId", "oldSub", "newSub", "email"])
        }
    }
}
