import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// A later transfer of accounts an earlier transfer moved (docs/apple-protocol.md §3.2, "A later
/// transfer"): A -> B migrated with this server, then B -> C, or back B -> A.
@Suite("Transfer service: a later transfer")
struct TransferServiceLaterTransferTests {
    typealias World = TransferWorld

    /// Rows of a batch by account id.
    final class Rows: Sendable {
        let rows = Mutex<[String: TransferRowReport]>([:])
        var onRow: @Sendable (TransferRowReport) -> Void { { row in self.rows.withLock { $0[row.accountID] = row } } }
        subscript(_ user: World.User) -> TransferRowReport? { rows.withLock { $0[user.accountID] } }
    }

    /// A -> B with three users, of whom `complete` migrates two (`limit`): the third is left behind
    /// with team A's id when the window closes. `fresh` signs up under team B afterwards.
    struct Moved {
        var u1: World.User
        var u2: World.User
        var stranded: World.User
        var fresh: World.User
        var windowAB: Int64
    }

    static func moveToB(_ world: World) async throws -> Moved {
        let u1 = try world.addLinkedUser("u1")
        let u2 = try world.addLinkedUser("u2", emailMode: .shared)
        let stranded = try world.addLinkedUser("u3")
        #expect(try await world.prepare().outcomes[.succeeded] == 3)
        let windowAB = try world.transferApp()
        world.advance(3_600)
        let done = try await world.complete(windowEndsAt: windowAB, World.options(concurrency: 1, limit: 2))
        #expect(done.outcomes[.succeeded] == 2)
        let fresh = try world.addLinkedUser("u4", team: World.teamB)
        return Moved(u1: u1, u2: u2, stranded: stranded, fresh: fresh, windowAB: windowAB)
    }

    static func prepareForC(
        _ world: World,
        _ options: TransferBatchOptions = World.options()
    ) async throws -> TransferBatchSummary {
        try await world.prepare(options, by: world.recipient, for: World.teamC)
    }

    func retired(_ world: World, _ user: World.User) throws -> [RetiredTransferRecord] {
        try world.store.read { try $0.retiredTransferRecords(accountID: user.accountID) }
    }

    @Test("A -> B, then B -> C: prepared by B, completed by C, the earlier ids still answer", arguments: Backend.all)
    func onwardToThirdTeam(_ backend: Backend) async throws {
        let world = try World(backend: backend)
        let moved = try await Self.moveToB(world)
        let subB1 = try #require(try world.link(moved.u1)).sub
        var status = try world.recipient.status(now: world.now)
        #expect(status.accounts(in: .transferred) == 2)
        #expect(status.untouchedLinkedAccounts == 0, "B's own new user is not part of A -> B")

        // While A -> B's window is open, its migrated accounts are not retired.
        let early = Rows()
        let first = try await Self.prepareForC(world, World.options(onRow: early.onRow))
        #expect(early[moved.u1]?.reason == "earlier-window-open")
        // When a rerun will prepare it: the window's end, in the row, its JSON line and the summary.
        #expect(early[moved.u1]?.retryAfter == moved.windowAB)
        #expect(early[moved.u1]?.json["retryAfter"]?.stringValue == RFC3339.utc(seconds: moved.windowAB))
        #expect(early[moved.stranded]?.retryAfter == nil)
        #expect(first.retryAfter == moved.windowAB)
        #expect(early[moved.u1]?.outcome == .skipped)
        // Left behind by A -> B, whose window is open: B's `complete` can still migrate it, so it
        // is not called stranded until the window has closed (below).
        #expect(early[moved.stranded]?.reason == "earlier-transfer-incomplete")
        #expect(first.skipReasons["stranded"] == nil, "\(first.line)")
        #expect(early[moved.fresh]?.outcome == .succeeded, "B's own new user is B -> C's from the start")
        #expect(first.exitStatus == 0)
        #expect(try retired(world, moved.u1).isEmpty)
        #expect(try world.record(moved.u1)?.status == "transferred")

        // After it, `prepare` retires each finished record in the row's own transaction.
        world.advance(TransferStateMachine.windowLength)
        let rows = Rows()
        let second = try await Self.prepareForC(world, World.options(onRow: rows.onRow))
        for user in [moved.u1, moved.u2] {
            #expect(rows[user]?.from == .transferred)
            #expect(rows[user]?.to == .transferPrepared)
            #expect(rows[user]?.outcome == .succeeded)
            let history = try retired(world, user)
            #expect(history.count == 1)
            #expect(history.first?.record.status == "transferred")
            #expect(history.first?.record.targetTeamID == World.teamB)
            #expect(history.first?.record.oldSub == user.subA)
            // Support sees both: the earlier transfer, retired, and the one under way.
            let overview = try #require(
                try world.store.read {
                    try AccountOverview.read(
                        username: try Username(user.accountID.replacing("acct-", with: "")),
                        events: 5,
                        in: $0
                    )
                }
            )
            #expect(overview.earlierTransfers.map(\.targetTeamID) == [World.teamB])
            #expect(overview.earlierTransfers.first?.status == "transferred")
            #expect(overview.earlierTransfers.first?.retiredAt == history.first?.retiredAt)
            #expect(overview.transfer?.targetTeamID == World.teamC && overview.transfer?.retiredAt == nil)
            let record = try #require(try world.record(user))
            #expect(record.status == "transferPrepared")
            #expect(record.targetTeamID == World.teamC)
            #expect(record.oldSub == (try world.link(user))?.sub)
            #expect(try world.auditEvents(user, named: "transfer.beginNextTransfer") == 1)
        }
        #expect(rows[moved.stranded]?.outcome == .skipped)
        #expect(rows[moved.stranded]?.reason == "stranded")
        #expect(rows[moved.fresh]?.outcome == .alreadyDone)
        #expect(second.exitStatus == 0)
        status = try world.recipient.status(now: world.now)
        #expect(status.accounts(in: .transferPrepared) == 3)
        #expect(status.accounts(in: .transferred) == 0)
        #expect(status.untouchedLinkedAccounts == 0)
        #expect(status.strandedAccounts == 1)

        // A re-run changes nothing.
        let again = try await Self.prepareForC(world)
        #expect(again.outcomes[.alreadyDone] == 3)
        #expect(again.outcomes[.succeeded, default: 0] == 0)
        #expect(try retired(world, moved.u1).count == 1)

        // C accepts; u1 signs in with B -> C's transfer_sub, the rest are exchanged by `complete`.
        let windowBC = try world.transferApp(to: World.teamC)
        world.advance(60)
        let claims = try await world.signInClaims(moved.u1)
        #expect(claims.transferSub == (try world.record(moved.u1))?.transferSub)
        let signIn = try world.third.signIn(claims: claims, now: world.now)
        #expect(signIn.accountID == moved.u1.accountID)
        #expect(signIn.migrated)
        let completeRows = Rows()
        let completed = try await world.complete(
            windowEndsAt: windowBC,
            World.options(onRow: completeRows.onRow),
            by: world.third
        )
        #expect(completed.outcomes[.succeeded] == 2)
        #expect(completeRows[moved.u1]?.outcome == .alreadyDone)
        #expect(completeRows[moved.stranded]?.reason == "stranded")
        #expect(completed.exitStatus == 0)
        status = try world.third.status(now: world.now)
        #expect(status.accounts(in: .transferred) == 3)
        #expect(status.strandedAccounts == 1)
        #expect(status.untouchedLinkedAccounts == 0)
        #expect(status.windowEndsAt == windowBC)
        // The migration report counts them alike: every account in a state, untouched or stranded.
        let report = try ReportService(store: world.store).report(since: nil, until: nil, now: world.now)
        #expect(report.transfer.strandedAccounts == 1)
        #expect(report.transfer.byStatus["transferred"] == 3 && report.transfer.untouchedLinkedAccounts == 0)

        // Every id answers: A's and B's read as transferred, C's as authorized.
        let subC1 = try #require(try world.link(moved.u1)).sub
        #expect(try world.link(moved.u1)?.teamID == World.teamC)
        #expect(try world.third.credentialState(userID: moved.u1.subA) == .transferred)
        #expect(try world.third.credentialState(userID: subB1) == .transferred)
        #expect(try world.third.credentialState(userID: subC1) == .authorized)
        #expect(try world.third.credentialState(userID: moved.stranded.subA) == .authorized)
        let subC2 = try #require(try world.link(moved.u2)).sub
        #expect(
            try world.third.signIn(claims: try await world.signInClaims(moved.u2), now: world.now).accountID
                == moved.u2.accountID
        )
        #expect(subC2 != moved.u2.subA)

        // An account revoked since reads as revoked under its first id too.
        _ = try world.third.revokeAfterLinkCheck(accountID: moved.u1.accountID, now: world.now)
        #expect(try world.third.credentialState(userID: moved.u1.subA) == .revoked)
    }

    @Test("A -> B -> A: the way back migrates every account to its first id again", arguments: Backend.all)
    func backToFirstTeam(_ backend: Backend) async throws {
        let world = try World(backend: backend)
        let moved = try await Self.moveToB(world)
        let subB1 = try #require(try world.link(moved.u1)).sub
        world.advance(TransferStateMachine.windowLength)
        let prepared = try await world.prepare(by: world.recipient, for: World.teamA)
        #expect(prepared.outcomes[.succeeded] == 3)
        #expect(prepared.skipReasons["stranded"] == 1)
        let window = try world.transferApp(to: World.teamA)
        world.advance(60)
        let rows = Rows()
        let completed = try await world.complete(
            windowEndsAt: window,
            World.options(onRow: rows.onRow),
            by: world.sender
        )
        #expect(completed.outcomes[.succeeded] == 3)
        // Left behind by A -> B, it never left team A: nothing to migrate, and no stop.
        #expect(rows[moved.stranded]?.reason == "in-recipient-team")
        #expect(completed.stop == nil)
        #expect(try world.link(moved.u1)?.sub == moved.u1.subA)
        #expect(try world.link(moved.u1)?.teamID == World.teamA)
        #expect(try world.sender.credentialState(userID: moved.u1.subA) == .authorized)
        #expect(try world.sender.credentialState(userID: subB1) == .transferred)
        let record = try #require(try world.record(moved.u1))
        #expect(record.oldSub == subB1)
        #expect(record.newSub == moved.u1.subA)
        #expect(try retired(world, moved.u1).first?.record.newSub == subB1)
        // B's own user moves to A as well, with an id of team A's.
        #expect(try world.link(moved.fresh)?.teamID == World.teamA)
    }

    @Test(
        "A -> B -> A -> B: a record needing ids another account's record still holds is refused as ids-held, naming it",
        arguments: Backend.all
    )
    func idsHeldByAnotherAccount(_ backend: Backend) async throws {
        let world = try World(backend: backend)
        let moved = try await Self.moveToB(world)
        // B moves the app back while A -> B's window is open: u1 keeps its finished record, and with
        // it team A's id and its transfer identifier for team B.
        let back = try await world.prepare(by: world.recipient, for: World.teamA)
        #expect(back.skipReasons["earlier-window-open"] == 2)
        let window = try world.transferApp(to: World.teamA)
        world.advance(60)
        _ = try await world.complete(windowEndsAt: window, by: world.sender)
        // Home at team A, the person behind u1 links a second account with their team A id, and the
        // app moves to team B once more.
        try world.addOtherAccount(linkedTo: moved.u1.subA, team: World.teamA)
        let heldRecord = try #require(try world.record(moved.u1))
        let rows = Rows()
        let again = try await world.prepare(World.options(onRow: rows.onRow))
        let row = try #require(rows.rows.withLock { $0["acct-other"] })
        #expect(row.outcome == .conflict)
        #expect(row.reason == "ids-held")
        #expect(row.heldBy == moved.u1.accountID)
        #expect(row.jsonLine.contains(#""heldBy":"acct-u1""#))
        #expect(again.reasons["ids-held"] == 1)
        #expect(again.exitStatus == 1)
        // Nothing written for it but the audited refusal; the holder's record is untouched.
        let other = try world.store.read { tx in try tx.transferRecord(accountID: "acct-other") }
        #expect(other == nil)
        let audit = try world.store.read { tx in try tx.auditTrail(accountID: "acct-other", limit: 100) }
        let refusal = try #require(audit.first { $0.event == "transfer.idsHeld" })
        #expect(refusal.detail["heldBy"] == moved.u1.accountID)
        #expect(refusal.detail["reason"] == "ids-held")
        #expect(try world.record(moved.u1) == heldRecord)
        #expect(try world.link(moved.u1)?.sub != moved.u1.subA)
    }

    @Test("a later transfer judged again after a lost race still reports an open earlier window as such")
    func earlierWindowOpenOnTheRereadPath() async throws {
        let world = try World()
        let moved = try await Self.moveToB(world)
        world.advance(TransferStateMachine.windowLength)
        // Between the page's read and the write, u1's finished record is rewritten as migrated now:
        // its window, bounded by the migration time, is open again when the row is judged afresh.
        let store = world.store
        let now = world.now
        let u1 = moved.u1.accountID
        let racing = InterleavingStore(store) {
            var record = try #require(try store.read { try $0.transferRecord(accountID: u1) })
            let version = record.version
            record.updatedAt = now
            record.windowEndsAt = nil
            try store.write { try $0.upsertTransferRecord(record, expectedVersion: version) }
        }
        let late = TransferService(
            store: racing,
            apple: world.appleB,
            configuration: TransferServiceConfiguration(teamID: World.teamB)
        )
        let rows = Rows()
        let transferSubsBefore = world.appleB.count(.transferSub)
        let summary = try await world.prepare(
            World.options(concurrency: 1, onRow: rows.onRow),
            by: late,
            for: World.teamC
        )
        // Apple was asked for u1 too: the row was decided from the page's read, then judged again.
        #expect(world.appleB.count(.transferSub) - transferSubsBefore == 3)
        #expect(rows[moved.u1]?.outcome == .skipped)
        #expect(rows[moved.u1]?.reason == "earlier-window-open")
        #expect(rows[moved.u1]?.retryAfter == now + TransferStateMachine.windowLength)
        #expect(summary.skipReasons["earlier-window-open"] == 1, "\(summary.line)")
        #expect(try retired(world, moved.u1).isEmpty)
        #expect(try world.record(moved.u1)?.status == "transferred")
        // The other rows were judged against their own unchanged records.
        #expect(rows[moved.u2]?.outcome == .succeeded)
    }

    @Test("a retirement is written with the new transfer's first step, or not at all")
    func retirementIsAtomic() async throws {
        let world = try World()
        let moved = try await Self.moveToB(world)
        world.advance(TransferStateMachine.windowLength)

        // The row decided from a stale read: the record changed before the write.
        let snapshot = try #require(try world.recipient.snapshot(accountID: moved.u1.accountID))
        let commit = TransferService.Commit(
            event: .transferIdentifierObtained(transferSub: "001.stale.0001"),
            targetTeamID: World.teamC,
            isStepOutcome: true,
            beginsNextTransfer: true
        )
        guard case .write(let write) = world.recipient.plan(snapshot, commit, now: world.now) else {
            Issue.record("a finished transfer whose window closed was not planned as a write")
            return
        }
        #expect(write.retirement != nil)
        var changed = try #require(try world.record(moved.u1))
        let version = changed.version
        changed.updatedAt += 1
        try world.store.write { try $0.upsertTransferRecord(changed, expectedVersion: version) }
        let error = try #require(throws: StorageError.self) { try world.store.write { try write.perform(in: $0) } }
        #expect(error.code == .versionConflict)
        #expect(try retired(world, moved.u1).isEmpty)
        #expect(try world.record(moved.u1)?.status == "transferred")
        #expect(try world.auditEvents(moved.u1, named: "transfer.beginNextTransfer") == 0)

        // A batch stopped after one row, then run again: each account retired once.
        let partial = try await Self.prepareForC(world, World.options(concurrency: 1, limit: 1))
        #expect(partial.outcomes[.succeeded] == 1)
        #expect(try retired(world, moved.u1).count == 1)
        #expect(try retired(world, moved.u2).isEmpty)
        _ = try await Self.prepareForC(world)
        _ = try await Self.prepareForC(world)
        for user in [moved.u1, moved.u2] {
            #expect(try retired(world, user).count == 1)
            #expect(try world.auditEvents(user, named: "transfer.beginNextTransfer") == 1)
            #expect(try world.record(user)?.status == "transferPrepared")
        }
    }

    @Test("an account the team moving the app on has not prepared is reported to the next team as not prepared")
    func notPreparedByTheMiddleTeam() async throws {
        let world = try World()
        let moved = try await Self.moveToB(world)
        // B prepares while A -> B's window is open: its migrated accounts wait.
        _ = try await Self.prepareForC(world)
        let window = try world.transferApp(to: World.teamC)
        let rows = Rows()
        let completed = try await world.complete(
            windowEndsAt: window,
            World.options(onRow: rows.onRow),
            by: world.third
        )
        #expect(rows[moved.fresh]?.outcome == .succeeded)
        #expect(rows[moved.u1]?.outcome == .notPrepared)
        #expect(rows[moved.u1]?.reason == "never-prepared")
        // A -> B's record left behind does not stop C's batch: records prepared for C show C's
        // credentials are the right ones.
        #expect(rows[moved.stranded]?.reason == "stranded")
        #expect(completed.stop == nil)
        #expect(completed.exitStatus == 1)
        #expect(try world.link(moved.u1)?.teamID == World.teamB)
    }

    @Test("the dry run of a later transfer writes nothing; the sender's own re-run still reads as done")
    func dryRunAndFirstSender() async throws {
        let world = try World()
        let moved = try await Self.moveToB(world)
        world.advance(TransferStateMachine.windowLength)
        let rows = Rows()
        let dry = try await Self.prepareForC(world, World.options(dryRun: true, onRow: rows.onRow))
        #expect(rows[moved.u1]?.outcome == .wouldRun)
        #expect(rows[moved.u1]?.from == .transferred)
        #expect(dry.outcomes[.wouldRun] == 3)
        #expect(try retired(world, moved.u1).isEmpty)
        #expect(try world.record(moved.u1)?.status == "transferred")

        // Team A running its own prepare again retires nothing (Apple may refuse it a token for an
        // app it no longer owns; if it does not, the rows read as done).
        let senderRows = Rows()
        let rerun = try await world.prepare(World.options(onRow: senderRows.onRow))
        #expect(rerun.outcomes[.succeeded, default: 0] == 0)
        #expect([nil, .alreadyDone].contains(senderRows[moved.u1]?.outcome))
        #expect(try retired(world, moved.u1).isEmpty)
        #expect(try world.record(moved.u1)?.targetTeamID == World.teamB)
    }

    @Test("deleting an account erases the ids of its earlier transfers too")
    func deletionErasesEarlierIDs() async throws {
        let world = try World()
        let moved = try await Self.moveToB(world)
        world.advance(TransferStateMachine.windowLength)
        _ = try await Self.prepareForC(world)
        let ids = try world.store.read { tx in
            AccountDeletionService.appleIDs(
                try tx.appleLink(accountID: moved.u1.accountID),
                try tx.transferRecord(accountID: moved.u1.accountID),
                retired: try tx.retiredTransferRecords(accountID: moved.u1.accountID)
            )
        }
        #expect(ids.contains(moved.u1.subA), "team A's id, known only to the retired record")
        #expect(ids.count == 4, "A's id, B's id, and the two transfer ids")
    }
}
