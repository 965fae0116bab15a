import Foundation
import UpgradeEngine

struct ReportCommand: CLICommand {
    static let path = ["report"]
    static let summary = "the migration report: accounts, upgrades and password changes, funnel, backlogs"
    static let usage = "upgrade-cli report [--since TIME] [--until TIME] [--json] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let since = try arguments.option("--since").map { try AuditCommand.time($0, "--since") }
        let until = try arguments.option("--until").map { try AuditCommand.time($0, "--until") }
        let json = arguments.flag("--json")
        try arguments.finish()
        if let since, let until, since >= until {
            throw CommandFailure("--since must be before --until", exitCode: ExitCode.usage)
        }
        let service = ReportService(store: try StoreOption.openMigrated(location))
        let report: MigrationReport
        do {
            report = try service.report(since: since, until: until, now: Clock.nowSeconds)
        } catch {
            switch error.kind {
            case .validation: throw CommandFailure(error.message, exitCode: ExitCode.usage)
            default: throw CommandFailure(error.message + (error.cause.map { " (\($0))" } ?? ""))
            }
        }
        Console.out(json ? report.jsonDocument : table(report))
        return ExitCode.success
    }

    /// The report as text: one section per part of the document, with the same names.
    static func table(_ report: MigrationReport) -> String {
        var lines = ["window: \(report.since ?? "beginning") .. \(report.until) (read \(report.generatedAt))", ""]
        let accounts = report.accounts
        lines.append("accounts")
        lines.append(columns(["password", "legacyPassword", "appleOnly", "total"]))
        lines.append(
            columns([accounts.password, accounts.legacyPassword, accounts.appleOnly, accounts.total].map(String.init))
        )
        if !report.accountsPerDay.isEmpty {
            lines.append("")
            lines.append("accounts per day")
            lines.append(columns(["day", "created", "converted", "deleted", "onPasswordsAtEnd"]))
            for day in report.accountsPerDay {
                lines.append(
                    columns(
                        [day.day] + [day.created, day.converted, day.deleted, day.onPasswordsAtEnd].map(String.init)
                    )
                )
            }
        }
        lines += flow("upgrades", report.upgrades)
        lines += flow("password changes", report.passwordChanges)
        lines.append("")
        lines.append("transfer")
        let statuses = report.transfer.byStatus.sorted { $0.key < $1.key }
        lines.append(columns(["untouched"] + statuses.map(\.key) + ["stranded", "windowEndsAt"]))
        lines.append(
            columns(
                [String(report.transfer.untouchedLinkedAccounts)] + statuses.map { String($0.value) }
                    + [String(report.transfer.strandedAccounts), report.transfer.windowEndsAt ?? "-"]
            )
        )
        lines.append("")
        lines.append("outboxes")
        let webhooks = report.outboxes.webhooks
        lines.append(columns(["webhooksPending", "webhooksFailed", "oldestPendingAt", "appleRevocationsPending"]))
        lines.append(
            columns([
                String(webhooks.pending), String(webhooks.failed), webhooks.oldestPendingAt ?? "-",
                String(report.outboxes.appleRevocations.pending),
            ])
        )
        return lines.joined(separator: "\n")
    }

    static let outcomeColumns = [
        "", "started", "accepted", "stepUp", "apple", "completed", "cancelled", "failed", "expired", "superseded",
    ]

    static func flow(_ title: String, _ flow: MigrationReport.Flow) -> [String] {
        var lines = ["", title, columns(outcomeColumns)]
        lines.append(outcomes("total", flow.total))
        for entry in MigrationReport.Flow.entries {
            if let outcomes = flow.byEntry[entry], outcomes != MigrationReport.Outcomes() {
                lines.append(self.outcomes(entry, outcomes))
            }
        }
        for day in flow.perDay { lines.append(outcomes(day.day, day.outcomes)) }
        let reasons = flow.total.cancelled.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        if !reasons.isEmpty { lines.append("cancelled by reason: " + reasons.joined(separator: " ")) }
        let problems = flow.total.failed.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        if !problems.isEmpty { lines.append("failed by problem: " + problems.joined(separator: " ")) }
        let steps = flow.funnel.steps.map { step in
            "\(step.name) \(step.count)" + (step.rateFromPrevious.map { " (\(percent($0)))" } ?? "")
        }
        lines.append("funnel: " + steps.joined(separator: " -> "))
        if let median = flow.funnel.medianSecondsToComplete { lines.append("median start to completion: \(median) s") }
        return lines
    }

    static func outcomes(_ label: String, _ outcomes: MigrationReport.Outcomes) -> String {
        columns(
            [label]
                + [
                    outcomes.started, outcomes.credentialAccepted, outcomes.stepUpRequired, outcomes.reachedApple,
                    outcomes.completed, outcomes.cancelled.values.reduce(0, +), outcomes.failed.values.reduce(0, +),
                    outcomes.expired, outcomes.superseded,
                ].map(String.init)
        )
    }

    static func percent(_ rate: Double) -> String { String(format: "%.1f%%", rate * 100) }

    /// Columns of at least 12 characters (the first of 16), so rows line up.
    static func columns(_ values: [String]) -> String {
        values.enumerated().map { index, value in
            let width = index == 0 ? 16 : 12
            return value.count >= width ? value + " " : value.padding(toLength: width, withPad: " ", startingAt: 0)
        }.joined().trimmingCharacters(in: .whitespaces)
    }
}
