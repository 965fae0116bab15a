import Foundation
import Testing
import UpgradeAPI
import UpgradeTestSupport

@testable import UpgradeEngine

/// Debian's PgBouncer in `pool_mode = transaction` with SCRAM logins and its defaults otherwise, in
/// front of the test cluster, with two server sessions per database: more clients than sessions, so
/// each transaction runs on whichever session is free (docs/architecture.md §8.3).
@Suite(
    "Through PgBouncer in transaction pooling mode",
    .enabled(if: TestPgBouncer.isAvailable, .init(rawValue: TestPgBouncer.reason))
)
struct PoolerTests {
    @Test("a client's transactions move between server sessions; unnamed statements and settings follow")
    func transactionsMove() throws {
        let pooler = try TestPgBouncer(poolSize: 2)
        let sql = "SELECT pg_backend_pid(), $1::bigint + 1, current_setting('lock_timeout')"
        let client = try PostgresConnection(pooler.configuration, settings: [("lock_timeout", "7s")])
        let other = try PostgresConnection(pooler.configuration)

        /// One transaction on `connection`, while `other` holds the session `connection` used last
        /// (the pooler hands out its most recently used one), so the next runs on another.
        func twoTransactions(_ connection: PostgresConnection) throws -> (first: [SQLValue], second: [SQLValue]) {
            try connection.begin()
            let first = try connection.query(sql, [.integer(1)])
            try connection.commit()
            try other.begin()
            try other.query("SELECT pg_backend_pid()")
            defer { try? other.rollback() }
            try connection.begin()
            let second = try connection.query(sql, [.integer(2)])
            try connection.commit()
            return (try #require(first.first), try #require(second.first))
        }

        let (first, second) = try twoTransactions(client)
        #expect(first[0] != second[0], "both transactions ran on one server session: \(first[0]), \(second[0])")
        #expect(first[1...] == [.integer(2), .text("7s")] && second[1...] == [.integer(3), .text("7s")])

        // What `prepared_statements=on` would meet here: the name prepared in the first transaction
        // is missing from the second's session.
        var direct = pooler.configuration
        direct.preparedStatements = true
        let preparing = try PostgresConnection(direct)
        let error = try #require(throws: PostgresError.self) { try twoTransactions(preparing) }
        #expect(error.sqlstate == "26000", "\(error)")
    }

    @Test(
        "db migrate, two serve instances and 12 concurrent upgrades over REST through the pooler",
        .timeLimit(.minutes(2))
    )
    func upgradesOverREST() async throws {
        let database = try ServePostgres.createDatabase()
        defer { database.drop() }
        let pooler = try TestPgBouncer(poolSize: 2)
        let name = try #require(database.url.split(separator: "/").last.map(String.init))
        // Migrated with `upgrade-cli db migrate` through the pooler; the fixture's store goes through it too.
        let fixture = try await ServeFixture(database: pooler.url(database: name))
        defer { fixture.stop() }
        let bases = [try await fixture.startServe(), try await fixture.startServe()]

        let count = 12
        var credentials: [(id: String, base: String, body: [String: String])] = []
        var accounts: [String] = []
        for index in 0..<count {
            accounts.append(try fixture.addAccount("user\(index)").id)
            let started = try await fixture.start(bases[index % 2], "user\(index)")
            #expect(started.status == 201, "\(started.status) \(started.json)")
            let appleUser = try fixture.emulator.createUser(email: "user\(index)@example.com")
            credentials.append(
                (
                    try #require(started.json["id"]), bases[(index + 1) % 2],
                    try fixture.credential(for: started, appleUser: appleUser)
                )
            )
        }
        let answers = try await withThrowingTaskGroup(of: ServeFixture.Answer.self) { group in
            for (id, base, body) in credentials {
                let url = base + "/v1/upgrades/\(id)/apple-credential"
                group.addTask { try await ServeFixture.send("POST", url, body) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == count)
        for answer in answers {
            #expect(answer.status == 200 && answer.json["status"] == "completed", "\(answer.status) \(answer.json)")
        }
        let converted = try fixture.store.read { tx in
            try accounts.compactMap { try tx.account(id: $0) }.filter { $0.credentialKind == .appleOnly }
        }
        #expect(converted.count == count)
    }
}
