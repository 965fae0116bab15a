import COpenSSL

/// A failure reported by libcrypto, carrying the library's own error strings (never key material).
public struct OpenSSLError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let details: [String]

    public var description: String {
        details.isEmpty ? "\(operation) failed" : "\(operation) failed: \(details.joined(separator: "; "))"
    }

    /// Drains libcrypto's thread-local error queue into an error for `operation`.
    static func drain(_ operation: String) -> OpenSSLError {
        OpenSSLError(operation: operation, details: drainQueue())
    }

    /// Empties the thread-local queue; a failed verification leaves entries behind that must not leak
    /// into the next, unrelated call.
    @discardableResult
    static func drainQueue() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages
    }
}
