import Foundation
import Testing

@testable import UpgradeEngine

/// The storage backend a server under test runs on: SQLite always, PostgreSQL too when
/// `UPGRADE_TEST_POSTGRES` names a cluster (`Scripts/dev-postgres` starts one).
package enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    /// What a parameterised test takes.
    package static let all: [Backend] = TestPostgres.isAvailable ? [.sqlite, .postgres] : [.sqlite]

    package var testDescription: String { rawValue }
}

/// A fresh, empty database a server opens with `UPGRADE_DB = url`: a file in a directory of its own,
/// or a database of its own on the test cluster. Removed when released.
package final class ServerDatabase: Sendable {
    package let url: String
    private let directory: URL?
    private let database: String?

    package init(_ backend: Backend) throws {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "siwa-rest-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            self.directory = directory
            database = nil
            url = "sqlite:" + directory.appendingPathComponent("api.db").path
        case .postgres:
            let name = "rest_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
            try TestPostgres.connect().execute("CREATE DATABASE \(name)")
            let cluster = try #require(TestPostgres.url)
            var components = try #require(URLComponents(string: cluster))
            components.path = "/" + name
            directory = nil
            database = name
            url = try #require(components.string)
        }
    }

    deinit {
        if let directory { try? FileManager.default.removeItem(at: directory) }
        if let database { try? TestPostgres.connect().execute("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
    }
}
