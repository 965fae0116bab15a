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

    public func log(_ level: String, _ message: String, _ fields: [(String, JWSJSON)] = []) {
        var members: [JWSJSON.Member] = [
            .init("ts", .string(Self.timestamp())), .init("level", .string(level)), .init("msg", .string(message)),
        ]
        members += fields.map { JWSJSON.Member($0.0, $0.1) }
        let line = JWSJSON.object(members).serializedString
        lock.withLock { _ in write(line) }
    }

    /// One `write(2)` per line (the lock keeps lines whole), retried after a signal or a short write.
    /// A line that cannot be written is dropped: logging never stops a request.
    @Sendable public static func writeStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
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

    /// RFC 3339 UTC with milliseconds: one is written per request.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return RFC3339.utc(seconds: Int64(now.tv_sec), milliseconds: Int(now.tv_nsec / 1_000_000))
    }

}
