import Foundation
import Testing

@testable import UpgradeEngine

/// The PostgreSQL cluster the tests use: `UPGRADE_TEST_POSTGRES`, a postgres:// URL. `Scripts/test`
/// starts a throwaway cluster with `Scripts/dev-postgres` and sets it; without it the tests that
/// need a server are skipped, and say why.
package enum TestPostgres {
    package static let url: String? = ProcessInfo.processInfo.environment["UPGRADE_TEST_POSTGRES"].flatMap {
        $0.isEmpty ? nil : $0
    }

    package static var isAvailable: Bool { url != nil }

    package static func configuration() throws -> PostgresConfiguration {
        try PostgresConfiguration(url: try #require(url))
    }

    /// Bounded waits, so a test that goes wrong fails instead of hanging.
    package static let settings: [(name: String, value: String)] = [
        ("lock_timeout", "20s"), ("statement_timeout", "60s"),
    ]

    package static func connect() throws -> PostgresConnection {
        try PostgresConnection(configuration(), settings: settings)
    }

    /// The test cluster's URL, with another database or password.
    package static func url(database: String? = nil, password: String? = nil) throws -> String {
        let configuration = try configuration()
        let user = configuration.user ?? ""
        let secret = password ?? configuration.password ?? ""
        return "postgres://\(user):\(secret)@\(configuration.endpoint)/\(database ?? configuration.database)"
    }
}
