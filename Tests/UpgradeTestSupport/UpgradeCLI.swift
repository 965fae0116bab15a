import Foundation
import Testing

/// The built `upgrade-cli`, which the tests run as an operator would.
package enum UpgradeCLI {
    /// Its path: beside the test bundle, or in `.build/debug`.
    package static func executable() throws -> String {
        var candidates: [URL] = []
        if let bundleDirectory = Bundle.main.executableURL?.deletingLastPathComponent() {
            candidates.append(bundleDirectory.appendingPathComponent("upgrade-cli"))
            candidates.append(bundleDirectory.deletingLastPathComponent().appendingPathComponent("upgrade-cli"))
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/upgrade-cli"))
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        return try #require(found, "upgrade-cli was not built; run swift build --build-tests first").path
    }
}

/// Runs the built `upgrade-cli` with `stdin` as standard input and an environment of its own.
package func runCLI(
    _ arguments: [String],
    stdin: String = "",
    environment: [String: String] = [:],
    directory: URL? = nil
) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
    if let directory { process.currentDirectoryURL = directory }
    process.arguments = arguments
    process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
    let input = Pipe()
    let out = Pipe()
    let err = Pipe()
    process.standardInput = input
    process.standardOutput = out
    process.standardError = err
    try process.run()
    input.fileHandleForWriting.write(Data(stdin.utf8))
    try input.fileHandleForWriting.close()
    // Read before waiting, so a chatty child cannot block on a full pipe.
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}
