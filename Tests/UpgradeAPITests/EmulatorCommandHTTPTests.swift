import Foundation
import Glibc
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Polls without holding a thread of the cooperative pool.
private func pause() async {
    try? await Task.sleep(for: .milliseconds(20))
}

/// `upgrade-cli emulator serve` as a real process: it prints its settings, serves Apple's
/// endpoints, and stops cleanly on SIGTERM.
@Suite("upgrade-cli emulator serve")
struct EmulatorCommandHTTPTests {
    /// What a pipe delivered, and whether it reached its end (the process closed it).
    final class Output: Sendable {
        private let state = Mutex((text: "", ended: false))

        var text: String { state.withLock { $0.text } }

        func read(_ handle: FileHandle) {
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            state.withLock {
                $0.text += String(decoding: data, as: UTF8.self)
                if data.isEmpty { $0.ended = true }
            }
        }

        /// Waits up to 15 s for the end of the pipe, so nothing written before exit is missed.
        func all() async -> String {
            let deadline = ContinuousClock.now + .seconds(15)
            while !state.withLock({ $0.ended }) && ContinuousClock.now < deadline { await pause() }
            return text
        }
    }

    /// The running command, its standard output so far, and a bounded wait for a line.
    final class Running {
        let process = Process()
        let output = Output()
        let errors = Output()

        /// `upgrade-cli COMMAND ARGUMENTS`, with `environment` added to this process's.
        init(
            _ arguments: [String],
            command: [String] = ["emulator", "serve"],
            environment: [String: String] = [:]
        ) throws {
            process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
            process.arguments = command + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            let output = self.output
            let errors = self.errors
            out.fileHandleForReading.readabilityHandler = { output.read($0) }
            err.fileHandleForReading.readabilityHandler = { errors.read($0) }
            try process.run()
        }

        /// The value of the first `NAME=value` line, waiting up to 30 s for it.
        func setting(_ name: String) async -> String? {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let lines = output.text.split(separator: "\n")
                if let line = lines.first(where: { $0.hasPrefix(name + "=") }) {
                    return String(line.dropFirst(name.count + 1))
                }
                guard process.isRunning else { return nil }
                await pause()
            }
            return nil
        }

        /// Sends `signal` and waits up to 15 s; the exit status, or nil if it is still running (then killed).
        func stop(_ signal: Int32 = SIGTERM) async -> Int32? {
            kill(process.processIdentifier, signal)
            return await exitStatus()
        }

        /// Waits up to 15 s for the process to end on its own; its status, or nil (then it is killed).
        func exitStatus() async -> Int32? {
            let deadline = ContinuousClock.now + .seconds(15)
            while process.isRunning && ContinuousClock.now < deadline { await pause() }
            guard !process.isRunning else {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            return process.terminationStatus
        }
    }

    @Test("bootstraps a team, writes its .p8, serves Apple's endpoints, and exits 0 on SIGTERM")
    func serve() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("emulator-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.p8").path
        let running = try Running([
            "--port", "0", "--team", "TEAMA12345", "--client-id", "com.example.app", "--key-id", "KEYA123456",
            "--private-key-out", keyFile, "--user", "jane@example.com",
        ])
        let baseURL = try #require(await running.setting("APPLE_BASE_URL"), "stdout: \(running.output.text)")
        #expect(await running.setting("APPLE_PRIVATE_KEY_FILE") == keyFile)
        #expect(await running.setting("APPLE_CLIENT_IDS") == "com.example.app")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        let client = try AppleClient(
            configuration: .init(
                baseURL: try .init(baseURL),
                credentials: try .init(
                    teamID: "TEAMA12345",
                    keyID: "KEYA123456",
                    privateKey: try P256PrivateKey(pem: try String(contentsOfFile: keyFile, encoding: .utf8))
                )
            )
        )
        let token = try await client.teamAccessToken(clientID: "com.example.app")
        #expect(token.expiresIn == 3600)
        _ = try await client.fetchKeySet()

        #expect(await running.stop() == 0)
        #expect(await running.errors.all().contains("stopped"))
        // The key file is never overwritten.
        let again = try Running([
            "--port", "0", "--team", "TEAMA12345", "--client-id", "x.y", "--private-key-out", keyFile,
        ])
        #expect(await again.exitStatus() == 2)
        #expect(await again.errors.all().contains("already exists"))
    }

    @Test(
        "usage errors exit 2 with the reason",
        arguments: [
            (["--host", "0.0.0.0", "--port", "0"], "not loopback"),
            (["--client-id", "com.example.app"], "need --team"),
            (["--team", "TEAMA12345"], "at least one --client-id"),
            (["--team", "bad", "--client-id", "a.b"], "team id"),
            (["--notify-url", "http://203.0.113.9/n"], "not a loopback URL"),
            (["--port", "70000"], "--port"),
        ]
    )
    func usageErrors(arguments: [String], reason: String) async throws {
        let running = try Running(arguments)
        #expect(await running.exitStatus() == 2)
        let errors = await running.errors.all()
        #expect(errors.contains(reason), "\(errors)")
    }
}
