import Foundation
import Glibc
import UpgradeEngine

/// The benchmark's device: one blocking, keep-alive HTTP/1.1 connection to a loopback port, as lean
/// as it can be. The driver shares the machine's cores with the server it measures, so every cycle
/// it spends (URLSession spent about 0.75 ms per request) is taken from, or pollutes the caches of,
/// the server. Our servers always answer with Content-Length, which is all this reads.
///
/// `@unchecked Sendable`: each connection belongs to one driver thread, which alone calls it;
/// it is only handed to that thread, never shared.
final class LeanHTTPConnection: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private var fd: Int32
    private let port: UInt16
    private let authority: String
    private var buffer: [UInt8] = []
    /// When the last answer was read (uptime nanoseconds).
    private var lastUsed: UInt64

    /// The server closes a connection idle for its keep-alive timeout (`keepAliveTimeout`); a driver
    /// thread that waited longer (another phase, a slow run) opens a new one first, as a client
    /// that pools connections does, instead of failing on the closed one.
    private static let idleReconnect: UInt64 = 2_000_000_000

    /// `base` is `http://127.0.0.1:PORT`.
    init(base: String) throws {
        guard base.hasPrefix("http://127.0.0.1:"), let port = UInt16(base.dropFirst("http://127.0.0.1:".count)) else {
            throw Failure(description: "not a loopback base URL: \(base)")
        }
        self.port = port
        authority = "127.0.0.1:\(port)"
        fd = try Self.connect(port: port)
        lastUsed = DispatchTime.now().uptimeNanoseconds
    }

    private static func connect(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let number = errno
            Glibc.close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(number)")
        }
        return fd
    }

    deinit { Glibc.close(fd) }

    /// POSTs a JSON object of strings and returns the status and the parsed JSON answer.
    func post(_ path: String, _ fields: KeyValuePairs<String, String>) throws -> (status: Int, json: JSONValue) {
        try post(path, json: .object(fields.map { JSONValue.Member($0.key, .string($0.value)) }))
    }

    /// POSTs a JSON value, with `authorization` as the `Authorization` header when given, and
    /// returns the status and the parsed JSON answer.
    func post(
        _ path: String,
        json value: JSONValue,
        authorization: String? = nil
    ) throws -> (status: Int, json: JSONValue) {
        let body = value.serialized()
        let head =
            "POST \(path) HTTP/1.1\r\nHost: \(authority)\r\n"
            + (authorization.map { "Authorization: \($0)\r\n" } ?? "")
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        var request = Array(head.utf8)
        request.append(contentsOf: body)
        try send(request, path)
        let (status, answer) = try readResponse(path)
        let json = (try? JSONValue.parse(answer)) ?? .null
        return (status, json)
    }

    /// GETs `path` and returns the status and the body.
    func get(_ path: String) throws -> (status: Int, body: [UInt8]) {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8)
        try send(request, path)
        return try readResponse(path)
    }

    private func send(_ request: [UInt8], _ path: String) throws {
        if DispatchTime.now().uptimeNanoseconds - lastUsed > Self.idleReconnect {
            let fresh = try Self.connect(port: port)
            Glibc.close(fd)
            fd = fresh
            buffer.removeAll()
        }
        var sent = 0
        while sent < request.count {
            let count = request.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw Failure(description: "\(path): send failed, errno \(errno)") }
            sent += count
        }
    }

    private func readResponse(_ path: String) throws -> (Int, [UInt8]) {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            headEnd = buffer.firstRange(of: separator)?.upperBound
            if headEnd == nil { try fill(path) }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else { throw Failure(description: "\(path): no HTTP/1.1 status line") }
        let length =
            lines.dropFirst().lazy.compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        while buffer.count < headEnd! + length { try fill(path) }
        let body = Array(buffer[headEnd!..<(headEnd! + length)])
        buffer.removeFirst(headEnd! + length)
        lastUsed = DispatchTime.now().uptimeNanoseconds
        return (status, body)
    }

    private func fill(_ path: String) throws {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure(description: "\(path): the connection ended (errno \(errno))") }
        buffer.append(contentsOf: chunk[..<count])
    }
}
