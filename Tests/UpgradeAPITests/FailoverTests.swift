import AppleEmulator
import Foundation
import Synchronization
import Testing

@testable import UpgradeAPI
@testable import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A primary with a synchronous streaming standby (`Scripts/dev-postgres --standby`), two `serve`
/// processes given both hosts with `target_session_attrs=read-write`, and conversions running on
/// both while the primary's host dies (SIGKILL) and the standby is promoted (docs/architecture.md,
/// "Failover").
@Suite("Failover to a promoted standby")
struct FailoverTests {
    /// Conversions each instance must have acknowledged before the kill, and again after the promotion.
    static let acknowledgedPerPhase = 3
    /// How long the primary stays dead before the standby is promoted: calls in between are 503.
    static let outage = Duration.milliseconds(1500)
    /// Clients making calls at once, spread over the two instances.
    static let clients = 4

    /// A primary and its synchronous standby, and the URLs to reach them.
    struct Pair {
        let primary: CrashablePostgres
        let standbyDirectory: String
        /// Both hosts, `target_session_attrs=read-write`.
        let url: String
        let standbyURL: String
        let hosts: String
        let database: String
        let password: String

        init() throws {
            primary = try CrashablePostgres()
            let standbyOutput: String
            do {
                standbyOutput = try CrashablePostgres.run(["--standby", primary.directory])
            } catch {
                primary.remove()
                throw error
            }
            func value(_ name: String) throws -> String {
                let line = standbyOutput.split(separator: "\n").first { $0.hasPrefix(name + "=") }
                return String(try #require(line, "no \(name) from dev-postgres --standby").dropFirst(name.count + 1))
            }
            standbyDirectory = try value("UPGRADE_DEV_POSTGRES_DIR")
            let standbyPort = try #require(Int(try value("UPGRADE_DEV_POSTGRES_PORT")))
            let primaryConfiguration = try PostgresConfiguration(url: primary.url)
            password = try #require(primaryConfiguration.password)
            let user = try #require(primaryConfiguration.user)
            database = primaryConfiguration.database
            hosts = "127.0.0.1:\(primaryConfiguration.port),127.0.0.1:\(standbyPort)"
            url = "postgres://\(user):\(password)@\(hosts)/\(database)?target_session_attrs=read-write"
            standbyURL = "postgres://\(user):\(password)@127.0.0.1:\(standbyPort)/\(database)"
        }

        func remove() {
            _ = try? CrashablePostgres.run(["--stop", standbyDirectory])
            primary.remove()
        }

        /// SIGKILLs the primary's processes, waits `outage`, promotes the standby.
        func failOver(after outage: Duration) async throws {
            try CrashablePostgres.run(["--sigkill", primary.directory])
            try await Task.sleep(for: outage)
            try CrashablePostgres.run(["--promote", standbyDirectory])
        }
    }

    @Test(
        "SIGKILL the primary under load from two serve instances, promote the standby: both follow without a restart, calls in the switch are 503 with Retry-After, every acknowledged conversion, password change and deletion is on the new primary with its webhook event, none half written",
        .enabled(if: ServePostgres.isAvailable, .init(rawValue: ServePostgres.reason)),
        .timeLimit(.minutes(2))
    )
    func killPrimaryUnderLoad() async throws {
        let pair = try Pair()
        defer { pair.remove() }
        let (url, standbyURL, hosts, database, password) = (
            pair.url, pair.standbyURL, pair.hosts, pair.database, pair.password
        )
        let primary = pair.primary
        let standbyDirectory = pair.standbyDirectory

        let tokens = FileManager.default.temporaryDirectory.appendingPathComponent(
            "failover-tokens-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: tokens) }
        let support = try AdminTokenFile.add(name: "support", scopes: [.accounts], path: tokens.path, now: 1)
        let fixture = try await ServeFixture(
            database: url,
            conversionTimeout: 2,
            environment: ["UPGRADE_ADMIN_TOKENS_FILE": tokens.path]
        )
        defer { fixture.stop() }
        // Besides the conversions, one client changes passwords and one deletes accounts, one
        // account each after another, on each instance.
        var changes: [String: String] = [:]
        var deletions: [String: String] = [:]
        for index in 0..<60 {
            changes["change\(index)"] = try fixture.addAccount("change\(index)").id
            deletions["delete\(index)"] = try fixture.addAccount("delete\(index)").id
        }
        // Two clients per instance, each converting accounts of its own one after another.
        var workloads: [[Account]] = Array(repeating: [], count: Self.clients)
        for index in 0..<160 {
            let username = "user\(index)"
            let account = try fixture.addAccount(username)
            let appleUser = try fixture.emulator.createUser(email: "\(username)@example.com")
            workloads[index % Self.clients].append(Account(id: account.id, username: username, appleUser: appleUser))
        }
        let bases = [try await fixture.startServe(), try await fixture.startServe()]
        for server in fixture.servers {
            // Every host is printed, the password never.
            #expect(
                server.errors.text.contains("upgrade:(redacted)@\(hosts)/\(database)?target_session_attrs=read-write")
            )
            #expect(!server.errors.text.contains(password))
        }

        let log = FailoverLog()
        let emulator = fixture.emulator
        var workers: [Task<Void, Never>] = []
        for (client, accounts) in workloads.enumerated() {
            let instance = client % bases.count
            let base = bases[instance]
            workers.append(
                Task.detached { await Self.convert(accounts, base: base, instance: instance, emulator, log) }
            )
        }
        let (changeNames, changeBase) = (changes.keys.sorted(), bases[0])
        let (deletionNames, deletionBase) = (deletions.keys.sorted(), bases[1])
        workers.append(Task.detached { await Self.changePasswords(changeNames, base: changeBase, log) })
        workers.append(
            Task.detached { await Self.deleteAccounts(deletionNames, base: deletionBase, token: support, log) }
        )
        defer { log.stop() }
        #expect(try await log.waitUntil(Self.acknowledgedPerPhase, since: .start), "no conversions before the kill")
        #expect(
            try await log.waitFor { !$0.changed.isEmpty && !$0.deleted.isEmpty },
            "no password change or deletion before the kill"
        )
        try CrashablePostgres.run(["--sigkill", primary.directory])
        log.mark(.killed)
        try await Task.sleep(for: Self.outage)
        try CrashablePostgres.run(["--promote", standbyDirectory])
        log.mark(.promoted)
        let resumed = try await log.waitUntil(Self.acknowledgedPerPhase, since: .promoted)
        log.stop()
        for worker in workers { await worker.value }
        #expect(resumed, "both instances must convert again after the promotion, without a restart")
        #expect(fixture.servers.allSatisfy { $0.process.isRunning }, "never restarted")

        let calls = log.calls
        let unavailable = calls.filter { $0.status == 503 }
        // No call is retried after a 503 that might have committed, so a 401 or 404 would be a fault.
        let unexpected = calls.filter { ![200, 201, 503].contains($0.status) }
        // The servers' lines for failures that were not 503: what underlay them (`cause`).
        let failureLines = fixture.servers.flatMap { server in
            server.errors.text.split(separator: "\n").filter {
                $0.contains("\"status\":5") && !$0.contains("\"status\":503")
            }
        }
        #expect(
            unexpected.isEmpty,
            "only successes and 503 expected: \(unexpected.prefix(5)); server lines: \(failureLines.prefix(5))"
        )
        #expect(!unavailable.isEmpty, "calls during the switch must have answered 503")
        for call in unavailable {
            #expect(call.problem == "database-unavailable" && call.retryAfter == "2", "\(call)")
        }

        // Checked against the promoted server alone: every acknowledged conversion is there, and
        // every account is either converted in full or not at all.
        let promoted = try DatabaseLocation.parse(standbyURL).open()
        let acknowledged = log.acknowledged
        var found = 0
        for account in workloads.joined() {
            let record = try #require(try promoted.read { try $0.account(id: account.id) })
            let link = try promoted.read { try $0.appleLink(accountID: account.id) }
            let passwordCredential = try promoted.read { try $0.passwordCredential(accountID: account.id) }
            let converted = record.credentialKind == .appleOnly
            #expect(
                converted
                    ? link != nil : record.credentialKind == .password && link == nil && passwordCredential != nil,
                "\(account.username) is half converted"
            )
            // Its webhook event is written in the conversion's transaction: there exactly when it is.
            let events = try promoted.read { tx in
                try (tx as! any SQLTransaction).scalarInt(
                    "SELECT COUNT(*) FROM webhook_outbox WHERE account_id = $1 AND type = $2",
                    [.text(account.id), .text(WebhookEventType.accountConverted.rawValue)]
                )
            }
            #expect(events == (converted ? 1 : 0), "\(account.username): \(events ?? -1) account.converted events")
            if acknowledged.contains(account.username) {
                #expect(converted, "\(account.username)'s acknowledged conversion is missing after the promotion")
                if converted { found += 1 }
            }
        }
        #expect(found == acknowledged.count)

        // A password change is the new hash and its `password.changed` event, or neither.
        let verifier = PasswordVerifier()
        let changed = log.changed
        #expect(!changed.isEmpty, "no password change was acknowledged")
        for (username, id) in changes {
            let credential = try #require(try promoted.read { try $0.passwordCredential(accountID: id) })
            let isNew = try verifier.verify(password: Self.newPassword, encodedHash: credential.hash)
            let events = try Self.events(promoted, accountID: id, .passwordChanged)
            #expect(events == (isNew ? 1 : 0), "\(username): \(events ?? -1) password.changed events")
            if changed.contains(username) {
                #expect(isNew, "\(username)'s acknowledged password change is missing after the promotion")
            }
        }
        // A deletion is the account gone and its `account.deleted` event, or neither.
        let deleted = log.deleted
        #expect(!deleted.isEmpty, "no deletion was acknowledged")
        for (username, id) in deletions {
            let gone = try promoted.read { try $0.account(id: id) } == nil
            let events = try Self.events(promoted, accountID: id, .accountDeleted)
            #expect(events == (gone ? 1 : 0), "\(username): \(events ?? -1) account.deleted events")
            if deleted.contains(username) {
                #expect(gone, "\(username)'s acknowledged deletion is missing after the promotion")
            }
        }
        print(
            "failover: \(acknowledged.count) conversions, \(changed.count) password changes and "
                + "\(deleted.count) deletions acknowledged, all found on the promoted server; "
                + "\(unavailable.count) calls answered 503 during the switch, \(calls.count) calls in all"
        )
    }

    static let newPassword = "a-New-passphrase-2-remember"

    /// Rows of the import that runs across the failover.
    static let importedRows = 40_000

    @Test(
        "an accounts import running when the primary is killed waits for the promoted standby and finishes there without a restart: every row once, none lost",
        .enabled(if: ServePostgres.isAvailable, .init(rawValue: ServePostgres.reason)),
        .timeLimit(.minutes(2))
    )
    func importAcrossFailover() async throws {
        let pair = try Pair()
        defer { pair.remove() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "siwa-failover-import-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["UPGRADE_DB": pair.url]
        let migrate = try ServeFixture.Running([], command: ["db", "migrate"], environment: environment)
        #expect(await migrate.exitStatus() == 0, "\(migrate.errors.text)")

        let file = directory.appendingPathComponent("accounts.jsonl")
        var lines = ""
        for index in 0..<Self.importedRows {
            lines += "{\"username\": \"imported\(index)\", \"legacyPassword\": true}\n"
        }
        try lines.write(to: file, atomically: true, encoding: .utf8)
        let run = try TransferCrashTests.start(
            ["accounts", "import", file.path, "--batch-size", "200"],
            environment: environment,
            directory: directory,
            name: "import"
        )
        defer { if run.process.isRunning { kill(run.process.processIdentifier, SIGKILL) } }

        // Killed once a tenth is in, so most of the import is left for the promoted server.
        let primary = try DatabaseLocation.parse(pair.primary.url).open()
        let deadline = ContinuousClock.now + .seconds(60)
        while try Self.count(primary, "SELECT COUNT(*) FROM accounts") < Self.importedRows / 10 {
            try #require(ContinuousClock.now < deadline, "the import did not start")
            try #require(run.process.isRunning, "the import ended early")
            try await Task.sleep(for: .milliseconds(20))
        }
        try await pair.failOver(after: Self.outage)
        #expect(run.process.isRunning, "the import must still be running when the standby is promoted")
        while run.process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!run.process.isRunning, "the import did not finish within a minute")
        run.process.waitUntilExit()
        let output = (try? String(contentsOf: run.stdout, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOf: run.stderr, encoding: .utf8)) ?? ""
        #expect(run.process.terminationStatus == 0, "\(output)\n\(errors)")
        #expect(output.contains("failed 0"), "\(output)")

        let promoted = try DatabaseLocation.parse(pair.standbyURL).open()
        #expect(try Self.count(promoted, "SELECT COUNT(*) FROM accounts") == Self.importedRows)
        #expect(try Self.count(promoted, "SELECT COUNT(DISTINCT username) FROM accounts") == Self.importedRows)
        #expect(
            try Self.count(promoted, "SELECT COUNT(*) FROM import_runs WHERE finished_at IS NOT NULL") == 1,
            "the import's progress says it finished"
        )
        print("failover during import: \(output.split(separator: "\n").last { $0.hasPrefix("created") } ?? "")")
    }

    static func count(_ store: any UpgradeStore, _ sql: String) throws -> Int {
        Int(try store.read { tx in try (tx as! any SQLTransaction).scalarInt(sql) } ?? -1)
    }

    /// Webhook events of `type` for `accountID` in the outbox.
    static func events(_ store: any UpgradeStore, accountID: String, _ type: WebhookEventType) throws -> Int64? {
        try store.read { tx in
            try (tx as! any SQLTransaction).scalarInt(
                "SELECT COUNT(*) FROM webhook_outbox WHERE account_id = $1 AND type = $2",
                [.text(accountID), .text(type.rawValue)]
            )
        }
    }

    /// Changes each account's password once through `base` until told to stop. An account whose call
    /// failed is not tried again: a 503 may have come after the commit.
    static func changePasswords(_ usernames: [String], base: String, _ log: FailoverLog) async {
        for username in usernames where !log.stopped {
            do {
                let answer = try await ServeFixture.send(
                    "POST",
                    base + "/v1/password-changes",
                    ["username": username, "password": "pw", "newPassword": newPassword, "serviceIdentifier": "s"]
                )
                log.record(answer)
                if answer.status == 201 && answer.json["status"] == "completed" { log.acknowledgeChange(username) }
            } catch {
                log.record(ServeFixture.Answer(status: 0, json: ["error": "\(error)"], retryAfter: nil, seconds: 0))
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Deletes each account once through `base` with the support token, as `changePasswords` does.
    static func deleteAccounts(_ usernames: [String], base: String, token: String, _ log: FailoverLog) async {
        for username in usernames where !log.stopped {
            do {
                let answer = try await ServeFixture.send(
                    "DELETE",
                    base + "/v1/admin/accounts/\(username)",
                    headers: ["Authorization": "Bearer \(token)"]
                )
                log.record(answer)
                if answer.status == 200 { log.acknowledgeDeletion(username) }
            } catch {
                log.record(ServeFixture.Answer(status: 0, json: ["error": "\(error)"], retryAfter: nil, seconds: 0))
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    struct Account: Sendable {
        let id: String
        let username: String
        let appleUser: String
    }

    /// Converts `accounts` one after another through `base` until told to stop. A start refused
    /// with 503 is tried again; an account whose conversion did not complete is left as it is.
    static func convert(
        _ accounts: [Account],
        base: String,
        instance: Int,
        _ emulator: AppleIDEmulator,
        _ log: FailoverLog
    ) async {
        var index = 0
        while index < accounts.count && !log.stopped {
            let account = accounts[index]
            do {
                let started = try await ServeFixture.send(
                    "POST",
                    base + "/v1/upgrades",
                    ["username": account.username, "password": "pw", "serviceIdentifier": "s"]
                )
                log.record(started)
                guard started.status == 201, let id = started.json["id"] else {
                    try await Task.sleep(for: .milliseconds(50))
                    continue
                }
                index += 1
                let sheet = try emulator.authorize(
                    userID: account.appleUser,
                    clientID: ServeFixture.clientID,
                    nonce: started.json["nonce"],
                    state: started.json["state"],
                    emailMode: .hidden
                )
                let done = try await ServeFixture.send(
                    "POST",
                    base + "/v1/upgrades/\(id)/apple-credential",
                    [
                        "identityToken": sheet.identityToken, "authorizationCode": sheet.authorizationCode,
                        "state": started.json["state"] ?? "", "user": sheet.user,
                    ]
                )
                log.record(done)
                if done.status == 200 && done.json["status"] == "completed" {
                    log.acknowledge(account.username, instance: instance)
                }
            } catch {
                log.record(ServeFixture.Answer(status: 0, json: ["error": "\(error)"], retryAfter: nil, seconds: 0))
                index += 1
            }
        }
    }
}

/// What the load saw: every answer, and which conversions were acknowledged in which phase.
final class FailoverLog: Sendable {
    enum Phase: Int, Sendable {
        case start, killed, promoted
    }

    private struct State {
        var calls: [ServeFixture.Answer] = []
        var acknowledged: Set<String> = []
        var changed: Set<String> = []
        var deleted: Set<String> = []
        var phase = Phase.start
        /// Acknowledged conversions per instance, per phase (by `Phase.rawValue`).
        var counts = [[0, 0, 0], [0, 0, 0]]
        var stopped = false
    }

    private let state = Mutex(State())

    var calls: [ServeFixture.Answer] { state.withLock { $0.calls } }
    var acknowledged: Set<String> { state.withLock { $0.acknowledged } }
    var stopped: Bool { state.withLock { $0.stopped } }
    var changed: Set<String> { state.withLock { $0.changed } }
    var deleted: Set<String> { state.withLock { $0.deleted } }

    func acknowledgeChange(_ username: String) { _ = state.withLock { $0.changed.insert(username) } }
    func acknowledgeDeletion(_ username: String) { _ = state.withLock { $0.deleted.insert(username) } }

    func record(_ answer: ServeFixture.Answer) { state.withLock { $0.calls.append(answer) } }
    func mark(_ phase: Phase) { state.withLock { $0.phase = phase } }
    func stop() { state.withLock { $0.stopped = true } }

    func acknowledge(_ username: String, instance: Int) {
        state.withLock {
            $0.acknowledged.insert(username)
            $0.counts[instance][$0.phase.rawValue] += 1
        }
    }

    /// Waits (up to 30 s) until `condition` holds of the log.
    func waitFor(_ condition: (FailoverLog) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if condition(self) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits (up to 30 s) until each instance has acknowledged `count` conversions in `phase`.
    func waitUntil(_ count: Int, since phase: Phase) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if state.withLock({ state in state.counts.allSatisfy { $0[phase.rawValue] >= count } }) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
