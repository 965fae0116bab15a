import Foundation
import Glibc
import Testing

/// Runs `http-load-server` in a child process with a lowered RLIMIT_NOFILE, so exhausting its
/// descriptors cannot disturb the other tests in this process.
@Suite("Descriptor exhaustion")
struct DescriptorExhaustionTests {
    /// The load server is built next to the test binary.
    static func loadServerURL() -> URL? {
        let candidates = [
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/debug"),
        ]
        return candidates.map { $0.appendingPathComponent("http-load-server") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// User plus system CPU time of a process, in seconds.
    static func cpuSeconds(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name start at field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// SIGTERM, then SIGKILL if the process has not exited within 10 s; true if SIGTERM sufficed.
    static func stop(_ process: Process) -> Bool {
        guard process.isRunning else { return true }
        process.terminate()
        for _ in 0..<200 where process.isRunning {
            usleep(50_000)
        }
        guard process.isRunning else { return true }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return false
    }

    @Test("out of descriptors, the server neither spins nor stays down: the deadline frees them and /healthz answers")
    func exhaustion() throws {
        guard let binary = Self.loadServerURL() else {
            Issue.record("http-load-server is not built; run swift build --build-tests first")
            return
        }
        let process = Process()
        process.executableURL = binary
        process.arguments = [
            "--port", "0", "--loops", "1", "--workers", "1", "--max-open-files", "64", "--request-timeout-ms", "1500",
        ]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        defer { _ = Self.stop(process) }
        var announcement = Data()
        while !announcement.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            announcement.append(chunk)
        }
        let words = String(decoding: announcement, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard words.count == 2, words[0] == "listening", let port = Int(words[1]) else {
            Issue.record("unexpected start-up output: \(String(decoding: announcement, as: UTF8.self))")
            return
        }

        let started = Date()
        let cpuBefore = Self.cpuSeconds(of: process.processIdentifier)
        var slow: [TestClient] = []
        for index in 0..<100 {
            let client = try TestClient(port: port)
            try client.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow-\(index): ")
            slow.append(client)
        }
        let health = try TestClient(port: port, timeoutSeconds: 20)
        try health.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try health.readResponse()
        let elapsed = Date().timeIntervalSince(started)
        let cpu = Self.cpuSeconds(of: process.processIdentifier) - cpuBefore
        #expect(response.status == 200, "health answered once the deadline freed descriptors")
        #expect(cpu < elapsed / 2, "a spinning accept loop would burn a core: \(cpu) s of CPU in \(elapsed) s")

        slow.removeAll()
        #expect(Self.stop(process), "SIGTERM stops the server within 10 s")
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("accept failed (errno \(EMFILE))"), "the pause was reported: \(log)")
        #expect(log.contains("accepting connections again"))
        #expect(process.terminationStatus == 0, "SIGTERM stops the server gracefully")
    }
}
