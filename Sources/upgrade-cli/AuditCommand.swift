import Foundation
import UpgradeAPI
import UpgradeEngine

struct AuditCommand: CLICommand {
    static let path = ["audit"]
    static let summary = "search the audit trail, newest first (a table, or JSON lines with --json)"
    static let usage =
        "upgrade-cli audit [--account USER] [--type TYPE] [--since TIME] [--until TIME] [--limit N] [--json] [--db URL]"

    /// More rows than this is a dump, not a search: `db` tools do that better.
    static let maxLimit = 100_000

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let account = try arguments.option("--account")
        let type = try arguments.option("--type")
        let since = try arguments.option("--since").map { try time($0, "--since") }
        let until = try arguments.option("--until").map { try time($0, "--until") }
        let limitText = try arguments.option("--limit")
        let json = arguments.flag("--json")
        try arguments.finish()
        var limit = AuditSearch.defaultLimit
        if let limitText {
            guard let value = Int(limitText), (1...maxLimit).contains(value) else {
                throw CommandFailure("--limit must be a whole number from 1 to \(maxLimit)", exitCode: ExitCode.usage)
            }
            limit = value
        }
        // Checked before the database is opened, like every argument.
        if let account {
            do {
                _ = try Username(account)
            } catch {
                throw CommandFailure("--account: \(error.message)", exitCode: ExitCode.usage)
            }
        }
        if let type, type.isEmpty { throw CommandFailure("--type must not be empty", exitCode: ExitCode.usage) }
        if let since, let until, since >= until {
            throw CommandFailure("--since must be before --until", exitCode: ExitCode.usage)
        }

        let queries = AdminQueryService(store: try StoreOption.openMigrated(location))
        // Pages of at most the API's page size, each below the last id seen, until `limit` rows.
        var remaining = limit
        var beforeID: Int64?
        while remaining > 0 {
            let search = AuditSearch(
                event: type,
                since: since,
                until: until,
                limit: min(remaining, AuditSearch.limits.upperBound),
                beforeID: beforeID
            )
            let page: AdminQueryService.AuditPage
            do {
                page = try queries.searchAudit(username: account, search)
            } catch {
                switch error.kind {
                case .accountNotFound: throw CommandFailure("no account named '\(account ?? "")'")
                case .validation: throw CommandFailure(error.message, exitCode: ExitCode.usage)
                default: throw CommandFailure(error.message + (error.cause.map { " (\($0))" } ?? ""))
                }
            }
            // The header once the search is known to be good, so a failed one prints only its error.
            if !json, beforeID == nil {
                Console.out(row("TIME", "EVENT", "ACCOUNT", "UPGRADE", "FROM -> TO", "DETAIL"))
            }
            for event in page.events { Console.out(json ? AdminJSON.event(event).serializedString : line(event)) }
            remaining -= page.events.count
            guard let next = page.nextBeforeID else { break }
            beforeID = next
        }
        return ExitCode.success
    }

    static func time(_ text: String, _ name: String) throws -> Int64 {
        guard let seconds = AuditSearch.time(text) else {
            throw CommandFailure(
                "\(name) must be an RFC 3339 date-time (2026-11-24T10:00:00Z) or Unix seconds, got '\(text)'",
                exitCode: ExitCode.usage
            )
        }
        return seconds
    }

    static func line(_ event: AuditEvent) -> String {
        let time = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(event.at)))
        let transition = event.fromStatus.map { "\($0) -> \(event.toStatus ?? "-")" } ?? event.toStatus ?? "-"
        let detail = event.detail.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return row(time, event.event, event.accountID ?? "-", event.upgradeID ?? "-", transition, detail)
    }

    /// Fixed-width columns, so pages printed one after another line up.
    static func row(_ columns: String...) -> String {
        let widths = [20, 28, 36, 26, 34]
        return zip(columns, widths + [0]).map { column, width in
            width == 0 || column.count >= width ? column : column.padding(toLength: width, withPad: " ", startingAt: 0)
        }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
}
