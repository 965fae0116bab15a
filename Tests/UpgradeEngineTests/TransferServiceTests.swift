import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// The `prepare` and `complete` batches against the Apple ID emulator (docs/architecture.md §6, docs/apple-protocol.md §3).
@Suite("Transfer service batches")
struct TransferServiceTests {
    @Test("prepare then complete: subs re-keyed, relay email updated, old id transferred, new id authorized")
    func roundTrip() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice", emailMode: .hidden)
        let bob = try world.addLinkedUser("bob", emailMode: .shared)
        let carol = try world.addLinkedUser("carol", emailMode: .hidden)
        let users = [alice, bob, carol]
        let rows = RowCollector()

        let prepared = try await world.prepare(TransferWorld.options(onRow: rows.onRow))
        #expect(prepared.outcomes[.succeeded] == 3, "\(prepared.line)")
        #expect(prepared.stop == nil && prepared.failedRows == 0)
        for user in users {
            let record = try #require(try world.record(user))
            #expect(record.status == TransferStatus.transferPrepared.rawValue)
            #expect(record.targetTeamID == TransferWorld.teamB)
            #expect(record.transferSub == (try world.emulator.transferSub(user, from: TransferWorld.teamA)))
            #expect(try world.recipient.credentialState(userID: user.subA) == .authorized, "still reached by A's id")
        }
        #expect(world.appleA.count(.teamAccessToken) == 1, "one team token for the whole batch")

        world.advance(86_400)
        let windowEndsAt = try world.transferApp()
        world.advance(3600)
        let completed = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(onRow: rows.onRow))
        #expect(completed.outcomes[.succeeded] == 3, "\(completed.line)")
        #expect(prepared.exitStatus == 0 && completed.exitStatus == 0)
        #expect(world.appleB.count(.teamAccessToken) == 1)

        for user in users {
            let link = try #require(try world.link(user))
            let subB = try world.emulator.subject(userID: user.appleUserID, teamID: TransferWorld.teamB)
            #expect(link.sub == subB && link.sub != user.subA)
            #expect(link.teamID == TransferWorld.teamB)
            #expect(link.status == .linked)
            #expect(link.refreshTokenCiphertext == nil, "the sender team's refresh token is dropped")
            if user.emailMode == .hidden {
                #expect(
                    link.email == (try world.emulator.relayEmail(userID: user.appleUserID, teamID: TransferWorld.teamB))
                )
                #expect(link.isPrivateEmail == true)
            } else {
                #expect(link.email == "\(user.accountID.dropFirst(5))@example.com", "a shared address is kept")
            }
            let record = try #require(try world.record(user))
            #expect(record.status == TransferStatus.transferred.rawValue)
            #expect(record.oldSub == user.subA && record.newSub == subB)
            #expect(try world.recipient.credentialState(userID: user.subA) == .transferred)
            #expect(try world.recipient.credentialState(userID: subB) == .authorized)
            // Apple's own answer on the device agrees.
            #expect(
                world.emulator.credentialState(forUserID: user.subA, clientID: TransferWorld.clientID) == .transferred
            )
            #expect(try world.auditEvents(user, named: "transfer.transferIdentifierObtained") == 1)
            #expect(try world.auditEvents(user, named: "transfer.newSubObtained") == 1)
            let relinked = try world.audit(user).first { $0.event == "transfer.newSubObtained" }
            #expect(relinked?.detail["refreshTokenDeleted"] == "true")
        }

        var status = try world.recipient.status(now: world.now)
        #expect(status.counts[.transferred] == 3 && status.untouchedLinkedAccounts == 0)
        // A user who signs up with team B after the transfer is nothing a batch has to do.
        try world.addOtherAccount(linkedTo: "001234.newcomer.0001")
        status = try world.recipient.status(now: world.now)
        #expect(status.untouchedLinkedAccounts == 0, "a recipient team's own link is not untouched")
        #expect(status.windowEndsAt == windowEndsAt)
        #expect(status.windowSecondsLeft == windowEndsAt - world.now)

        // No report row carries an Apple id, a transfer identifier or an address (docs/apple-protocol.md §3.1).
        var secrets: [String] = []
        for user in users {
            secrets.append(user.subA)
            secrets.append(try world.emulator.subject(userID: user.appleUserID, teamID: TransferWorld.teamB))
            secrets.append(try #require(try world.record(user)?.transferSub))
            secrets.append(contentsOf: [try world.link(user)?.email].compactMap { $0 })
        }
        #expect(rows.all.count == 6)
        for row in rows.all {
            for secret in secrets { #expect(!row.jsonLine.contains(secret)) }
        }

        // The team access tokens are nowhere: not in the database files, the audit trail or a summary.
        let tokens = world.appleA.accessTokens + world.appleB.accessTokens
        #expect(tokens.count == 2)
        var stored = Data()
        for suffix in ["", "-wal", "-shm"] {
            if let data = FileManager.default.contents(atPath: try #require(world.database.path) + suffix) {
                stored.append(data)
            }
        }
        let audit = try users.flatMap { try world.audit($0) }.map { "\($0)" }.joined()
        for token in tokens {
            #expect(stored.range(of: Data(token.utf8)) == nil)
            #expect(!audit.contains(token) && !prepared.line.contains(token) && !completed.line.contains(token))
        }
    }

    @Test("status shows the latest run's window, and a window an earlier run was given otherwise beside it")
    func correctedAcceptanceTime() async throws {
        let world = try TransferWorld()
        let users = try (0..<2).map { try world.addLinkedUser("user\($0)") }
        _ = try await world.prepare(TransferWorld.options(concurrency: 1))
        world.advance(86_400)
        let windowEndsAt = try world.transferApp()
        world.advance(3600)
        // First run given an acceptance time five days too late; it completes one account.
        let mistaken = windowEndsAt + 5 * 86_400
        _ = try await world.complete(windowEndsAt: mistaken, TransferWorld.options(concurrency: 1, limit: 1))
        world.advance(60)
        _ = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(concurrency: 1))
        for user in users { #expect(try world.record(user)?.status == TransferStatus.transferred.rawValue) }
        let status = try world.recipient.status(now: world.now)
        #expect(status.windowEndsAt == windowEndsAt, "the latest run's window, not the largest")
        #expect(status.otherWindows == [mistaken: 1])
    }

    @Test(
        "re-running both batches does nothing twice: rows already done, no Apple call per user, no audit row",
        arguments: Backend.all
    )
    func rerunIsIdempotent(_ backend: Backend) async throws {
        let world = try TransferWorld(backend: backend)
        let users = try (0..<3).map { try world.addLinkedUser("user\($0)") }
        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()
        _ = try await world.complete(windowEndsAt: windowEndsAt)
        let audit = try world.auditCount(users)

        let again = try await world.prepare()
        #expect(again.outcomes[.alreadyDone] == 3, "\(again.line)")
        let completeAgain = try await world.complete(windowEndsAt: windowEndsAt)
        #expect(completeAgain.outcomes[.alreadyDone] == 3, "\(completeAgain.line)")
        #expect(world.appleA.count(.transferSub) == 3)
        #expect(world.appleB.count(.migrate) == 3)
        #expect(try world.auditCount(users) == audit)
    }

    @Test("a user who revoked at Apple fails their row with invalid-request; the batch goes on")
    func revokedUserFailsRow() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        let carol = try world.addLinkedUser("carol")
        // The consent-revoked notification never reached us: our link still says linked.
        try world.emulator.revokeConsent(userID: bob.appleUserID, clientID: TransferWorld.clientID)
        _ = world.emulator.drainNotifications()
        let rows = RowCollector()

        let summary = try await world.prepare(TransferWorld.options(concurrency: 1, onRow: rows.onRow))
        #expect(summary.outcomes[.succeeded] == 2 && summary.outcomes[.failed] == 1, "\(summary.line)")
        #expect(summary.failedRows == 1 && summary.stop == nil)
        #expect(summary.reasons == ["invalid-request": 1])
        #expect(summary.exitStatus == 1, "the CLI exits 1: some rows failed")
        let bobRow = try #require(rows.row(bob.accountID))
        #expect(bobRow.outcome == .failed && bobRow.reason == "invalid-request")
        #expect(bobRow.from == .linked && bobRow.to == .transferFailed)
        let record = try #require(try world.record(bob))
        #expect(record.status == TransferStatus.transferFailed.rawValue)
        #expect(record.failureReason == "invalid-request" && record.attempts == 1)
        for user in [alice, carol] {
            #expect(try world.record(user)?.status == TransferStatus.transferPrepared.rawValue)
        }

        // A re-run retries only the failed row.
        let again = try await world.prepare()
        #expect(again.outcomes[.failed] == 1 && again.outcomes[.alreadyDone] == 2, "\(again.line)")
        #expect(try world.record(bob)?.attempts == 2)
        #expect(world.appleA.count(.transferSub) == 4)
    }

    @Test("a row limit interrupts the batch; the re-run does the rest, every account once")
    func resumeAfterLimit() async throws {
        let world = try TransferWorld()
        let users = try (0..<10).map { try world.addLinkedUser("user\($0)") }

        let first = try await world.prepare(TransferWorld.options(concurrency: 3, limit: 4))
        #expect(first.outcomes[.succeeded] == 4 && first.limitReached, "\(first.line)")
        #expect(try world.transferRecordCount() == 4)

        let second = try await world.prepare(TransferWorld.options(concurrency: 3))
        #expect(second.outcomes[.succeeded] == 6 && second.outcomes[.alreadyDone] == 4, "\(second.line)")
        #expect(!second.limitReached)
        #expect(world.appleA.count(.transferSub) == 10, "no user was asked for twice")
        for user in users {
            #expect(try world.auditEvents(user, named: "transfer.transferIdentifierObtained") == 1)
        }
    }

    @Test("a batch cancelled midway keeps what it committed; re-running transfers every account exactly once")
    func resumeAfterCancellation() async throws {
        let world = try TransferWorld()
        let users = try (0..<10).map { try world.addLinkedUser("user\($0)") }
        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()

        // Cancel the batch's task from its report callback once three rows are in, as an
        // operator's interrupt would.
        let rows = RowCollector()
        let batch = Mutex<Task<TransferBatchSummary, any Error>?>(nil)
        let options = TransferWorld.options(concurrency: 3) { row in
            rows.onRow(row)
            guard rows.all.count == 3 else { return }
            for _ in 0..<5000 where batch.withLock({ $0 == nil }) { usleep(1000) }
            batch.withLock { $0?.cancel() }
        }
        let task = Task { try await world.complete(windowEndsAt: windowEndsAt, options) }
        batch.withLock { $0 = task }
        let interrupted = try await task.value
        #expect(interrupted.stop?.code == .interrupted, "\(interrupted.line)")
        let done = interrupted.outcomes[.succeeded, default: 0]
        #expect((3..<10).contains(done), "\(interrupted.line)")
        #expect(try world.recipient.status(now: world.now).counts[.transferred] == done)

        let resumed = try await world.complete(windowEndsAt: windowEndsAt)
        #expect(resumed.stop == nil && resumed.failedRows == 0, "\(resumed.line)")
        #expect(resumed.outcomes[.succeeded] == 10 - done && resumed.outcomes[.alreadyDone] == done)
        #expect(world.appleB.count(.migrate) == 10, "no transfer identifier was exchanged twice")
        for user in users {
            #expect(try world.auditEvents(user, named: "transfer.newSubObtained") == 1)
            #expect(try world.record(user)?.status == TransferStatus.transferred.rawValue)
        }
    }

    @Test(
        "two complete batches racing over the same accounts: each account is transferred exactly once",
        arguments: Backend.all
    )
    func racingBatches(_ backend: Backend) async throws {
        let world = try TransferWorld(backend: backend)
        let users = try (0..<12).map { try world.addLinkedUser("user\($0)") }
        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()
        async let first = world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(concurrency: 4))
        async let second = world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(concurrency: 4))
        let summaries = try await [first, second]
        // Both batches may exchange one identifier (Apple's answer is the same); only one commit wins.
        #expect(summaries.allSatisfy { $0.failedRows == 0 && $0.stop == nil }, "\(summaries.map(\.line))")
        #expect(summaries.map { $0.outcomes[.succeeded, default: 0] }.reduce(0, +) == 12, "\(summaries.map(\.line))")
        for user in users {
            #expect(try world.auditEvents(user, named: "transfer.newSubObtained") == 1)
            #expect(try world.record(user)?.attempts == 2, "one prepare and one exchange recorded")
        }
    }

    @Test(
        "two prepare batches racing over one database: each account prepared once, no row fails in either",
        arguments: Backend.all
    )
    func racingPrepareBatches(_ backend: Backend) async throws {
        let world = try TransferWorld(backend: backend)
        let users = try (0..<4).map { try world.addLinkedUser("user\($0)") }
        // Apple's answers, which are the same for both batches (stable per user and recipient team).
        let token = try await world.clientA.teamAccessToken(clientID: TransferWorld.clientID).accessToken
        var transferSubs: [String: String] = [:]
        for user in users {
            transferSubs[user.accountID] = try await world.clientA.transferSub(
                forSub: user.subA,
                target: TransferWorld.teamB,
                clientID: TransferWorld.clientID,
                accessToken: token
            )
        }
        // The other batch records every account after this one has read its first account and asked
        // Apple, and before this one writes: its first commit finds a record it did not read.
        let sender = world.sender
        let now = world.now
        let identifiers = transferSubs
        let store = InterleavingStore(world.store) {
            for (accountID, transferSub) in identifiers {
                var commit = TransferService.Commit(event: .transferIdentifierObtained(transferSub: transferSub))
                commit.isStepOutcome = true
                commit.targetTeamID = TransferWorld.teamB
                _ = try sender.commit(accountID: accountID, commit, now: now)
            }
        }
        let late = TransferService(
            store: store,
            apple: CountingMigrator(world.clientA),
            configuration: TransferServiceConfiguration(teamID: TransferWorld.teamA)
        )
        let rows = RowCollector()
        let summary = try await late.prepare(
            targetTeamID: TransferWorld.teamB,
            clientID: TransferWorld.clientID,
            windowEndsAt: nil,
            now: now,
            options: TransferWorld.options(concurrency: 1, onRow: rows.onRow)
        )

        #expect(summary.failedRows == 0 && summary.exitStatus == 0, "\(summary.line)")
        #expect(summary.outcomes[.alreadyDone] == users.count, "\(summary.line)")
        for user in users {
            let row = rows.row(user.accountID)
            #expect(row?.outcome == .alreadyDone && row?.to == .transferPrepared, "\(String(describing: row))")
            #expect(try world.auditEvents(user, named: "transfer.transferIdentifierObtained") == 1)
            #expect(try world.record(user)?.attempts == 1, "one preparation recorded")
            #expect(try world.record(user)?.transferSub == transferSubs[user.accountID])
        }
    }

    @Test("a dry run makes no per-user Apple call and writes nothing, and says what would happen")
    func dryRun() async throws {
        let world = try TransferWorld()
        let users = try (0..<3).map { try world.addLinkedUser("user\($0)") }
        let rows = RowCollector()

        let plan = try await world.prepare(TransferWorld.options(dryRun: true, onRow: rows.onRow))
        #expect(plan.dryRun && plan.outcomes[.wouldRun] == 3 && plan.failedRows == 0, "\(plan.line)")
        #expect(rows.all.allSatisfy { $0.dryRun && $0.to == .transferPrepared })
        #expect(world.appleA.count(.transferSub) == 0)
        #expect(world.appleA.count(.teamAccessToken) == 1, "the credentials are still checked")
        #expect(try world.transferRecordCount() == 0)
        #expect(try world.auditCount(users) == 0)

        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()
        let audit = try world.auditCount(users)
        let completion = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(dryRun: true))
        #expect(completion.outcomes[.wouldRun] == 3, "\(completion.line)")
        #expect(world.appleB.count(.migrate) == 0)
        #expect(try world.auditCount(users) == audit)
        #expect(try world.recipient.status(now: world.now).counts[.transferPrepared] == 3)

        // After the window a dry run predicts the failures without recording them.
        world.advance(TransferStateMachine.windowLength)
        let late = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(dryRun: true))
        #expect(late.outcomes[.wouldFail] == 3 && late.reasons == ["window-closed": 3], "\(late.line)")
        #expect(try world.recipient.status(now: world.now).counts[.transferPrepared] == 3)
    }

    @Test("credentials Apple refuses stop the batch before any row; a refusal mid-batch stops the rest")
    func invalidClientStops() async throws {
        let world = try TransferWorld()
        let users = try (0..<6).map { try world.addLinkedUser("user\($0)") }

        // A key the team never registered: Apple answers invalid_client to the token request.
        let stranger = try world.emulator.client(
            teamID: TransferWorld.teamA,
            keyID: "KEYX999999",
            privateKey: P256PrivateKey()
        )
        let misconfigured = TransferService(
            store: world.store,
            apple: stranger,
            configuration: TransferServiceConfiguration(teamID: TransferWorld.teamA)
        )
        let refused = try await misconfigured.prepare(
            targetTeamID: TransferWorld.teamB,
            clientID: TransferWorld.clientID,
            windowEndsAt: nil,
            now: world.now,
            options: TransferWorld.options()
        )
        #expect(refused.stop?.code == .configuration && refused.rows == 0)
        #expect(refused.stop?.message.contains("invalid_client") == true)
        #expect(refused.exitStatus == 2, "a configuration error")
        #expect(try world.transferRecordCount() == 0)

        // Apple starts refusing the client on the third user call: the batch stops, nothing is
        // marked failed, and a re-run with working credentials completes every row.
        world.appleA.script { call, number in
            call == .transferSub && number >= 3
                ? AppleEndpointError(code: .invalidClient, httpStatus: 400, message: "scripted") : nil
        }
        let stopped = try await world.prepare(TransferWorld.options(concurrency: 1))
        #expect(stopped.stop?.code == .configuration, "\(stopped.line)")
        #expect(stopped.outcomes[.succeeded] == 2 && stopped.outcomes[.stopped] == 1, "\(stopped.line)")
        #expect(stopped.outcomes[.failed] == 0)
        #expect(try world.transferRecordCount() == 2)

        world.appleA.script(nil)
        let resumed = try await world.prepare()
        #expect(resumed.outcomes[.succeeded] == 4 && resumed.outcomes[.alreadyDone] == 2, "\(resumed.line)")
        for user in users { #expect(try world.record(user)?.status == TransferStatus.transferPrepared.rawValue) }
    }

    @Test("a new sub already linked to another account is a conflict for that row; nothing is merged")
    func newSubConflict() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()

        // During the window Alice also upgraded another password account with team B's id.
        let aliceB = try world.emulator.subject(userID: alice.appleUserID, teamID: TransferWorld.teamB)
        try world.addOtherAccount(linkedTo: aliceB)
        let rows = RowCollector()
        let summary = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(onRow: rows.onRow))
        #expect(summary.outcomes[.conflict] == 1 && summary.outcomes[.succeeded] == 1, "\(summary.line)")
        #expect(summary.outcomes[.skipped] == 1, "the other account is already in team B")
        #expect(rows.row("acct-other")?.reason == "in-recipient-team")
        #expect(summary.skipReasons == ["in-recipient-team": 1])
        #expect(summary.line.contains("1 skipped (in-recipient-team 1)"), "\(summary.line)")
        #expect(rows.row(alice.accountID)?.reason == "sub-conflict")
        #expect(try world.record(alice)?.status == TransferStatus.transferPrepared.rawValue)
        #expect(try world.link(alice)?.sub == alice.subA, "Alice's link is untouched")
        #expect(try world.store.read { try $0.appleLink(sub: aliceB) }?.accountID == "acct-other")
        #expect(try world.auditEvents(alice, named: "transfer.subConflict") == 1)
        #expect(try world.record(bob)?.status == TransferStatus.transferred.rawValue)
    }

    @Test("complete after the window records window-closed; a new window lets the re-run succeed")
    func windowClosed() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()

        let early = try await world.complete(windowEndsAt: world.now - 1)
        #expect(early.outcomes[.failed] == 1 && early.reasons == ["window-closed": 1], "\(early.line)")
        #expect(world.appleB.count(.migrate) == 0, "the machine refuses before Apple is asked")
        #expect(try world.record(alice)?.failureReason == "window-closed")

        let retried = try await world.complete(windowEndsAt: windowEndsAt)
        #expect(retried.outcomes[.succeeded] == 1, "\(retried.line)")
        #expect(try world.record(alice)?.status == TransferStatus.transferred.rawValue)
    }

    @Test("a batch reads its clock per row: a row begun after the window closed fails, each row is recorded when done")
    func clockPerRow() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        _ = try await world.prepare()
        _ = try world.transferApp()
        let started = world.now
        // The window closes 100 s after the batch starts; Alice's exchange takes 200 s.
        // The script holds the world: dropped at the end, or world and database outlive the test.
        defer { world.appleB.script(nil) }
        world.appleB.script { call, number in
            if call == .migrate && number == 1 { world.advance(200) }
            return nil
        }
        var options = TransferWorld.options(concurrency: 1)
        options.clock = { world.now }
        let summary = try await world.complete(windowEndsAt: started + 100, options)
        #expect(summary.outcomes[.succeeded] == 1 && summary.reasons == ["window-closed": 1], "\(summary.line)")
        #expect(world.appleB.count(.migrate) == 1, "Bob's row began after the window closed")
        #expect(try world.record(bob)?.failureReason == "window-closed")
        let migrated = try world.audit(alice).filter { $0.event == "transfer.newSubObtained" }
        #expect(migrated.map(\.at) == [started + 200], "recorded when Apple answered, not when the batch began")
        #expect(try world.record(alice)?.updatedAt == started + 200)
    }

    @Test("complete reports accounts without a transfer identifier, and stops if prepared for another team")
    func completePreconditions() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        let windowEndsAt = try world.transferApp()
        let rows = RowCollector()
        let summary = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(onRow: rows.onRow))
        #expect(summary.outcomes[.notPrepared] == 2 && summary.failedRows == 2, "\(summary.line)")
        #expect(rows.row(alice.accountID)?.reason == "never-prepared")

        // The sender may still prepare during the window (docs/apple-protocol.md §3.2); then team C's
        // configuration must not complete transfers made for team B.
        _ = try await world.prepare()
        let teamC = TransferService(
            store: world.store,
            apple: world.appleB,
            configuration: TransferServiceConfiguration(teamID: "TEAMC00000")
        )
        let wrongTeam = try await teamC.complete(
            clientID: TransferWorld.clientID,
            windowEndsAt: windowEndsAt,
            now: world.now,
            options: TransferWorld.options()
        )
        #expect(wrongTeam.stop?.code == .configuration, "\(wrongTeam.line)")
        #expect(wrongTeam.stop?.message.contains(TransferWorld.teamB) == true)
        #expect(world.appleB.count(.migrate) == 0)
        #expect(try world.record(bob)?.status == TransferStatus.transferPrepared.rawValue)
    }

    @Test("a different target team for prepared rows is a conflict, not a silent skip")
    func otherTargetTeam() async throws {
        let world = try TransferWorld()
        try world.emulator.addTeam("TEAMC00000")
        try world.addLinkedUser("alice")
        _ = try await world.prepare()
        let summary = try await world.sender.prepare(
            targetTeamID: "TEAMC00000",
            clientID: TransferWorld.clientID,
            windowEndsAt: nil,
            now: world.now,
            options: TransferWorld.options()
        )
        #expect(summary.outcomes[.conflict] == 1 && summary.reasons == ["other-target-team": 1], "\(summary.line)")
        #expect(world.appleA.count(.transferSub) == 1)
    }

    @Test("429/5xx are retried with backoff; after the last try the row is left for a re-run")
    func unavailableIsRetried() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let unavailable = AppleEndpointError(code: .unavailable, httpStatus: 503, message: "scripted")
        world.appleA.script { call, number in call == .transferSub && number <= 2 ? unavailable : nil }
        let summary = try await world.prepare(TransferWorld.options(maxAttempts: 3))
        #expect(summary.outcomes[.succeeded] == 1, "\(summary.line)")
        #expect(world.appleA.count(.transferSub) == 3)

        let bob = try world.addLinkedUser("bob")
        world.appleA.script { call, _ in call == .transferSub ? unavailable : nil }
        let down = try await world.prepare(TransferWorld.options(maxAttempts: 2, unavailableRowsBeforeStop: 1))
        #expect(down.outcomes[.unavailable] == 1 && down.outcomes[.alreadyDone] == 1, "\(down.line)")
        #expect(down.stop?.code == .appleUnavailable)
        #expect(try world.record(bob) == nil, "nothing recorded for a row Apple never answered")
        #expect(try world.record(alice)?.attempts == 1)
    }

    @Test("rows that block run side by side: more of them than Swift's cooperative threads are in flight at once")
    func rowsMayBlock() async throws {
        let world = try TransferWorld()
        // More rows than the cooperative pool has threads (one per core): a row that blocked one of
        // those would keep the others from starting.
        let rows = min(
            ProcessInfo.processInfo.activeProcessorCount + 2,
            TransferBatchOptions.concurrencyRange.upperBound
        )
        for index in 0..<rows { try world.addLinkedUser("user\(index)") }
        let arrived = Mutex(0)
        let everyone = DispatchSemaphore(value: 0)
        let missed = Mutex(0)
        // Each Apple call blocks its thread until every row is in one, or 10 s have passed.
        world.appleA.script { call, _ in
            guard call == .transferSub else { return nil }
            if arrived.withLock({ count in
                count += 1
                return count == rows
            }) {
                for _ in 0..<rows { everyone.signal() }
            }
            if everyone.wait(timeout: .now() + 10) == .timedOut { missed.withLock { $0 += 1 } }
            return nil
        }
        let summary = try await world.prepare(TransferWorld.options(concurrency: rows))
        #expect(summary.outcomes[.succeeded] == rows, "\(summary.line)")
        #expect(missed.withLock { $0 } == 0, "every row was in flight at once")
    }

    @Test("a page of rows is read in one query; rows' outcomes are then written in groups, with no read per row")
    func oneReadAndOneWritePerGroup() async throws {
        let world = try TransferWorld()
        let users = try (0..<5).map { try world.addLinkedUser("user\($0)") }
        let store = CountingStore(world.store)
        let sender = TransferService(
            store: store,
            apple: world.appleA,
            configuration: TransferServiceConfiguration(teamID: TransferWorld.teamA)
        )
        let summary = try await sender.prepare(
            targetTeamID: TransferWorld.teamB,
            clientID: TransferWorld.clientID,
            windowEndsAt: nil,
            now: world.now,
            options: TransferWorld.options()
        )
        #expect(summary.outcomes[.succeeded] == users.count, "\(summary.line)")
        // One read when the batch starts (the window of the transfer that brought the app to this
        // team, for rows it left behind), one page of accounts with what a row decides from, then
        // one write per group of rows that finished together, guarded by the versions the page read.
        let counts = store.counts
        #expect(counts.reads == 2, "\(counts)")
        #expect((1...users.count).contains(counts.writes), "\(counts)")
        #expect(try world.auditCount(users) == users.count, "one audit row per change")
    }

    @Test("a group whose write fails is committed row by row: the conflict is that row's alone")
    func groupFallsBackToRows() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        _ = try await world.prepare()
        _ = try world.transferApp()
        let aliceB = try world.emulator.subject(userID: alice.appleUserID, teamID: TransferWorld.teamB)
        let bobB = try world.emulator.subject(userID: bob.appleUserID, teamID: TransferWorld.teamB)
        // Alice's new id is already linked to another account: her row cannot be written.
        try world.addOtherAccount(linkedTo: aliceB)
        let auditBefore = try world.auditCount([alice, bob])
        let service = world.recipient
        let writes = try [(alice, aliceB), (bob, bobB)].map { user, newSub in
            let snapshot = try #require(try service.snapshot(accountID: user.accountID))
            let commit = TransferService.Commit(event: .newSubObtained(sub: newSub, email: nil))
            guard case .write(let write) = service.plan(snapshot, commit, now: world.now) else {
                throw TransferFailure(.internalError, "no write planned for \(user.accountID)")
            }
            return write
        }
        let results = service.writeTogether(writes)
        #expect(results.count == 2)
        guard case .success((_, .subConflict)) = results[0] else {
            Issue.record("alice: \(results[0])")
            return
        }
        guard case .success((.transferPrepared, .applied(_, let bobState))) = results[1] else {
            Issue.record("bob: \(results[1])")
            return
        }
        #expect(bobState.status == .transferred)
        #expect(try world.link(alice)?.sub == alice.subA, "Alice's link is untouched")
        #expect(try world.link(bob)?.sub == bobB)
        #expect(try world.auditEvents(alice, named: "transfer.subConflict") == 1)
        #expect(try world.auditCount([alice, bob]) == auditBefore + 2, "one row for each account")
    }

    @Test("an account changed after its page was read is judged against what is stored, not overwritten")
    func changedAfterItsPageWasRead() async throws {
        let world = try TransferWorld()
        let users = try [world.addLinkedUser("alice"), world.addLinkedUser("bob")]
        // While the first row calls Apple, both users revoke the app: Apple tells us, and the
        // notifications are recorded before either row commits what its page read.
        let delivered = Mutex<[String]>([])
        // The script holds the world: dropped at the end, or world and database outlive the test.
        defer { world.appleA.script(nil) }
        world.appleA.script { call, number in
            guard call == .transferSub, number == 1 else { return nil }
            do {
                for user in users {
                    try world.emulator.revokeConsent(userID: user.appleUserID, clientID: TransferWorld.clientID)
                }
                for event in try world.drainEvents() {
                    _ = try world.deliver(event, to: world.sender)
                    delivered.withLock { $0.append(event.type) }
                }
            } catch {
                delivered.withLock { $0.append("failed: \(error)") }
            }
            return nil
        }
        let rows = RowCollector()
        let summary = try await world.prepare(TransferWorld.options(concurrency: 1, onRow: rows.onRow))
        #expect(delivered.withLock { $0 }.count == 2, "\(delivered.withLock { $0 })")
        #expect(summary.outcomes[.skipped] == 2, "\(summary.line)")
        for user in users {
            #expect(rows.row(user.accountID)?.reason == "not-migratable")
            #expect(try world.record(user)?.status == TransferStatus.revoked.rawValue)
            #expect(try world.link(user)?.status == .revoked)
            #expect(try world.audit(user).map(\.event) == ["transfer.consentRevoked"], "nothing of the batch's")
        }
    }

    @Test("a team token Apple no longer accepts (invalid_grant) is fetched again once")
    func expiredTeamToken() async throws {
        let world = try TransferWorld()
        for index in 0..<3 { try world.addLinkedUser("user\(index)") }
        // Before the second user call an hour and more passes on Apple's clock: the token expired.
        // The script holds the world: dropped at the end, or world and database outlive the test.
        defer { world.appleA.script(nil) }
        world.appleA.script { call, number in
            if call == .transferSub && number == 2 { world.advance(3700) }
            return nil
        }
        let summary = try await world.prepare(TransferWorld.options(concurrency: 1))
        #expect(summary.outcomes[.succeeded] == 3, "\(summary.line)")
        #expect(world.appleA.count(.teamAccessToken) == 2)
    }

    @Test("bad input is refused before anything happens")
    func validation() async throws {
        let world = try TransferWorld()
        try world.addLinkedUser("alice")
        await #expect(throws: TransferFailure.self) {
            try await world.sender.prepare(
                targetTeamID: TransferWorld.teamA,
                clientID: TransferWorld.clientID,
                windowEndsAt: nil,
                now: world.now
            )
        }
        for target in ["teamb67890", "TEAMB6789", "TEAMB67890X", ""] {
            do {
                _ = try await world.sender.prepare(
                    targetTeamID: target,
                    clientID: TransferWorld.clientID,
                    windowEndsAt: nil,
                    now: world.now
                )
                Issue.record("target '\(target)' accepted")
            } catch {
                #expect(error.code == .validation)
            }
        }
        do {
            _ = try await world.prepare(TransferWorld.options(concurrency: 0))
            Issue.record("concurrency 0 accepted")
        } catch let error as TransferFailure {
            #expect(error.code == .validation)
        }
        do {
            _ = try await world.recipient.complete(clientID: "bad id", windowEndsAt: world.now, now: world.now)
            Issue.record("a client id with a space accepted")
        } catch {
            #expect(error.code == .validation)
        }
        #expect(world.appleA.count(.teamAccessToken) == 0)
        #expect(try world.transferRecordCount() == 0)
    }
}

extension AppleIDEmulator {
    /// The transfer identifier Apple keeps for a user moving from `from` to team B (read through
    /// the endpoint a recipient would not use, only to check what was stored).
    func transferSub(_ user: TransferWorld.User, from: String) throws -> String? {
        state.withLock { state in
            state.transferIDs[
                EmulatorState.TransferKey(userID: user.appleUserID, fromTeam: from, toTeam: TransferWorld.teamB)
            ]
        }
    }
}
