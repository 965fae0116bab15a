import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `transfer status` along a chain of transfers (docs/apple-protocol.md §3.2, "A later transfer"):
/// an account an earlier transfer left behind is `stranded` whatever was written to its record
/// since, one that is home again is not, and one the latest transfer prepared is in its state.
@Suite("Transfer status: a chain of transfers")
struct TransferStatusChainTests {
    typealias World = TransferWorld
    typealias Later = TransferServiceLaterTransferTests

    func prepare(_ world: World, _ service: TransferService, for team: String) async throws {
        #expect(try await world.prepare(by: service, for: team).stop == nil)
    }

    @Test("a later write to a left-behind record keeps it stranded", arguments: Backend.all)
    func strandedAfterLateComplete(_ backend: Backend) async throws {
        let world = try World(backend: backend)
        let moved = try await Later.moveToB(world)
        world.advance(TransferStateMachine.windowLength)
        try await prepare(world, world.recipient, for: World.teamC)
        // B runs `complete` once more for A -> B's stragglers: the window has closed, so the
        // left-behind account's record is rewritten as a failed exchange.
        world.advance(3_600)
        _ = try await world.complete(windowEndsAt: moved.windowAB)
        #expect(try world.record(moved.stranded)?.failureReason == "window-closed")
        let status = try world.recipient.status(now: world.now)
        #expect(status.strandedAccounts == 1)
        #expect(status.accounts(in: .transferFailed) == 0)
        #expect(status.accounts(in: .transferPrepared) == 3)
    }

    @Test("A -> B -> A -> B: home again is not stranded; prepared again is in its state", arguments: Backend.all)
    func thereAndBackAndThereAgain(_ backend: Backend) async throws {
        let world = try World(backend: backend)
        let moved = try await Later.moveToB(world)
        world.advance(TransferStateMachine.windowLength)
        try await prepare(world, world.recipient, for: World.teamA)
        let windowBA = try world.transferApp(to: World.teamA)
        world.advance(60)
        _ = try await world.complete(windowEndsAt: windowBA, by: world.sender)
        var status = try world.sender.status(now: world.now)
        #expect(status.accounts(in: .transferred) == 3)
        #expect(status.strandedAccounts == 0, "left behind by A -> B, it never left team A: home again")
        #expect(status.untouchedLinkedAccounts == 0)

        // A moves the app to B again: the account A -> B left behind has B's transfer identifier
        // already (Apple's is stable per user and team), so it is part of this transfer.
        world.advance(TransferStateMachine.windowLength)
        try await prepare(world, world.sender, for: World.teamB)
        status = try world.sender.status(now: world.now)
        #expect(status.accounts(in: .transferPrepared) == 4)
        #expect(status.strandedAccounts == 0)
        #expect(status.untouchedLinkedAccounts == 0)
        let windowAB2 = try world.transferApp(to: World.teamB)
        world.advance(60)
        let done = try await world.complete(windowEndsAt: windowAB2)
        #expect(done.outcomes[.succeeded] == 4)
        status = try world.recipient.status(now: world.now)
        #expect(status.accounts(in: .transferred) == 4)
        #expect(status.strandedAccounts == 0)
        #expect(try world.link(moved.stranded)?.teamID == World.teamB)
    }
}
