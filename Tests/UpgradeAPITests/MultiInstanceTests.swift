import Foundation
import Testing
import UpgradeAPI

@testable import UpgradeEngine

/// Two `upgrade-cli serve` processes on one PostgreSQL database (migrated once) and one Apple
/// emulator: what one instance decides, the other sees; races between them end one way.
@Suite(
    "Several serve instances on one PostgreSQL database",
    .enabled(if: ServePostgres.isAvailable, .init(rawValue: ServePostgres.reason))
)
struct MultiInstanceTests {
    /// A database of its own, migrated once, with two instances on it. `stop` kills both and drops it.
    struct Instances {
        let fixture: ServeFixture
        let bases: [String]
        let drop: @Sendable () -> Void

        func stop() {
            fixture.stop()
            drop()
        }
    }

    static func instances() async throws -> Instances {
        let database = try ServePostgres.createDatabase()
        do {
            let fixture = try await ServeFixture(database: database.url)
            do {
                let bases = [try await fixture.startServe(), try await fixture.startServe()]
                return Instances(fixture: fixture, bases: bases, drop: database.drop)
            } catch {
                fixture.stop()
                throw error
            }
        } catch {
            database.drop()
            throw error
        }
    }

    @Test("an upgrade started on one instance finishes on the other", .timeLimit(.minutes(2)))
    func handOver() async throws {
        let instances = try await Self.instances()
        defer { instances.stop() }
        let (fixture, a, b) = (instances.fixture, instances.bases[0], instances.bases[1])
        let account = try fixture.addAccount("alice")
        let appleUser = try fixture.emulator.createUser(email: "alice@example.com")

        let started = try await fixture.start(a, "alice")
        #expect(started.status == 201)
        let id = try #require(started.json["id"])
        let done = try await ServeFixture.send(
            "POST",
            b + "/v1/upgrades/\(id)/apple-credential",
            try fixture.credential(for: started, appleUser: appleUser)
        )
        #expect(done.status == 200 && done.json["status"] == "completed", "\(done.status) \(done.json)")
        #expect(try await ServeFixture.send("GET", a + "/v1/upgrades/\(id)").json["status"] == "completed")
        #expect(try fixture.store.read { try $0.account(id: account.id) }?.credentialKind == .appleOnly)
    }

    @Test(
        "20 racing credential submissions split over both instances: one conversion, one code exchange",
        .timeLimit(.minutes(2))
    )
    func racingSubmissions() async throws {
        let instances = try await Self.instances()
        defer { instances.stop() }
        let fixture = instances.fixture
        let account = try fixture.addAccount("alice")
        let appleUser = try fixture.emulator.createUser(email: "alice@example.com")
        let started = try await fixture.start(instances.bases[0], "alice")
        let id = try #require(started.json["id"])
        let credential = try fixture.credential(for: started, appleUser: appleUser)

        let urls = (0..<20).map { instances.bases[$0 % 2] + "/v1/upgrades/\(id)/apple-credential" }
        let answers = try await withThrowingTaskGroup(of: ServeFixture.Answer.self) { group in
            for url in urls { group.addTask { try await ServeFixture.send("POST", url, credential) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let completed = answers.filter { $0.status == 200 && $0.json["status"] == "completed" }
        let waiting = answers.filter { $0.status == 409 && $0.problem == "upgrade-in-progress" }
        #expect(completed.count >= 1)
        #expect(completed.count + waiting.count == 20, "\(answers.map { "\($0.status) \($0.problem ?? "")" })")
        #expect(fixture.apple.codeExchanges == 1, "exactly one authorization-code exchange at Apple")

        #expect(try fixture.store.read { try $0.account(id: account.id) }?.credentialKind == .appleOnly)
        #expect(try fixture.store.read { try $0.appleLink(accountID: account.id) }?.sub == credential["user"])
        let trail = try fixture.store.read { try $0.auditTrail(upgradeID: id, limit: 100) }
        #expect(trail.filter { $0.toStatus == "converting" }.count == 1, "one claim")
        #expect(trail.filter { $0.toStatus == "completed" }.count == 1, "one conversion")
    }

    @Test(
        "two accounts racing for one Apple user on the two instances: one wins, the other gets sub-conflict",
        .timeLimit(.minutes(2))
    )
    func racingForOneAppleUser() async throws {
        let instances = try await Self.instances()
        defer { instances.stop() }
        let fixture = instances.fixture
        let accounts = [try fixture.addAccount("carol"), try fixture.addAccount("dave")]
        let appleUser = try fixture.emulator.createUser(email: "shared@example.com")
        var submissions: [(url: String, body: [String: String])] = []
        for (index, account) in accounts.enumerated() {
            let base = instances.bases[index]
            let started = try await fixture.start(base, account.username)
            let id = try #require(started.json["id"])
            submissions.append(
                (
                    base + "/v1/upgrades/\(id)/apple-credential",
                    try fixture.credential(for: started, appleUser: appleUser)
                )
            )
        }

        let answers = try await withThrowingTaskGroup(of: (Int, ServeFixture.Answer).self) { group in
            for (index, submission) in submissions.enumerated() {
                group.addTask { (index, try await ServeFixture.send("POST", submission.url, submission.body)) }
            }
            return try await group.reduce(into: [Int: ServeFixture.Answer]()) { $0[$1.0] = $1.1 }
        }
        let winners = answers.filter { $0.value.status == 200 && $0.value.json["status"] == "completed" }.map(\.key)
        let losers = answers.filter { $0.value.status == 409 && $0.value.problem == "sub-conflict" }.map(\.key)
        #expect(winners.count == 1 && losers.count == 1, "\(answers.mapValues { "\($0.status) \($0.json)" })")
        guard let winner = winners.first, let loser = losers.first else { return }
        #expect(answers[loser]?.json["upgradeStatus"] == "failed")

        let sub = try #require(submissions.first?.body["user"])
        let link = try fixture.store.read { try $0.appleLink(sub: sub) }
        #expect(link?.accountID == accounts[winner].id)
        #expect(try fixture.store.read { try $0.account(id: accounts[winner].id) }?.credentialKind == .appleOnly)
        #expect(try fixture.store.read { try $0.account(id: accounts[loser].id) }?.credentialKind == .password)
        #expect(try fixture.store.read { try $0.appleLink(accountID: accounts[loser].id) } == nil)
    }

    /// After the third failure each attempt waits for the delay the lockout policy sets (1 s, then
    /// doubling up to 60 s): about two minutes in all. Instead of sleeping through each delay, the
    /// test moves the shared count's last failure back by the `Retry-After` it was given, which
    /// both instances then read from the database as if that time had passed.
    @Test(
        "10 wrong passwords split over both instances lock the username on both",
        .timeLimit(.minutes(2))
    )
    func lockoutShared() async throws {
        let instances = try await Self.instances()
        defer { instances.stop() }
        let fixture = instances.fixture
        try fixture.addAccount("erin", password: "right")
        let database = try PostgresConnection(
            PostgresConfiguration(url: try #require(fixture.environment["UPGRADE_DB"]))
        )

        var counted = 0
        var attempts = 0
        let deadline = ContinuousClock.now + .seconds(100)
        while counted < 10 && attempts < 60 && ContinuousClock.now < deadline {
            attempts += 1
            let answer = try await fixture.start(instances.bases[counted % 2], "erin", password: "wrong")
            switch (answer.status, answer.problem) {
            case (401, "invalid-credentials"):
                counted += 1
            case (429, "rate-limited"):
                // A delay between failures, recorded by whichever instance saw the last one.
                let wait = Int(answer.retryAfter ?? "") ?? 1
                #expect((1...60).contains(wait))
                let moved = try database.query(
                    "UPDATE login_throttle SET last_failure_at = last_failure_at - $1 RETURNING failures",
                    [.integer(Int64(wait))]
                )
                #expect(moved.count == 1, "one shared count for the username")
            default:
                Issue.record("unexpected answer \(answer.status) \(answer.json)")
                return
            }
        }
        #expect(counted == 10)
        for base in instances.bases {
            let refused = try await fixture.start(base, "erin", password: "right")
            #expect(refused.status == 429 && refused.problem == "locked", "\(refused.status) \(refused.json)")
            #expect(Int(refused.retryAfter ?? "").map { $0 > 60 } == true, "locked for the lock duration")
        }
    }
}
