import Foundation
import Testing

@testable import UpgradeEngine

@Suite("PostgreSQL URL")
struct PostgresConfigurationTests {
    static let password = "S3cr3t-PW"

    @Test(
        "valid URLs",
        arguments: [
            (
                "postgres://u:S3cr3t-PW@db.example.com:5433/upgrade",
                PostgresConfiguration(
                    host: "db.example.com",
                    port: 5433,
                    user: "u",
                    password: "S3cr3t-PW",
                    database: "upgrade"
                )
            ),
            ("postgresql://localhost/upgrade", PostgresConfiguration(host: "localhost", database: "upgrade")),
            (
                "postgres://u@[::1]:6000/db?sslmode=verify-full&connect_timeout=3",
                PostgresConfiguration(
                    host: "::1",
                    port: 6000,
                    user: "u",
                    database: "db",
                    sslMode: .verifyFull,
                    connectTimeout: 3
                )
            ),
            (
                "postgres://us%40er:p%40ss%2Fw%3Ard@h/my%20db",
                PostgresConfiguration(host: "h", user: "us@er", password: "p@ss/w:rd", database: "my db")
            ),
            // Unencoded '@', '/' and '?' in a password: the last '@' ends it.
            (
                "postgres://u:pa@ss/wo?rd@h/db",
                PostgresConfiguration(host: "h", user: "u", password: "pa@ss/wo?rd", database: "db")
            ),
            (
                "postgres://u@%2Fvar%2Frun%2Fpostgresql/db?sslmode=disable",
                PostgresConfiguration(host: "/var/run/postgresql", user: "u", database: "db", sslMode: .disable)
            ),
            ("postgres://:S3cr3t-PW@h/db", PostgresConfiguration(host: "h", password: "S3cr3t-PW", database: "db")),
            // libpq's multi-host form; a host without a port gets the default.
            (
                "postgres://u:S3cr3t-PW@db1:5433,db2,[::1]:6000/db?target_session_attrs=read-write",
                PostgresConfiguration(
                    hosts: [.init("db1", port: 5433), .init("db2"), .init("::1", port: 6000)],
                    targetSessionAttributes: .readWrite,
                    user: "u",
                    password: "S3cr3t-PW",
                    database: "db"
                )
            ),
            (
                "postgres://h1,h2/db?target_session_attrs=primary",
                PostgresConfiguration(
                    hosts: [.init("h1"), .init("h2")],
                    targetSessionAttributes: .primary,
                    database: "db"
                )
            ),
            ("postgres://h/db?target_session_attrs=any", PostgresConfiguration(host: "h", database: "db")),
            (
                "postgres://h/db?prepared_statements=on",
                PostgresConfiguration(host: "h", database: "db", preparedStatements: true)
            ),
            ("postgres://h/db?prepared_statements=off", PostgresConfiguration(host: "h", database: "db")),
            // Two servers on one host's sockets: the port names the socket file, so they differ.
            (
                "postgres://u@%2Ftmp%2Fpg:5433,%2Ftmp%2Fpg:5434/db",
                PostgresConfiguration(
                    hosts: [.init("/tmp/pg", port: 5433), .init("/tmp/pg", port: 5434)],
                    user: "u",
                    database: "db"
                )
            ),
        ]
    )
    func valid(url: String, expected: PostgresConfiguration) throws {
        #expect(try PostgresConfiguration(url: url) == expected)
        #expect(try DatabaseLocation.parse(url) == .postgres(expected))
    }

    @Test(
        "invalid URLs are one specific line that never quotes the password",
        arguments: [
            ("postgres://u:S3cr3t-PW@h", "the database name is missing"),
            ("postgres://u:S3cr3t-PW@h/", "the database name is missing"),
            ("postgres://u:S3cr3t-PW@/db", "the host is missing"),
            ("postgres://u:S3cr3t-PW@h:99999/db", "the port must be a number from 1 to 65535"),
            ("postgres://u:S3cr3t-PW@h:x/db", "the port must be a number from 1 to 65535"),
            ("postgres://u:S3cr3t-PW/db", "the port must be a number from 1 to 65535"),
            ("postgres://u:S3cr3t-PW@h1,,h2/db", "the host is missing"),
            ("postgres://u:S3cr3t-PW@h1,/db", "the host is missing"),
            ("postgres://u:S3cr3t-PW@h1,h2:x/db", "the port must be a number from 1 to 65535"),
            ("postgres://u:S3cr3t-PW@h1:5432,h1/db", "a host is listed twice"),
            (
                "postgres://u:S3cr3t-PW@h1,h2/db?target_session_attrs=read-only",
                "target_session_attrs must be one of any, read-write, primary (the service writes)"
            ),
            ("postgres://u:S3cr3t-PW@[::1/db", "an IPv6 host misses its ']'"),
            ("postgres://u:S3cr3t-PW%zz@h/db", "the password has a '%' not followed by two hex digits"),
            ("postgres://u:S3cr3t-PW%00@h/db", "the password does not decode to UTF-8 text without NUL"),
            ("postgres://u:S3cr3t-PW@h/db?sslmode=on", "sslmode must be one of disable, allow, prefer, require"),
            ("postgres://u:S3cr3t-PW@h/db?connect_timeout=0", "connect_timeout must be a whole number"),
            ("postgres://u:S3cr3t-PW@h/db?connect_timeout=5s", "connect_timeout must be a whole number"),
            ("postgres://u:S3cr3t-PW@h/db?sslmode=require&sslmode=disable", "the parameter 'sslmode' is given twice"),
            (
                "postgres://u:S3cr3t-PW@h/db?application_name=x",
                "unknown parameter 'application_name'; only sslmode, connect_timeout, target_session_attrs and prepared_statements are accepted"
            ),
            ("postgres://u:S3cr3t-PW@h/db?prepared_statements=yes", "prepared_statements must be on or off"),
            ("postgres://u:S3cr3t-PW@h/db#x", "a fragment ('#...') has no meaning here"),
            ("postgres://u:S3cr3t-PW@h/db\n", "it holds a control character"),
            ("postgres://u:S3cr3t-PW\u{0}@h/db", "it holds a control character"),
            ("postgres://u:S3cr3t-PW@h:+5432/db", "the port must be a number from 1 to 65535"),
            ("postgres://u:S3cr3t-PW@h/db?connect_timeout=+5", "connect_timeout must be a whole number"),
            ("postgres://u:S3cr3t-PW@h%0Aforged/db", "the host holds a control character"),
            // A decoded line break in a parameter's name is not quoted.
            ("postgres://u:S3cr3t-PW@h/db?a%0Ab=1", "unknown parameter (a name that is not printable ASCII)"),
        ]
    )
    func invalid(url: String, reason: String) throws {
        let error = try #require(throws: StorageError.self) { try DatabaseLocation.parse(url) }
        #expect(error.code == .configuration)
        #expect(error.message.hasPrefix("invalid PostgreSQL URL: \(reason)"), "\(error.message)")
        #expect(!error.message.contains(Self.password) && !error.message.contains("\n"))
    }

    @Test(
        "the description reads back as the same configuration, the password as (redacted)",
        arguments: [
            "postgres://u:S3cr3t-PW@db.example.com:5433/upgrade?sslmode=require&connect_timeout=9",
            "postgres://u@%2Fvar%2Frun%2Fpostgresql:5433/db",
            "postgres://:S3cr3t-PW@[fe80::1%25eth0]:6000,h%3Ax,h2/my%20db%2Fx?target_session_attrs=primary",
            "postgres://us%40er@h/db?prepared_statements=on",
        ]
    )
    func descriptionReadsBack(url: String) throws {
        let configuration = try PostgresConfiguration(url: url)
        var expected = configuration
        if expected.password != nil { expected.password = "(redacted)" }
        #expect(try PostgresConfiguration(url: configuration.description) == expected, "\(configuration)")
        #expect(!configuration.description.contains(Self.password))
    }

    @Test("description, debug description and reflection show no password; the store is still refused")
    func noPasswordInDescriptions() throws {
        let location = try DatabaseLocation.parse(
            "postgresql://app:\(Self.password)@db.example.com/upgrade?sslmode=require"
        )
        guard case .postgres(let configuration) = location else {
            Issue.record("not parsed as postgres: \(location)")
            return
        }
        #expect(location.description == "postgres://app:(redacted)@db.example.com:5432/upgrade?sslmode=require")
        #expect(try PostgresConfiguration(url: "postgres://h/db").description == "postgres://h:5432/db")
        let several = try PostgresConfiguration(
            url: "postgres://app:\(Self.password)@db1,[::1]:5433/upgrade?target_session_attrs=read-write"
        )
        #expect(
            several.description
                == "postgres://app:(redacted)@db1:5432,[::1]:5433/upgrade?target_session_attrs=read-write"
        )
        #expect(several.endpoint == "db1:5432,[::1]:5433")
        var dumpedSeveral = ""
        dump(several, to: &dumpedSeveral)
        #expect(!dumpedSeveral.contains(Self.password) && dumpedSeveral.contains("db1"))
        var dumped = ""
        dump(location, to: &dumped)
        for text in [
            location.description, configuration.description, String(reflecting: location),
            String(reflecting: configuration), "\(configuration)", dumped,
        ] {
            #expect(!text.contains(Self.password), "\(text)")
        }
    }

    @Test("libpq gets keyword/value pairs: the password as a value, and no options (a pooler refuses them)")
    func connectionParameters() throws {
        let configuration = try PostgresConfiguration(url: "postgres://u:p%20w@h:6000/d?sslmode=require")
        let parameters = configuration.connectionParameters()
        let values = Dictionary(parameters, uniquingKeysWith: { first, _ in first })
        #expect(parameters.count == values.count)
        #expect(values["host"] == "h" && values["port"] == "6000" && values["dbname"] == "d")
        #expect(values["user"] == "u" && values["password"] == "p w" && values["sslmode"] == "require")
        #expect(values["connect_timeout"] == "5")
        // Sent data unacknowledged that long ends the connection, as a connect would end.
        #expect(values["tcp_user_timeout"] == "5000")
        #expect(values["options"] == nil)
        #expect(values["target_session_attrs"] == "any")
        // One host at a time: the connection walks the list itself, to name each host it passed over.
        let several = try PostgresConfiguration(url: "postgres://h1,h2:6001/d?target_session_attrs=read-write")
        let second = Dictionary(
            several.connectionParameters(to: several.hosts[1]),
            uniquingKeysWith: { first, _ in first }
        )
        #expect(second["host"] == "h2" && second["port"] == "6001" && second["target_session_attrs"] == "read-write")
        let anonymous = try PostgresConfiguration(url: "postgres://h/d").connectionParameters()
        #expect(!anonymous.contains { $0.0 == "user" || $0.0 == "password" || $0.0 == "sslmode" })
    }
}
