import Foundation
import UpgradeEngine

struct TransferStatusCommand: CLICommand {
    static let path = ["transfer", "status"]
    static let summary = "accounts per transfer state and the 60-day migration window"
    static let usage = "upgrade-cli transfer status [--json] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let json = arguments.flag("--json")
        try arguments.finish()
        let store = try StoreOption.openMigrated(location)
        let now = Clock.nowSeconds
        let report: TransferStatusReport
        do {
            report = try TransferService.status(store: store, now: now)
        } catch {
            throw CommandFailure(error.message)
        }
        if json {
            var members = [JSONValue.Member("notTouched", .integer(Int64(report.untouchedLinkedAccounts)))]
            for status in TransferStatus.allCases {
                members.append(JSONValue.Member(status.rawValue, .integer(Int64(report.accounts(in: status)))))
            }
            members.append(JSONValue.Member("stranded", .integer(Int64(report.strandedAccounts))))
            members.append(JSONValue.Member("windowEndsAt", report.windowEndsAt.map(JSONValue.integer) ?? .null))
            members.append(
                JSONValue.Member("windowSecondsLeft", report.windowSecondsLeft.map(JSONValue.integer) ?? .null)
            )
            members.append(
                JSONValue.Member(
                    "otherWindows",
                    .array(
                        report.otherWindows.sorted { $0.key < $1.key }.map {
                            .object([.init("endsAt", .integer($0.key)), .init("records", .integer(Int64($0.value)))])
                        }
                    )
                )
            )
            Console.out(JSONValue.object(members).serializedString)
            return ExitCode.success
        }
        let rows =
            TransferStatus.allCases.map { ($0.rawValue, report.accounts(in: $0)) }
            + [("not touched", report.untouchedLinkedAccounts), ("stranded", report.strandedAccounts)]
        for (name, count) in rows {
            Console.out("\(name.padding(toLength: 18, withPad: " ", startingAt: 0))\(count)")
        }
        if let end = report.windowEndsAt, let left = report.windowSecondsLeft {
            Console.out(
                left > 0
                    ? "window            ends \(TransferBatchCommand.iso8601(end)) (\(left / 86_400) days \(left % 86_400 / 3600) hours left)"
                    : "window            closed \(TransferBatchCommand.iso8601(end))"
            )
        } else {
            Console.out("window            not recorded yet ('transfer complete --accepted-at' records it)")
        }
        for (end, records) in report.otherWindows.sorted(by: { $0.key < $1.key }) {
            Console.out(
                "other window      ends \(TransferBatchCommand.iso8601(end)) on \(records) record\(records == 1 ? "" : "s"), from a run given another --accepted-at"
            )
        }
        return ExitCode.success
    }
}
