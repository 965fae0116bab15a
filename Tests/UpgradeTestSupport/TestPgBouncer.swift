import Foundation
import Glibc
import Testing

@testable import UpgradeEngine

/// A throwaway PgBouncer in transaction pooling mode in front of the test cluster
/// (`Scripts/dev-pgbouncer`), stopped when released. The tests that need one run when Debian's
/// `pgbouncer` is installed, or fail when `UPGRADE_TEST_PGBOUNCER=required` (`Scripts/test` sets it:
/// CI installs the package); otherwise they are skipped, and say why.
package final class TestPgBouncer: Sendable {
    /// The cluster's login and database, through the pooler.
    package let configuration: PostgresConfiguration
    private let directory: String

    package static var isInstalled: Bool {
        ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }

    package static var isRequired: Bool { ProcessInfo.processInfo.environment["UPGRADE_TEST_PGBOUNCER"] == "required" }

    package static var isAvailable: Bool { TestPostgres.isAvailable && (isInstalled || isRequired) }

    package static let reason =
        TestPostgres.isAvailable
        ? "pgbouncer is not installed (apt-get install pgbouncer, or Scripts/setup)"
        : "UPGRADE_TEST_POSTGRES is not set: start a cluster with Scripts/dev-postgres and export its URL as UPGRADE_TEST_POSTGRES"

    /// Starts one. `poolSize` is its `default_pool_size` (server sessions per database and user).
    package init(poolSize: Int? = nil) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let output = try Self.run(
            root.appendingPathComponent("Scripts/dev-pgbouncer").path,
            poolSize.map { ["--pool-size", String($0)] } ?? [],
            stdin: try #require(TestPostgres.url)
        )
        var values: [String: String] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        directory = try #require(values["UPGRADE_DEV_PGBOUNCER_DIR"], "Scripts/dev-pgbouncer printed no directory")
        configuration = try PostgresConfiguration(url: try #require(values["UPGRADE_DB"]))
    }

    deinit {
        _ = try? Self.run(
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Scripts/dev-pgbouncer").path,
            ["--stop", directory],
            stdin: ""
        )
    }

    /// `postgres://` for `database` through the pooler (the cluster's database when nil).
    package func url(database: String? = nil) -> String {
        "postgres://\(configuration.user ?? ""):\(configuration.password ?? "")@\(configuration.endpoint)/"
            + (database ?? configuration.database)
    }

    /// Runs the script through `system`, which waits for it by itself (Foundation's `Process` may
    /// miss the exit of a script that leaves a daemon behind); stdin and stdout go through files
    /// readable by this user alone.
    private static func run(_ script: String, _ arguments: [String], stdin: String) throws -> String {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("dev-pgbouncer-\(UUID().uuidString)")
        let input = base.appendingPathExtension("in")
        let output = base.appendingPathExtension("out")
        let errors = base.appendingPathExtension("err")
        defer {
            for file in [input, output, errors] { try? FileManager.default.removeItem(at: file) }
        }
        guard
            FileManager.default.createFile(
                atPath: input.path,
                contents: Data((stdin + "\n").utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else { throw StorageError(.io, "cannot write \(input.path)") }
        let command = ([script] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let status = system(command + " <'\(input.path)' >'\(output.path)' 2>'\(errors.path)'")
        guard status == 0 else {
            let problem = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw StorageError(.configuration, "Scripts/dev-pgbouncer failed: \(problem)")
        }
        return (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }
}
