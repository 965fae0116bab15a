import Foundation
import UpgradeEngine

#if canImport(Glibc)
import Glibc
#endif

/// Where an import's rows go: one JSON line per input row in the `--report` file (buffered, written
/// at each batch), and progress on standard error: a bar with rate and ETA redrawn in place on a
/// terminal, a plain line every 5 seconds otherwise. Without a report, each refused row's line and
/// reason go to standard error too (the first `shownRefusals`, then a count), so no refusal goes
/// unexplained. Called from the importing thread only.
final class ImportCommandOutput {
    private var report: FileHandle?
    private var pending = Data()
    private let isTerminal: Bool
    private let totalBytes: Int64
    private let started = Date()
    private var lastPlain = Date()
    private var drewBar = false
    private var rows = 0
    /// Refused rows printed on standard error (without `--report`), and those past the limit.
    static let shownRefusals = 20
    private var refusalsShown = 0
    private var refusalsUnshown = 0

    init(reportPath: String?, totalBytes: Int64) throws {
        if let reportPath {
            guard
                FileManager.default.createFile(
                    atPath: reportPath,
                    contents: nil,
                    attributes: [.posixPermissions: 0o600]
                ),
                let handle = FileHandle(forWritingAtPath: reportPath)
            else {
                throw CommandFailure.configuration("--report: cannot write \(reportPath)")
            }
            report = handle
        }
        isTerminal = isatty(STDERR_FILENO) == 1
        self.totalBytes = max(1, totalBytes)
    }

    func row(_ row: ImportRowReport) {
        rows += 1
        guard report != nil else {
            guard row.action == .error else { return }
            guard refusalsShown < Self.shownRefusals else {
                refusalsUnshown += 1
                return
            }
            refusalsShown += 1
            // Over a progress bar, the line replaces it; the next progress redraws it below.
            if drewBar { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
            Console.err("line \(row.line)\(row.username.map { " (\($0))" } ?? ""): \(row.reason ?? "refused")")
            return
        }
        pending.append(contentsOf: row.jsonLine.utf8)
        pending.append(0x0a)
        if pending.count >= 1 << 16 { flush() }
    }

    func progress(_ summary: ImportSummary, bytes: Int64) {
        flush()
        let elapsed = max(0.001, Date().timeIntervalSince(started))
        let rate = Double(rows) / elapsed
        let fraction = min(1, Double(bytes) / Double(totalBytes))
        let eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0
        let counts =
            "created \(summary.created), updated \(summary.updated), skipped \(summary.skipped + summary.alreadyCommitted), failed \(summary.failed)"
        if isTerminal {
            drewBar = true
            let filled = Int(fraction * 30)
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
            FileHandle.standardError.write(
                Data(
                    "\r[\(bar)] \(Int(fraction * 100))% \(rows) rows, \(Int(rate)) rows/s, ETA \(Self.duration(eta)), \(counts) "
                        .utf8
                )
            )
        } else if Date().timeIntervalSince(lastPlain) >= 5 {
            lastPlain = Date()
            Console.err(
                "progress: \(rows) rows (\(Int(fraction * 100))%), \(Int(rate)) rows/s, ETA \(Self.duration(eta)), \(counts)"
            )
        }
    }

    var elapsedDescription: String {
        let elapsed = Date().timeIntervalSince(started)
        return String(format: "%.1f s, %.0f rows/s", elapsed, Double(rows) / max(0.001, elapsed))
    }

    func finish() {
        flush()
        if drewBar { FileHandle.standardError.write(Data("\n".utf8)) }
        if refusalsUnshown > 0 {
            Console.err("... and \(refusalsUnshown) more refused row(s); --report FILE lists every row with its reason")
            refusalsUnshown = 0
        }
        drewBar = false
        try? report?.close()
        report = nil
    }

    private func flush() {
        guard let report, !pending.isEmpty else { return }
        report.write(pending)
        pending.removeAll(keepingCapacity: true)
    }

    private static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600
            ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}
