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
/// per row that changed something, failed or would run, and a count every 1000 rows). Plain lines
/// are written together, at a failed row, at each count, once a second and at the end, rather than
/// with a system call for each of thousands of rows a second.
///
/// The batch calls ``row(_:)`` one row at a time; the lock is there so that the type is honestly
/// `Sendable`, not because calls overlap.
final class TransferCommandOutput: Sendable {
    private struct State {
        var report: FileHandle?
        var rows = 0
        var failed = 0
        var drewBar = false
        /// Plain lines not yet written, and when lines were last written.
        var pending: [UInt8] = []
        var flushedAt = ContinuousClock.now
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
                state.pending += Array((line + "\n").utf8)
            }
            let count = state.rows % 1000 == 0
            if count { state.pending += Array("progress: \(state.rows) rows, \(state.failed) failed\n".utf8) }
            if count || row.outcome.isFailure || state.pending.count >= 1 << 16
                || ContinuousClock.now - state.flushedAt >= .seconds(1)
            {
                Self.flush(&state)
            }
        }
    }

    private static func flush(_ state: inout State) {
        state.flushedAt = ContinuousClock.now
        guard !state.pending.isEmpty else { return }
        FileHandle.standardOutput.write(Data(state.pending))
        state.pending.removeAll(keepingCapacity: true)
    }

    /// Ends the bar's line and closes the report.
    func finish() {
        state.withLock { state in
            Self.flush(&state)
            if state.drewBar { FileHandle.standardOutput.write(Data("\n".utf8)) }
            try? state.report?.close()
            state.report = nil
        }
    }
}
