/// Serializes responses onto a connection's output buffer, and refuses responses that would corrupt
/// the stream (a CR or LF in a value would let it inject headers or a second response).
enum ResponseEncoder {
    /// How the server frames one response on its connection.
    struct Framing {
        /// A HEAD request: send the headers, including the body's length, but not the body.
        var omitBody: Bool
        /// Send `Connection: close`; the connection ends after this response.
        var close: Bool
        /// An HTTP/1.0 client asked for keep-alive and gets it: say so, 1.0 assumes close otherwise.
        var confirmKeepAlive: Bool
        /// Sent as `X-Request-Id` on every response, the server's own errors included, so a client
        /// can quote it and it can be found in the server's log line for the request.
        var requestID: HTTPRequestID
    }

    /// Header names the server sets itself, recognised without comparing every name to each of them.
    private enum ServerSetField {
        case replaced
        case contentType
        case other

        init(_ name: String) {
            let first = name.utf8.first.map(HTTPField.lowercasedASCII)
            guard
                first == UInt8(ascii: "c") || first == UInt8(ascii: "d") || first == UInt8(ascii: "t")
                    || first == UInt8(ascii: "x")
            else {
                self = .other
                return
            }
            let field = HTTPField(name: name, value: "")
            if field.hasName("Content-Type") {
                self = .contentType
            } else if field.hasName("Content-Length") || field.hasName("Connection") || field.hasName("Date")
                || field.hasName("Transfer-Encoding") || field.hasName("X-Request-Id")
            {
                self = .replaced
            } else {
                self = .other
            }
        }
    }

    /// The interim response to `Expect: 100-continue`, carrying the id its final response will have.
    static func encodeContinue(requestID: HTTPRequestID, into output: inout [UInt8]) {
        output.append(contentsOf: "HTTP/1.1 100 Continue\r\n".utf8)
        appendRequestID(requestID, to: &output)
        output.append(contentsOf: "\r\n".utf8)
    }

    /// Why `response` cannot be sent, or nil if it can.
    static func validationFailure(_ response: HTTPResponse) -> String? {
        guard (200...599).contains(response.status) else { return "status \(response.status) is not 200...599" }
        for field in response.headers {
            guard !field.name.isEmpty, field.name.utf8.allSatisfy(ASCII.isTokenByte) else {
                return "header name is not a token"
            }
            for byte in field.value.utf8 where byte == ASCII.cr || byte == ASCII.lf || byte == 0 {
                return "header \(field.name) contains CR, LF or NUL"
            }
        }
        return nil
    }

    /// Appends `response` to `output`; `response` must have passed `validationFailure`.
    static func encode(_ response: HTTPResponse, framing: Framing, date: [UInt8], into output: inout [UInt8]) {
        let status = response.status
        output.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(status, to: &output)
        output.append(ASCII.space)
        output.append(contentsOf: reasonPhrase(status).utf8)
        output.append(contentsOf: "\r\n".utf8)
        var hasContentType = false
        for field in response.headers {
            switch ServerSetField(field.name) {
            case .replaced: continue
            case .contentType: hasContentType = true
            case .other: break
            }
            output.append(contentsOf: field.name.utf8)
            output.append(contentsOf: ": ".utf8)
            output.append(contentsOf: field.value.utf8)
            output.append(contentsOf: "\r\n".utf8)
        }
        appendRequestID(framing.requestID, to: &output)
        output.append(contentsOf: "Date: ".utf8)
        output.append(contentsOf: date)
        output.append(contentsOf: "\r\n".utf8)
        // RFC 9110 §8.6: no Content-Length (and no body) for 204; 304 has no body either.
        let bodyAllowed = status != 204 && status != 304
        if bodyAllowed {
            if !hasContentType && !response.body.isEmpty {
                output.append(contentsOf: "Content-Type: application/octet-stream\r\n".utf8)
            }
            output.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(response.body.count, to: &output)
            output.append(contentsOf: "\r\n".utf8)
        }
        if framing.close {
            output.append(contentsOf: "Connection: close\r\n".utf8)
        } else if framing.confirmKeepAlive {
            output.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        output.append(contentsOf: "\r\n".utf8)
        if bodyAllowed && !framing.omitBody {
            output.append(contentsOf: response.body)
        }
    }

    /// `X-Request-Id: ` and the id's sixteen hex digits, written as bytes (no string per response).
    static func appendRequestID(_ id: HTTPRequestID, to output: inout [UInt8]) {
        output.append(contentsOf: "X-Request-Id: ".utf8)
        let hex: StaticString = "0123456789abcdef"
        for index in 0..<16 {
            output.append(hex.utf8Start[Int(id.rawValue >> UInt64(60 - 4 * index) & 0xf)])
        }
        output.append(contentsOf: "\r\n".utf8)
    }

    static func appendDecimal(_ value: Int, to output: inout [UInt8]) {
        precondition(value >= 0)
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            output.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 423: "Locked"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default:
            switch status / 100 {
            case 2: "Success"
            case 3: "Redirection"
            case 4: "Client Error"
            default: "Server Error"
            }
        }
    }
}
