import Foundation
import Synchronization
import UpgradeEngine

/// Structured logs: one JSON object per line. Callers pass only non-secret facts (route patterns,
/// statuses, problem slugs, request ids); bodies, headers and query strings are never logged.
public final class RequestLog: Sendable {
    private let write: @Sendable (String) -> Void
    private let lock = Mutex(())

    /// Logs to standard error by default.
    public init(
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) {
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

    /// RFC 3339 UTC with milliseconds, formatted by hand: one is written per request.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }
}
