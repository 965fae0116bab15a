import Foundation

/// A Python fixture of Tests/Fixtures run as a child process that prints the port it listens on,
/// alone on its first line (`WebhookReceiver`, `LegacySystem`). `stop()` kills it.
final class FixtureProcess: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func script(_ relativePath: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/" + relativePath).path
    }

    let port: Int
    private let process = Process()

    /// Starts `python3 script arguments...`; `what` and `needs` name it and what it needs in the
    /// error when it prints no port.
    init(script: String, arguments: [String], what: String, needs: String) throws {
        let output = Pipe()
        let errors = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script] + arguments
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var line: [UInt8] = []
        while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != 10 { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            let why = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw Failure("\(what) did not start (needs \(needs): run Scripts/setup): \(why)")
        }
        self.port = port
    }

    deinit { stop() }

    func stop() {
        // SIGKILL: a child started from a pool thread inherits its blocked signals, SIGTERM among them.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
