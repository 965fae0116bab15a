import Foundation
import Synchronization
import UpgradeEngine

/// Structured logs: one JSON object per line. Callers pass only non-secret facts (route patterns,
/// statuses, problem slugs, request ids); bodies, headers and query strings are never logged.
public final class RequestLog: Sendable {
    private let write: @Sendable (String) -> Void
    private let lock = Mutex(())

    /// Logs to standard error by default.
    public init(write: @escaping @Sendable (String) -> Void = RequestLog.writeStandardError) {
        self.write = write
    }

    /// Writes `{"ts":…,"level":…,"msg":…,` then each field in order. The line is assembled as
    /// bytes in one buffer (one is written per request, so no intermediate JSON tree is built).
    public func log(_ level: String, _ message: String, _ fields: [(String, JSONValue)] = []) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        bytes.append(contentsOf: #"{"ts":""#.utf8)
        Self.appendTimestamp(to: &bytes)
        bytes.append(contentsOf: #"","level":"#.utf8)
        JSONValue.serialize(string: level, into: &bytes)
        bytes.append(contentsOf: #","msg":"#.utf8)
        JSONValue.serialize(string: message, into: &bytes)
        for (name, value) in fields {
            bytes.append(UInt8(ascii: ","))
            JSONValue.serialize(string: name, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            value.serialize(into: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
        let line = String(decoding: bytes, as: UTF8.self)
        lock.withLock { _ in write(line) }
    }

    /// One `write(2)` per line (the lock keeps lines whole).
    @Sendable public static func writeStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        writeAll(bytes)
    }

    /// Writes `bytes` to standard error, retried after a signal or a short write. What cannot be
    /// written is dropped: logging never stops a request.
    @Sendable public static func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    /// The time now, RFC 3339 UTC with milliseconds: one is written per request.
    static func appendTimestamp(to bytes: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        RFC3339.append(seconds: Int64(now.tv_sec), milliseconds: Int(now.tv_nsec / 1_000_000), to: &bytes)
    }

}

/// Log lines gathered in memory and written to standard error in batches, as a web server's
/// buffered access log is (nginx's `access_log ... buffer= flush=`), so a request costs no system
/// call of its own. The batch is written once `capacity` bytes wait, every `interval` by a
/// background thread, and on `flush()`, which `serve` calls before it exits. Lines still buffered
/// when the process is killed outright (at most `interval` of them) are lost.
public final class LogBuffer: Sendable {
    private let pending = Mutex<[UInt8]>([])
    /// Held while a batch is written, so batches leave in the order they were taken.
    private let output = Mutex(())
    private let capacity: Int
    private let sink: @Sendable ([UInt8]) -> Void

    public init(
        capacity: Int = 32 * 1024,
        interval: Duration = .milliseconds(100),
        sink: @escaping @Sendable ([UInt8]) -> Void = RequestLog.writeAll
    ) {
        self.capacity = capacity
        self.sink = sink
        let microseconds = UInt32(
            clamping: interval.components.seconds * 1_000_000
                + interval.components.attoseconds / 1_000_000_000_000
        )
        Thread.detachNewThread { [weak self] in
            while true {
                usleep(microseconds)
                guard let self else { return }
                self.flush()
            }
        }
    }

    /// Adds one line (a newline is appended); writes the batch if it reached `capacity`.
    @Sendable public func write(_ line: String) {
        let full = pending.withLock { pending in
            pending.append(contentsOf: line.utf8)
            pending.append(UInt8(ascii: "\n"))
            return pending.count >= capacity
        }
        if full { flush() }
    }

    /// Writes whatever is buffered.
    public func flush() {
        output.withLock { _ in
            let batch = pending.withLock { pending in
                let batch = pending
                pending.removeAll(keepingCapacity: true)
                return batch
            }
            if !batch.isEmpty { sink(batch) }
        }
    }
}
