/// An RFC 9457 problem document (`application/problem+json`) with a stable `type` URI that ends in a
/// slug clients can match on. Throw it from a handler, or render it with `response`.
public struct HTTPProblem: Error, Hashable, Sendable, CustomStringConvertible {
    /// The one base every problem type URI starts with.
    public static let typeBase = "https://siwa-upgrade.dev/problems/"

    public var status: Int
    public var slug: String
    public var title: String
    public var detail: String
    /// Extra response fields, such as `Retry-After`.
    public var headers: HTTPHeaders

    public init(status: Int, slug: String, title: String, detail: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.headers = headers
    }

    public init(_ error: HTTPParseError) {
        self.init(status: error.status, slug: error.slug, title: error.code.title, detail: error.detail)
    }

    public var type: String { Self.typeBase + slug }

    public var description: String { "\(status) \(slug): \(detail)" }

    /// The problem as a response; members in a fixed order so bodies are byte-for-byte stable.
    public var response: HTTPResponse {
        var json = "{\"type\":"
        Self.appendJSONString(type, to: &json)
        json += ",\"title\":"
        Self.appendJSONString(title, to: &json)
        json += ",\"status\":\(status),\"detail\":"
        Self.appendJSONString(detail, to: &json)
        json += "}"
        var headers = self.headers
        headers.replaceOrAppend(name: "Content-Type", value: "application/problem+json")
        return HTTPResponse(status: status, headers: headers, body: Array(json.utf8))
    }

    static func appendJSONString(_ string: String, to json: inout String) {
        json += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": json += "\\\""
            case "\\": json += "\\\\"
            case "\n": json += "\\n"
            case "\r": json += "\\r"
            case "\t": json += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                json += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: json.unicodeScalars.append(scalar)
            }
        }
        json += "\""
    }
}

extension HTTPProblem {
    /// 408: the request was not fully received within `Configuration.requestTimeout`.
    static func requestTimeout(_ seconds: Double) -> HTTPProblem {
        HTTPProblem(
            status: 408,
            slug: "request-timeout",
            title: "Request not received in time",
            detail: "The whole request must arrive within \(formatSeconds(seconds)) seconds of its first byte."
        )
    }

    /// 503: every worker is busy and the queue is full.
    static let serverBusy = HTTPProblem(
        status: 503,
        slug: "server-busy",
        title: "Server busy",
        detail: "All workers are busy and the request queue is full; retry after the indicated delay.",
        headers: ["Retry-After": "1"]
    )

    /// 503: the connection cap is reached; sent before closing a just-accepted connection.
    static let connectionLimit = HTTPProblem(
        status: 503,
        slug: "connection-limit",
        title: "Too many connections",
        detail: "The server has reached its connection limit; retry after the indicated delay.",
        headers: ["Retry-After": "1"]
    )

    /// 503: the client (TCP peer address, IPv6 /64) already has `maxConnectionsPerClient` open;
    /// sent before closing a just-accepted connection.
    static let clientConnectionLimit = HTTPProblem(
        status: 503,
        slug: "client-connection-limit",
        title: "Too many connections from this client",
        detail:
            "This client has reached its limit of open connections; reuse or close them, or retry after the indicated delay.",
        headers: ["Retry-After": "1"]
    )

    /// 500: a handler failed or produced an invalid response; details go to the server's events only.
    static let internalError = HTTPProblem(
        status: 500,
        slug: "internal-error",
        title: "Internal server error",
        detail: "The server could not complete the request. It has been reported."
    )

    /// Every problem the server itself sends: one per parse error, and the ones above.
    static var serverProblems: [HTTPProblem] {
        HTTPParseError.Code.allCases.map { HTTPProblem(HTTPParseError($0, "")) }
            + [requestTimeout(10), serverBusy, connectionLimit, clientConnectionLimit, internalError]
    }

    private static func formatSeconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
