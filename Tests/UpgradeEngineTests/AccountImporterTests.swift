import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `AccountImporter`: the exact report of a mixed file, resuming, conflicts, dry runs, and imported
/// accounts signing in with their original passwords and TOTP codes.
@Suite("Account import")
struct AccountImporterTests {
    static let now: Int64 = 1_760_000_000
    static let totpSecret = Array("12345678901234567890".utf8)
    static let totpURI = "otpauth://totp/Example:alice?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Example"
    static let plainCode = "7KQM-W3XD-PF9A-7KQM-W3XD-PF9A"
    static let hashedCode = RecoveryCodes.hash("23456789ABCDEFGHJKLMNPQR")

    /// One row per fixture scheme, then TOTP, recovery codes, Apple subs, and one bad row of each kind.
    static func mixedFile() -> (text: String, expected: [ImportRowReport]) {
        var lines: [String] = []
        var expected: [ImportRowReport] = []
        func add(_ object: [String: Any], _ username: String?, _ action: ImportAction, _ reason: String? = nil) {
            let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            lines.append(String(decoding: data, as: UTF8.self))
            expected.append(
                ImportRowReport(line: Int64(lines.count), username: username, action: action, reason: reason)
            )
        }
        for entry in PasswordRehashTests.legacy {
            let name = "user\(lines.count + 1)"
            add(["username": name, "passwordHash": entry.hash, "email": "\(name)@example.com"], name, .created)
        }
        add(
            [
                "username": "Totp.User", "passwordHash": PasswordRehashTests.legacy[0].hash, "totp": totpURI,
                "recoveryCodes": [plainCode, hashedCode], "displayName": "Ünïcode Name",
            ],
            "totp.user",
            .created
        )
        add(["username": "apple1", "appleSub": "001234.aaaa.0001"], "apple1", .created)
        add(
            ["username": "apple2", "appleSub": "001234.aaaa.0001"],
            "apple2",
            .error,
            "appleSub: already linked to another account"
        )
        add(
            ["username": "USER1", "passwordHash": PasswordRehashTests.legacy[1].hash],
            "user1",
            .error,
            "username: duplicate of line 1 in this file"
        )
        add(
            ["username": "existing", "passwordHash": PasswordRehashTests.legacy[0].hash],
            "existing",
            .skipped,
            "username: an account with this username already exists"
        )
        add(["username": "has space", "passwordHash": PasswordRehashTests.legacy[0].hash], "has space", .error, nil)
        add(["email": "x@y"], nil, .error, "username: is required")
        add(
            ["username": "nohash"],
            "nohash",
            .error,
            ImportRowValidator.missingCredential
        )
        add(["username": "unknownhash", "passwordHash": "hunter2"], "unknownhash", .error, nil)
        add(
            ["username": "costly", "passwordHash": "$2b$31$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"],
            "costly",
            .error,
            nil
        )
        add(
            [
                "username": "badtotp", "passwordHash": PasswordRehashTests.legacy[0].hash,
                "totp": "otpauth://hotp/x?secret=GEZDGNBV",
            ],
            "badtotp",
            .error,
            nil
        )
        add(
            [
                "username": "badcode", "passwordHash": PasswordRehashTests.legacy[0].hash, "totp": totpURI,
                "recoveryCodes": ["nope"],
            ],
            "badcode",
            .error,
            "recoveryCodes: code 1 is neither a stored hash (64 lowercase hex digits) nor a code of 24 symbols from 23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
        )
        add(
            ["username": "mixed", "passwordHash": PasswordRehashTests.legacy[0].hash, "appleSub": "001234.bbbb.0002"],
            "mixed",
            .error,
            "appleSub: an Apple-linked account signs in with Apple only; leave passwordHash, legacyPassword, totp and recoveryCodes empty"
        )
        add(
            ["username": "bademail", "passwordHash": PasswordRehashTests.legacy[0].hash, "email": "no-at-sign"],
            "bademail",
            .error,
            "email: must have the form local@domain with exactly one '@'"
        )
        lines.append("{\"username\": ")
        expected.append(ImportRowReport(line: Int64(lines.count), username: nil, action: .error, reason: nil))
        return (lines.joined(separator: "\n") + "\n", expected)
    }

    static func options(_ runID: String = "run-1") -> AccountImportOptions {
        var options = AccountImportOptions(runID: runID, source: "test.jsonl (jsonl)")
        options.batchSize = 4
        options.secrets = SecretBox.developmentOnly()
        options.appleTeamID = "TEAMA12345"
        options.appleClientID = "com.example.app"
        return options
    }

    static func run(
        _ store: any UpgradeStore,
        _ text: String,
        options: AccountImportOptions = options(),
        reference: (any UpgradeStore)? = nil
    ) throws -> ([ImportRowReport], ImportSummary) {
        var reader = ImportReader(bytes: Array(text.utf8), format: .jsonl)
        var reports: [ImportRowReport] = []
        let summary = try AccountImporter(store: store, reference: reference, options: options)
            .run(&reader, now: { now }, onRow: { reports.append($0) })
        return (reports, summary)
    }

    static func addExisting(_ store: any UpgradeStore) throws {
        try store.write { tx in
            try tx.insertAccount(
                AccountRecord(
                    id: "existing-id",
                    username: "existing",
                    credentialKind: .password,
                    createdAt: now,
                    updatedAt: now
                )
            )
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: "existing-id", hash: "old", format: "bcrypt", updatedAt: now)
            )
        }
    }

    static func auditCount(_ store: any UpgradeStore) throws -> Int {
        try store.read { tx in
            try tx.accounts(afterID: nil, limit: 1000).reduce(0) {
                $0 + (try tx.auditTrail(accountID: $1.id, limit: 100).count)
            }
        }
    }

    @Test("a mixed file gives the exact report; a second run is a no-op", arguments: Backend.all)
    func mixedFile(_ backend: Backend) throws {
        let db = try backend.database()
        try Self.addExisting(db.store)
        let (text, expected) = Self.mixedFile()
        let (reports, summary) = try Self.run(db.store, text)
        #expect(reports.count == expected.count)
        for (got, want) in zip(reports, expected) {
            #expect(got.line == want.line)
            #expect(got.username == want.username, "line \(want.line)")
            #expect(got.action == want.action, "line \(want.line): \(got.reason ?? "")")
            if let reason = want.reason { #expect(got.reason == reason, "line \(want.line)") }
            if want.action == .error { #expect(got.reason?.isEmpty == false, "line \(want.line) says why") }
        }
        let created = expected.filter { $0.action == .created }.count
        #expect(summary.created == created && summary.skipped == 1 && summary.failed == expected.count - created - 1)
        #expect(try Self.auditCount(db.store) == created, "one audit row per created account")

        let (totp, link, apple, codes, profile) = try db.store.read { tx in
            let account = try #require(try tx.account(username: Username("totp.user")))
            let apple = try #require(try tx.account(username: Username("apple1")))
            return (
                try tx.totpEnrollment(accountID: account.id), try tx.appleLink(accountID: apple.id), apple,
                try tx.unusedRecoveryCodeCount(accountID: account.id), try tx.accountProfile(accountID: account.id)
            )
        }
        #expect(totp?.algorithm == .sha1 && totp?.digits == 6)
        #expect(codes == 2)
        #expect(profile?.displayName == "Ünïcode Name")
        #expect(profile?.importLine == Int64(PasswordRehashTests.legacy.count + 1))
        #expect(apple.credentialKind == .appleOnly)
        #expect(link?.sub == "001234.aaaa.0001" && link?.teamID == "TEAMA12345" && link?.status == .linked)

        // The same import again: every row was committed, nothing is written.
        let (again, second) = try Self.run(db.store, text)
        #expect(again.allSatisfy { $0.action == .skipped && $0.reason == "committed by an earlier run of this import" })
        #expect(second.alreadyCommitted == expected.count && second.created == 0 && second.failed == 0)
        #expect(second.failedInEarlierRuns == Int64(summary.failed))
        #expect(try Self.auditCount(db.store) == created)
    }

    /// A batch's rows are decided before any is written, so a row meets the ones before it in its
    /// batch through what the batch has taken, not through the database: one batch or one row per
    /// batch, the report is the same.
    @Test("the report does not depend on the batch size", arguments: Backend.all, [1, 1000])
    func batchSizeIndependent(_ backend: Backend, batchSize: Int) throws {
        let db = try backend.database()
        try Self.addExisting(db.store)
        let (text, expected) = Self.mixedFile()
        var options = Self.options()
        options.batchSize = batchSize
        let (reports, _) = try Self.run(db.store, text, options: options)
        #expect(reports.map(\.line) == expected.map(\.line))
        #expect(reports.map(\.action) == expected.map(\.action))
        #expect(reports.map(\.username) == expected.map(\.username))
        for (got, want) in zip(reports, expected) where want.reason != nil {
            #expect(got.reason == want.reason, "line \(want.line)")
        }
        #expect(try Self.auditCount(db.store) == expected.filter { $0.action == .created }.count)

        // Updating: a username updated or created earlier in the same batch is the duplicate.
        var update = Self.options("run-update-\(batchSize)")
        update.onConflict = .update
        update.batchSize = batchSize
        let hash = PasswordRehashTests.legacy[0].hash
        let again = """
            {"username":"existing","passwordHash":"\(hash)"}
            {"username":"fresh","passwordHash":"\(hash)"}
            {"username":"EXISTING","passwordHash":"\(hash)"}
            {"username":"Fresh","passwordHash":"\(hash)"}
            {"username":"apple3","appleSub":"001234.cccc.0003"}
            {"username":"apple4","appleSub":"001234.cccc.0003"}
            """
        let (updated, _) = try Self.run(db.store, again, options: update)
        #expect(updated.map(\.action) == [.updated, .created, .error, .error, .created, .error])
        #expect(updated[2].reason == "username: duplicate of line 1 in this file")
        #expect(updated[3].reason == "username: duplicate of line 2 in this file")
        #expect(updated[5].reason == "appleSub: already linked to another account")
    }

    /// `--concurrency`: a batch's rows are checked on several threads, each a share of the batch,
    /// and decided by one writer in input order, so the report and what is stored are those of a
    /// run on one thread, whatever refusals, duplicates and look-alikes fall in different shares.
    @Test("the report does not depend on the concurrency", arguments: Backend.all)
    func concurrencyIndependent(_ backend: Backend) throws {
        let hash = PasswordRehashTests.legacy[0].hash
        var lines: [String] = []
        for index in 0..<900 {
            switch index % 9 {
            case 1: lines.append("{\"username\":\"user\(index)\",\"passwordHash\":\"$9$nothing\"}")
            case 2: lines.append("{\"username\":\"user\(index)\",\"passwordHash\":\"\(hash)\",\"email\":\"bad\"}")
            case 3: lines.append("{\"username\":\"AUSER\(index - 3)\",\"passwordHash\":\"\(hash)\"}")
            case 4: lines.append("{\"username\":\"us\u{435}r\(index)\",\"passwordHash\":\"\(hash)\"}")
            case 5: lines.append("{\"username\":\"\u{251}user\(index - 5)\",\"passwordHash\":\"\(hash)\"}")
            case 6:
                lines.append(
                    "{\"username\":\"user\(index)\",\"totp\":\"\(Self.totpURI)\",\"passwordHash\":\"\(hash)\"}"
                )
            case 7: lines.append("{\"username\": ")
            default: lines.append("{\"username\":\"auser\(index)\",\"passwordHash\":\"\(hash)\"}")
            }
        }
        let text = lines.joined(separator: "\n") + "\n"
        var outcomes: [[ImportRowReport]] = []
        var storedNames: [[String]] = []
        for concurrency in [1, 4] {
            let db = try backend.database()
            var options = Self.options("run-concurrency-\(concurrency)")
            options.batchSize = 500
            options.concurrency = concurrency
            let (reports, summary) = try Self.run(db.store, text, options: options)
            #expect(reports.count == 900)
            #expect(summary.created + summary.failed == 900)
            outcomes.append(reports)
            let stored = try db.store.read { try $0.accounts(afterID: nil, limit: 2000) }
            storedNames.append(stored.map(\.username).sorted())
        }
        #expect(outcomes[0] == outcomes[1])
        #expect(storedNames[0] == storedNames[1])
        // Each kind of row met its fate, so the comparison above compared refusals of each kind.
        let reasons = outcomes[0].compactMap(\.reason)
        for expected in ["passwordHash:", "email:", "duplicate of line", "mixes scripts", "looks like"] {
            #expect(reasons.contains { $0.contains(expected) }, "no refusal containing '\(expected)'")
        }
    }

    @Test(
        "look-alike usernames are refused: of a stored account (named), of an earlier line, mixed scripts",
        arguments: Backend.all,
        [1, 1000]
    )
    func lookAlikes(_ backend: Backend, batchSize: Int) throws {
        let db = try backend.database()
        try Self.addExisting(db.store)
        var options = Self.options("run-look-alikes-\(batchSize)")
        options.batchSize = batchSize
        options.onConflict = .update
        let hash = PasswordRehashTests.legacy[0].hash
        let text = """
            {"username":"alice","passwordHash":"\(hash)"}
            {"username":"\u{251}lice","passwordHash":"\(hash)"}
            {"username":"\u{430}lice","passwordHash":"\(hash)"}
            {"username":"alic\u{435}","passwordHash":"\(hash)"}
            {"username":"\u{435}xisting","passwordHash":"\(hash)"}
            {"username":"\u{1C0}xisting","passwordHash":"\(hash)"}
            {"username":"existing","passwordHash":"\(hash)"}
            {"username":"\u{438}\u{432}\u{430}\u{43D}","passwordHash":"\(hash)"}
            """
        let (reports, _) = try Self.run(db.store, text, options: options)
        #expect(reports.map(\.action) == [.created, .error, .error, .error, .error, .created, .updated, .created])
        let look = "(the same confusable skeleton)"
        #expect(reports[1].reason == "username: looks like the username of line 1 in this file \(look)")
        #expect(reports[2].reason?.hasPrefix("username: the username mixes scripts Latin and Cyrillic") == true)
        #expect(reports[3].reason?.contains("U+0435 CYRILLIC SMALL LETTER IE") == true)
        #expect(reports[4].reason?.contains("mixes scripts") == true, "\(reports[4])")
        #expect(reports[5].reason == nil, "ǀxisting is not existing's look-alike: \(reports[5])")
        let stored = try db.store.read { try $0.accounts(afterID: nil, limit: 100) }.map(\.username).sorted()
        #expect(stored == ["alice", "existing", "\u{1C0}xisting", "\u{438}\u{432}\u{430}\u{43D}"].sorted())

        // A later import names the stored look-alike; a dry run against the database does too.
        let later = """
            {"username":"al\u{131}ce","passwordHash":"\(hash)"}
            """
        let named = "username: looks like the existing account 'alice' \(look); an account's look-alike is refused"
        let (second, _) = try Self.run(db.store, later, options: Self.options("run-later-\(batchSize)"))
        #expect(second.map(\.reason) == [named])
        let scratch = try Backend.sqlite.database()
        let (dry, _) = try Self.run(
            scratch.store,
            later,
            options: Self.options("run-dry-\(batchSize)"),
            reference: db.store
        )
        #expect(dry.map(\.reason) == [named])
    }

    @Test("--on-conflict update replaces what the row gives and audits it once", arguments: Backend.all)
    func updateExisting(_ backend: Backend) throws {
        let db = try backend.database()
        try Self.addExisting(db.store)
        var options = Self.options("run-update")
        options.onConflict = .update
        let hash = PasswordRehashTests.legacy[0].hash
        let text = """
            {"username":"existing","passwordHash":"\(hash)","totp":"\(Self.totpURI)","recoveryCodes":["\(Self.plainCode)"],"email":"e@example.com"}
            {"username":"Existing","passwordHash":"\(hash)"}
            """
        let (reports, _) = try Self.run(db.store, text, options: options)
        #expect(reports.map(\.action) == [.updated, .error])
        #expect(reports[1].reason == "username: duplicate of line 1 in this file")
        let (credential, totp, codes, trail) = try db.store.read { tx in
            (
                try tx.passwordCredential(accountID: "existing-id"), try tx.totpEnrollment(accountID: "existing-id"),
                try tx.unusedRecoveryCodeCount(accountID: "existing-id"),
                try tx.auditTrail(accountID: "existing-id", limit: 10)
            )
        }
        #expect(credential?.hash == hash)
        #expect(totp != nil)
        #expect(codes == 1)
        #expect(trail.map(\.event) == ["account.import-updated"])
    }

    @Test("a dry run reports what a run would do and writes nothing to the real database", arguments: Backend.all)
    func dryRun(_ backend: Backend) throws {
        let db = try backend.database()
        try Self.addExisting(db.store)
        let scratch = try Backend.sqlite.database()
        let (text, expected) = Self.mixedFile()
        let (reports, _) = try Self.run(scratch.store, text, reference: db.store)
        #expect(reports.map(\.action) == expected.map(\.action))
        #expect(try db.store.read { try $0.accounts(afterID: nil, limit: 100) }.map(\.username) == ["existing"])
        #expect(try db.store.read { try $0.importRun(id: "run-1") } == nil)
    }

    @Test("imported accounts' ids are UUIDv7s that increase in input order", arguments: Backend.all)
    func idsIncrease(_ backend: Backend) throws {
        let db = try backend.database()
        let hash = PasswordRehashTests.legacy[0].hash
        let names = (1...30).map { "user\($0)" }
        let text = names.map { "{\"username\":\"\($0)\",\"passwordHash\":\"\(hash)\"}" }.joined(separator: "\n")
        _ = try Self.run(db.store, text)
        let accounts = try db.store.read { try $0.accounts(afterID: nil, limit: 100) }
        #expect(accounts.map(\.username) == names, "ordered by id, the accounts are in input order")
        for account in accounts {
            let hex = account.id.replacingOccurrences(of: "-", with: "")
            #expect(account.id.count == 36 && hex.count == 32)
            #expect(Array(account.id)[14] == "7", "version 7")
            #expect("89ab".contains(Array(account.id)[19]), "RFC 9562 variant")
            #expect(UInt64(hex.prefix(12), radix: 16) == UInt64(Self.now) * 1000, "the import's second, in ms")
        }
    }

    /// The run's own reads and writes besides its batch (its progress row before, the finishing
    /// write after) are counted too; they are the same for both runs.
    @Test(
        "a batch costs PostgreSQL the same round trips whatever its size: one lookup, then its rows a chunk per statement",
        .enabled(if: TestPostgres.isAvailable, "UPGRADE_TEST_POSTGRES is not set")
    )
    func batchCost() throws {
        let db = try Backend.postgres.database()
        let store = try #require(db.postgresStore)
        let hash = PasswordRehashTests.legacy[0].hash
        func cost(_ rows: Int, run: String) throws -> PostgresTraffic {
            let text = (0..<rows).map { "{\"username\":\"\(run)-\($0)\",\"passwordHash\":\"\(hash)\"}" }
                .joined(separator: "\n")
            var options = Self.options(run)
            options.batchSize = rows
            let before = store.traffic
            let (reports, _) = try Self.run(db.store, text, options: options)
            #expect(reports.count == rows && reports.allSatisfy { $0.action == .created })
            return store.traffic - before
        }
        _ = try cost(MultiRowInsert.chunk, run: "warm")
        let small = try cost(MultiRowInsert.chunk, run: "small")
        let large = try cost(3 * MultiRowInsert.chunk, run: "large")
        // The batch, and the write that marks the run finished.
        #expect(small.commits == 2 && large.commits == 2, "\(small); \(large)")
        #expect(large.roundTrips == small.roundTrips, "\(small); \(large)")
        // Accounts, passwords, profiles and audit rows: two more chunks each.
        #expect(large.statements == small.statements + 4 * 2, "\(small); \(large)")
    }

    @Test("the id generator stays increasing past 4,096 ids in one millisecond")
    func idCounterOverflow() {
        var ids = AccountIDGenerator()
        var previous = ""
        for index in 0..<5000 {
            let id = ids.next(now: Self.now)
            #expect(id > previous, "id \(index)")
            previous = id
        }
        let millisecond = UInt64(previous.replacingOccurrences(of: "-", with: "").prefix(12), radix: 16)
        #expect(millisecond == UInt64(Self.now) * 1000 + 1, "the 4,097th id moved to the next millisecond")
    }

    @Test("imported accounts upgrade with their original password and TOTP, rehashed on the first check")
    func importedAccountsSignIn() throws {
        let h = try UpgradeHarness()
        let entry = PasswordRehashTests.legacy.first { $0.scheme == "{SSHA}" }!
        let text = """
            {"username":"imported","passwordHash":"\(entry.hash)","totp":"\(Self.totpURI)"}
            {"username":"plain","passwordHash":"\(entry.hash)"}
            """
        var options = Self.options()
        options.secrets = h.secrets
        let (reports, _) = try Self.run(h.store, text, options: options)
        #expect(reports.map(\.action) == [.created, .created])

        let plain = try h.service.start(
            username: "plain",
            password: entry.password,
            serviceIdentifier: "s",
            now: Self.now
        )
        #expect(plain.status == .awaitingAppleCredential)

        let started = try h.service.start(
            username: "imported",
            password: entry.password,
            serviceIdentifier: "s",
            now: Self.now
        )
        #expect(started.status == .stepUpRequired)
        let code = TOTP.code(secret: Self.totpSecret, parameters: .standard, counter: UInt64((Self.now + 30) / 30))
        let stepped = try h.service.stepUp(id: started.id, code: .totp(code), now: Self.now + 30)
        #expect(stepped.status == .awaitingAppleCredential)
        let account = try #require(try h.account("imported"))
        let credential = try #require(try h.store.read { try $0.passwordCredential(accountID: account.id) })
        #expect(credential.format == "argon2id")
        #expect(try PasswordVerifier().verify(password: entry.password, encodedHash: credential.hash))
    }
}
