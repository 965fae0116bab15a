/// A parsed request line and header section: what the parser has checked and the server routes on.
public struct HTTPRequestHead: Hashable, Sendable {
    /// The method token exactly as sent (methods are case-sensitive).
    public var method: String
    /// The origin-form request target (`/path?query`), validated but not percent-decoded.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders

    public init(method: String, target: String, version: HTTPVersion, headers: HTTPHeaders) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The target before the first `?`.
    public var path: Substring {
        guard let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target[...] }
        return target[..<question]
    }

    /// The raw query after the first `?`, or nil when the target has none.
    public var query: Substring? {
        guard let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return target[target.index(after: question)...]
    }

    /// Whether the client allows the connection to stay open after the response: HTTP/1.1 unless it
    /// says `Connection: close`, HTTP/1.0 only when it asks for `Connection: keep-alive`.
    public var keepAlive: Bool {
        if version == .http1_1 {
            return !headers.containsToken("close", inField: "Connection")
        }
        return headers.containsToken("keep-alive", inField: "Connection")
            && !headers.containsToken("close", inField: "Connection")
    }
}
