import Foundation
import UpgradeEngine

struct WebhooksStatusCommand: CLICommand {
    static let path = ["webhooks", "status"]
    static let summary =
        "show the webhook outbox: events pending, delivered and failed, those being retried and the failed ones listed"
    static let usage = "upgrade-cli webhooks status [--limit N] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let limitText = try arguments.option("--limit")
        try arguments.finish()
        var limit = 20
        if let limitText {
            guard let value = Int(limitText), (1...10_000).contains(value) else {
                throw CommandFailure("--limit must be a whole number from 1 to 10000", exitCode: ExitCode.usage)
            }
            limit = value
        }
        let store = try StoreOption.openMigrated(location)
        let (counts, failed, retrying) = try WebhooksStatusCommand.storage {
            try store.read { tx in
                (
                    try tx.webhookOutboxCounts(), try tx.failedWebhookEvents(limit: limit),
                    try tx.retryingWebhookEvents(limit: limit)
                )
            }
        }
        let oldest = counts.oldestPendingAt.map { " (oldest \(time($0)))" } ?? ""
        Console.out("pending    \(counts.pending)\(oldest)")
        Console.out("delivered  \(counts.delivered)")
        Console.out("failed     \(counts.failed)")
        if !retrying.isEmpty {
            Console.out(
                "\nRETRYING SINCE        WEBHOOK-ID                  TYPE                   ACCOUNT  ATTEMPTS  NEXT ATTEMPT          LAST ERROR"
            )
            for event in retrying {
                let columns = [
                    time(event.firstAttemptAt ?? 0), event.id, event.type, event.accountID ?? "-",
                    String(event.attempts), time(event.nextAttemptAt), event.lastError ?? "-",
                ]
                Console.out(columns.joined(separator: "  "))
            }
        }
        if !failed.isEmpty {
            Console.out(
                "\nFAILED AT             WEBHOOK-ID                  TYPE                   ACCOUNT  ATTEMPTS  LAST ERROR"
            )
            for event in failed {
                let columns = [
                    time(event.failedAt ?? 0), event.id, event.type, event.accountID ?? "-", String(event.attempts),
                    event.lastError ?? "-",
                ]
                Console.out(columns.joined(separator: "  "))
            }
        }
        return ExitCode.success
    }

    static func time(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// Runs a storage call, turning its error into the command's one-line failure.
    static func storage<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as StorageError {
            throw CommandFailure("the database refused: \(error)")
        }
    }
}

struct WebhooksReplayCommand: CLICommand {
    static let path = ["webhooks", "replay"]
    static let summary = "send the webhook events created since TIME again (same webhook-id), delivered or not"
    static let usage = "upgrade-cli webhooks replay --since TIME [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        guard let sinceText = try arguments.option("--since") else {
            throw UsageError("--since TIME is required (RFC 3339, e.g. 2026-11-24T10:00:00Z, or Unix seconds)")
        }
        try arguments.finish()
        let since = try AuditCommand.time(sinceText, "--since")
        let store = try StoreOption.openMigrated(location)
        let now = Int64(Date().timeIntervalSince1970)
        let count = try WebhooksStatusCommand.storage {
            try store.write { tx in try tx.replayWebhookEvents(since: since, now: now) }
        }
        Console.out(
            "\(count) webhook event(s) created since \(WebhooksStatusCommand.time(since)) are pending again; serve sends them in order"
        )
        return ExitCode.success
    }
}
