import Foundation
import Synchronization
import UpgradeEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a transfer batch's rows go: one JSON Lines record per row in the `--report` file, and
/// progress on standard output — a bar redrawn in place on a terminal, plain lines otherwise (one
/// per row that changed something, failed or would run, and a count every 1000 rows).
///
/// The batch calls ``row(_:)`` one row at a time; the lock is there so that the type is honestly
/// `Sendable`, not because calls overlap.
final class TransferCommandOutput: Sendable {
    private struct State {
        var report: FileHandle?
        var rows = 0
        var failed = 0
        var drewBar = false
    }

    private let state: Mutex<State>
    private let isTerminal: Bool
    private let expectedRows: Int

    init(reportPath: String?, expectedRows: Int) throws {
        var report: FileHandle?
        if let reportPath {
            // Account ids only, but still nobody else's business: owner-only, replaced if present.
            guard
                FileManager.default.createFile(
                    atPath: reportPath,
                    contents: nil,
                    attributes: [.posixPermissions: 0o600]
                ),
                let handle = FileHandle(forWritingAtPath: reportPath)
            else {
                throw UsageError("--report: cannot write \(reportPath)")
            }
            report = handle
        }
        state = Mutex(State(report: report))
        isTerminal = isatty(STDOUT_FILENO) == 1
        self.expectedRows = max(1, expectedRows)
    }

    func row(_ row: TransferRowReport) {
        state.withLock { state in
            state.report?.write(Data((row.jsonLine + "\n").utf8))
            state.rows += 1
            if row.outcome.isFailure { state.failed += 1 }
            if isTerminal {
                state.drewBar = true
                let done = min(state.rows, expectedRows)
                let filled = done * 30 / expectedRows
                let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
                FileHandle.standardOutput.write(
                    Data("\r[\(bar)] \(state.rows)/\(expectedRows) rows, \(state.failed) failed ".utf8)
                )
                return
            }
            if row.outcome != .alreadyDone && row.outcome != .skipped {
                var line =
                    "account \(row.accountID): \(row.from.rawValue) -> \(row.to.rawValue) \(row.outcome.rawValue)"
                if let reason = row.reason { line += " (\(reason))" }
                Console.out(line)
            }
            if state.rows % 1000 == 0 { Console.out("progress: \(state.rows) rows, \(state.failed) failed") }
        }
    }

    /// Ends the bar's line and closes the report.
    func finish() {
        state.withLock { state in
            if state.drewBar { FileHandle.standardOutput.write(Data("\n".utf8)) }
            try? state.report?.close()
            state.report = nil
        }
    }
}
