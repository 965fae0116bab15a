import Foundation
import Glibc

/// A blocking loopback HTTP client for server tests. Every socket has send and receive timeouts, so
/// a server that never answers fails the test instead of hanging it.
final class TestClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Response {
        let status: Int
        let headers: [(name: String, value: String)]
        let body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        var text: String { String(decoding: body, as: UTF8.self) }

        /// `X-Request-Id` when it is the server's form, sixteen lowercase hex digits; nil otherwise.
        var requestID: String? {
            guard let value = header("X-Request-Id"), value.utf8.count == 16,
                value.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
            else { return nil }
            return value
        }

        /// The `type` slug of a problem+json body (the part after the last `/`).
        var problemSlug: String? {
            guard let range = text.range(of: "\"type\":\"") else { return nil }
            let rest = text[range.upperBound...]
            guard let end = rest.firstIndex(of: "\"") else { return nil }
            return rest[..<end].split(separator: "/").last.map(String.init)
        }
    }

    let fd: Int32
    private var buffered: [UInt8] = []

    /// `sourceHost` (an IPv4 loopback address such as `127.0.0.2`) plays another client machine.
    init(port: Int, timeoutSeconds: Int = 10, sourceHost: UInt32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let sourceHost, Self.withAddress(host: sourceHost, port: 0, { bind(fd, $0, $1) }) != 0 {
            let number = errno
            Glibc.close(fd)
            throw Failure(description: "bind to the source address: errno \(number)")
        }
        guard Self.withAddress(host: 0x7F00_0001, port: UInt16(port), { connect(fd, $0, $1) }) == 0 else {
            let number = errno
            Glibc.close(fd)
            throw Failure(description: "connect to port \(port): errno \(number)")
        }
    }

    /// Calls `body` with an IPv4 socket address for `host` and `port` (host byte order).
    private static func withAddress(
        host: UInt32,
        port: UInt16,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = host.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// Makes the coming close a reset (RST, SO_LINGER 0), so the server sees the connection end at
    /// once instead of a half-close it would still answer.
    func resetOnClose() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    deinit {
        Glibc.close(fd)
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads one response (framed by Content-Length; no Content-Length means no body).
    func readResponse() throws -> Response {
        var headEnd: Int?
        while headEnd == nil {
            headEnd = Self.find([13, 10, 13, 10], in: buffered)
            if headEnd == nil { try fill() }
        }
        let headBytes = Array(buffered[..<headEnd!])
        buffered.removeFirst(headEnd! + 4)
        let lines = String(decoding: headBytes, as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "bad status line \(lines[0])")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(
                (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: [" "]))
            )
        }
        let length =
            headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        while buffered.count < length { try fill() }
        let body = Array(buffered[..<length])
        buffered.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Reads until the server closes the connection; throws if it is still open at the timeout.
    /// Returns what arrived before the end.
    @discardableResult
    func readUntilClosed() throws -> [UInt8] {
        while true {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffered.append(contentsOf: chunk[..<count])
                continue
            }
            if count == 0 { return buffered }
            let number = errno
            if number == ECONNRESET { return buffered }
            throw Failure(description: "connection still open (recv errno \(number))")
        }
    }

    /// Whether a response (or EOF) is ready to read within `milliseconds`.
    func isReadable(withinMilliseconds milliseconds: Int32) -> Bool {
        if !buffered.isEmpty { return true }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) == 1
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            buffered.append(contentsOf: chunk[..<count])
        } else if count == 0 {
            throw Failure(description: "connection closed before a complete response")
        } else {
            throw Failure(description: "recv: errno \(errno)")
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
