import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

#if canImport(Glibc)
import Glibc
#endif

/// `upgrade-cli transfer prepare|complete` hold a lease while they run: a second run of the same
/// job is refused, and a run killed outright keeps others out only until its lease lapses.
///
/// On both backends: on PostgreSQL the processes get a database of their own
/// (`database(forProcesses:)`). The lease's statements across two stores and with their heartbeat
/// are `JobLeaseTests`'.
@Suite("upgrade-cli transfer: one run of a job at a time")
struct TransferLeaseCLITests {
    /// Stands in for Apple's token endpoint on loopback, and answers only once opened: until then
    /// a batch waits on its team-token request (retrying on its own timeouts), holding its lease.
    /// Each connection is read on a thread of its own and answered with a team access token as soon
    /// as the gate is open; one left waiting gives up after a bound.
    final class TokenGate: Sendable {
        let socket: Int32
        let port: UInt16
        /// What the connection threads share with the gate: they hold this, not the gate, so the
        /// gate's deinit ends them.
        private final class Shared: Sendable {
            let state = Mutex((open: false, closed: false))
        }
        private let shared = Shared()

        init() throws {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(socket, pointer, length) == 0 && listen(socket, 16) == 0
                        && getsockname(socket, pointer, &length) == 0
                }
            }
            guard bound else {
                close(socket)
                throw POSIXError(.EADDRNOTAVAIL)
            }
            self.socket = socket
            port = UInt16(bigEndian: address.sin_port)
            let shared = self.shared
            Thread.detachNewThread {
                while true {
                    let connection = accept(socket, nil, nil)
                    guard connection >= 0 else { return }
                    Thread.detachNewThread { Self.answer(connection, shared) }
                }
            }
        }

        var baseURL: String { "http://127.0.0.1:\(port)" }

        /// Lets every waiting and later request through.
        func open() { shared.state.withLock { $0.open = true } }

        private static func answer(_ connection: Int32, _ shared: Shared) {
            defer { close(connection) }
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !complete(received) {
                let count = read(connection, &buffer, buffer.count)
                guard count > 0 else { return }
                received += buffer[0..<count]
            }
            for _ in 0..<1500 {
                let (open, closed) = shared.state.withLock { ($0.open, $0.closed) }
                if closed { return }
                if open { break }
                usleep(20_000)
            }
            let body = #"{"access_token":"team-token","token_type":"Bearer","expires_in":3600}"#
            let response =
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            _ = Array(response.utf8).withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Whether `received` holds a whole request: its head and as much body as it announced.
        private static func complete(_ received: [UInt8]) -> Bool {
            let text = String(decoding: received, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { return false }
            let length =
                text[..<end.lowerBound].lowercased().split(separator: "\r\n")
                .first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            return received.count >= text.utf8.distance(from: text.startIndex, to: end.upperBound) + length
        }

        deinit {
            shared.state.withLock { $0.closed = true }
            shutdown(socket, Int32(SHUT_RDWR))
            close(socket)
        }
    }

    /// A started `upgrade-cli` process whose output is read once it ends.
    final class Run {
        let process = Process()
        private let out = Pipe()
        private let err = Pipe()

        init(_ arguments: [String], environment: [String: String]) throws {
            process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
            process.arguments = arguments
            process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = out
            process.standardError = err
            try process.run()
        }

        func finish() -> (status: Int32, stdout: String, stderr: String) {
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (
                process.terminationStatus, String(decoding: stdout, as: UTF8.self),
                String(decoding: stderr, as: UTF8.self)
            )
        }
    }

    static let job = "transfer prepare TEAMB67890"
    static let prepare = ["transfer", "prepare", "--target-team", "TEAMB67890"]

    static func environment(
        _ setup: TransferCLITests.Setup,
        _ database: TestDatabase,
        apple: String
    ) throws -> [String: String] {
        setup.environment.merging(["UPGRADE_DB": try #require(database.url), "APPLE_BASE_URL": apple]) { $1 }
    }

    /// Waits (bounded) until some run holds the job's lease, and returns it.
    static func heldLease(_ database: TestDatabase) throws -> JobLeaseRecord {
        for _ in 0..<200 {
            if let lease = try database.store.read({ try $0.jobLease(job: Self.job) }) { return lease }
            usleep(50_000)
        }
        throw POSIXError(.ETIMEDOUT)
    }

    static func expectRefused(
        _ result: (status: Int32, stdout: String, stderr: String),
        by holder: JobLeaseRecord
    ) {
        #expect(result.status == 2, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "error: '\(Self.job)' is already running: \(holder.holder) since \(JobLease.iso8601(holder.acquiredAt))"
            ),
            "\(result.stderr)"
        )
        #expect(!result.stderr.contains(holder.token))
        #expect(result.stdout.isEmpty, "nothing announced, nothing ran: \(result.stdout)")
    }

    @Test(
        "a second run while the first holds the lease: exit 2 naming the holder; the first goes on",
        arguments: Backend.all
    )
    func secondRunRefused(backend: Backend) throws {
        let setup = try TransferCLITests.Setup()
        let database = try backend.database(forProcesses: true)
        let gate = try TokenGate()
        let environment = try Self.environment(setup, database, apple: gate.baseURL)
        let first = try Run(Self.prepare, environment: environment)
        let lease = try Self.heldLease(database)
        #expect(lease.holder.contains(" pid \(first.process.processIdentifier) run "), "\(lease.holder)")

        let second = try runCLI(Self.prepare, environment: environment)
        Self.expectRefused(second, by: lease)
        // A dry run writes nothing and takes no lease: it may look while the real run goes on.
        let dryRun = try Run(Self.prepare + ["--dry-run"], environment: environment)
        gate.open()
        let looked = dryRun.finish()
        #expect(looked.status == 0, "\(looked.stderr)")

        let result = first.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("prepare: 0 rows"), "\(result.stdout)")
        #expect(try database.store.read { try $0.jobLease(job: Self.job) } == nil, "released at the end")
    }

    @Test("a run killed with SIGKILL keeps the job only until its lease lapses", arguments: Backend.all)
    func killedRunLapses(backend: Backend) throws {
        let setup = try TransferCLITests.Setup()
        let database = try backend.database(forProcesses: true)
        let gate = try TokenGate()
        let environment = try Self.environment(setup, database, apple: gate.baseURL).merging([
            "UPGRADE_JOB_LEASE_SECONDS": "6"
        ]) { $1 }
        let killed = try Run(Self.prepare, environment: environment)
        let lease = try Self.heldLease(database)
        kill(killed.process.processIdentifier, SIGKILL)
        let ended = killed.finish()
        #expect(ended.status == SIGKILL && killed.process.terminationReason == .uncaughtSignal)
        let left = try #require(try database.store.read { try $0.jobLease(job: Self.job) }, "nothing released it")

        // Right after: refused, naming the dead run.
        Self.expectRefused(try runCLI(Self.prepare, environment: environment), by: lease)

        // Once its last heartbeat is more than the expiry ago, the next run takes the job over.
        while Int64(Date().timeIntervalSince1970) < left.expiresAt { usleep(200_000) }
        gate.open()
        let result = try runCLI(Self.prepare, environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("prepare: 0 rows"), "\(result.stdout)")
        #expect(try database.store.read { try $0.jobLease(job: Self.job) } == nil)
    }

    @Test("UPGRADE_JOB_LEASE_SECONDS out of range: exit 2, one line, no database opened")
    func badLeaseSeconds() throws {
        let setup = try TransferCLITests.Setup()
        for bad in ["1", "3601", "soon"] {
            let result = try runCLI(
                Self.prepare,
                environment: setup.environment.merging(["UPGRADE_JOB_LEASE_SECONDS": bad]) { $1 }
            )
            #expect(result.status == 2)
            #expect(result.stderr == "error: UPGRADE_JOB_LEASE_SECONDS must be a number of seconds from 2 to 3600\n")
            #expect(!FileManager.default.fileExists(atPath: setup.path("cli.db")))
        }
    }
}
