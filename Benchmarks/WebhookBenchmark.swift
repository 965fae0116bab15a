import Foundation
import Glibc
import Synchronization
import UpgradeEngine

/// `Benchmarks webhooks [COUNT] [ACCOUNTS]`: webhook deliveries per second from the outbox to a
/// receiver on loopback that answers 204 at once, through `WebhookSender` as `serve` runs it
/// (claims of one event per account, a batch sent in parallel, each delivery recorded in its own
/// write). COUNT events spread over ACCOUNTS accounts, so an account's events wait for each other
/// as they do in production. SQLite in a temporary file, or `UPGRADE_DB`.
func runWebhookBenchmark(count: Int, accounts: Int) throws {
    let receiver = try LoopbackReceiver()
    receiver.start()
    let store: any UpgradeStore
    var cleanup: (() -> Void)?
    if let url = ProcessInfo.processInfo.environment["UPGRADE_DB"], !url.isEmpty {
        store = try DatabaseLocation.parse(url).open()
    } else {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("webhooks-\(UUID().uuidString).db")
            .path
        store = try SQLiteStore(path: path)
        cleanup = {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
    }
    defer { cleanup?() }
    let now = Int64(Date().timeIntervalSince1970)
    _ = try store.migrate(now: now)
    // Earlier runs on UPGRADE_DB leave their rows delivered; only this run's are pending.
    for start in stride(from: 0, to: count, by: 500) {
        try store.write { tx in
            for index in start..<min(count, start + 500) {
                try WebhookOutbox.enqueue(
                    .passwordChanged,
                    accountID: "bench-\(index % accounts)",
                    data: [
                        ("accountId", .string("bench-\(index % accounts)")),
                        ("passwordChangeId", .string("pwc_\(index)")),
                    ],
                    in: tx,
                    now: now
                )
            }
        }
    }
    let secret = try WebhookSecret(text: "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString())
    let sender = WebhookSender(
        store: store,
        endpoint: WebhookSender.Endpoint(url: "http://127.0.0.1:\(receiver.port)/hooks", secret: secret)
    )
    let started = DispatchTime.now().uptimeNanoseconds
    try BlockingRunner.run { () async throws(StorageError) in
        while try sender.counts().pending > 0 {
            try await sender.drain(clock: { now })
        }
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    let counts = try sender.counts()
    print("webhook deliveries: \(count) events over \(accounts) accounts, batches of \(sender.policy.batchSize)")
    print(
        String(
            format: "%.0f deliveries/s (%.2f s; receiver saw %d requests; delivered %d, failed %d)",
            Double(count) / seconds,
            seconds,
            receiver.requests,
            counts.delivered,
            counts.failed
        )
    )
}

/// A loopback HTTP/1.1 receiver answering every request `204` on keep-alive connections, one
/// thread per connection: the cheapest receiver, so the figure is the sender's.
final class LoopbackReceiver: Sendable {
    let port: Int
    private let socket: Int32
    private let counter = Atomic<Int>(0)
    var requests: Int { counter.load(ordering: .relaxed) }

    init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.socket = socket
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0, listen(socket, 256) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Accepts connections until the process exits.
    func start() {
        let listener = socket
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { self.serve(client) }
            }
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let answer = Array("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n".utf8)
        while true {
            // A request: the head up to a blank line, then Content-Length bytes of body.
            while true {
                if let end = Self.headEnd(buffer) {
                    let head = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
                    let length =
                        head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                        ?? 0
                    if buffer.count >= end + 4 + length {
                        buffer.removeFirst(end + 4 + length)
                        break
                    }
                }
                let read = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard read > 0 else { return }
                buffer += chunk[0..<read]
            }
            counter.add(1, ordering: .relaxed)
            guard answer.withUnsafeBytes({ send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 else {
                return
            }
        }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
