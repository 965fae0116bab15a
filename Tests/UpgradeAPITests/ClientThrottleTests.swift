import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

@Suite("Per-client throttling of failed credential checks")
struct ClientThrottleTests {
    static let alice = HTTPClientAddress(bytes: [192, 0, 2, 1])!
    static let bob = HTTPClientAddress(bytes: [192, 0, 2, 2])!

    static func ipv6(_ groups: [UInt16]) -> HTTPClientAddress {
        HTTPClientAddress(bytes: groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })!
    }

    /// A throttle over a fresh migrated SQLite database of its own.
    final class Throttled {
        let directory: URL
        let store: SQLiteStore
        let throttle: ClientThrottle

        init(_ policy: ClientThrottle.Policy) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "siwa-throttle-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            store = try SQLiteStore(path: directory.appendingPathComponent("throttle.db").path)
            _ = try store.migrate(now: 1_700_000_000)
            throttle = ClientThrottle(policy: policy, store: store)
        }

        func retryAfter(_ client: HTTPClientAddress, now: Int64) throws -> Int64? {
            try throttle.retryAfter(clientKey: client.throttleKey.description, now: now)
        }

        func recordFailure(_ client: HTTPClientAddress, now: Int64) throws {
            try throttle.recordFailure(clientKey: client.throttleKey.description, now: now)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    @Test("a burst of `failures`, then one more per window / failures; other clients unaffected")
    func burstThenSteadyRate() throws {
        let throttle = try Throttled(ClientThrottle.Policy(failures: 3, window: 60)!)
        let start: Int64 = 1_800_000_000
        for _ in 0..<3 {
            #expect(try throttle.retryAfter(Self.alice, now: start) == nil)
            try throttle.recordFailure(Self.alice, now: start)
        }
        #expect(try throttle.retryAfter(Self.alice, now: start) == 20)
        #expect(try throttle.retryAfter(Self.alice, now: start + 19) == 1)
        #expect(try throttle.retryAfter(Self.bob, now: start) == nil)
        // One interval later exactly one further failure fits.
        #expect(try throttle.retryAfter(Self.alice, now: start + 20) == nil)
        try throttle.recordFailure(Self.alice, now: start + 20)
        #expect(try throttle.retryAfter(Self.alice, now: start + 20) == 20)
        // A quiet window pays the whole debt off: a full burst again.
        for _ in 0..<3 {
            #expect(try throttle.retryAfter(Self.alice, now: start + 200) == nil)
            try throttle.recordFailure(Self.alice, now: start + 200)
        }
        #expect(try throttle.retryAfter(Self.alice, now: start + 200) != nil)
    }

    @Test("an IPv6 client is counted by its /64, so rotating the interface id does not help")
    func ipv6ByPrefix() throws {
        let throttle = try Throttled(ClientThrottle.Policy(failures: 2, window: 60)!)
        let now: Int64 = 1_800_000_000
        try throttle.recordFailure(Self.ipv6([0x2001, 0xdb8, 0, 1, 0, 0, 0, 1]), now: now)
        try throttle.recordFailure(Self.ipv6([0x2001, 0xdb8, 0, 1, 0xdead, 0xbeef, 0, 2]), now: now)
        #expect(try throttle.retryAfter(Self.ipv6([0x2001, 0xdb8, 0, 1, 9, 9, 9, 9]), now: now) == 30)
        #expect(try throttle.retryAfter(Self.ipv6([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]), now: now) == nil)
    }

    @Test("policies parse from FAILURES/SECONDS and refuse anything else")
    func policyParsing() {
        #expect(ClientThrottle.Policy("20/600") == ClientThrottle.Policy(failures: 20, window: 600))
        #expect(ClientThrottle.Policy.default.description == "20/600")
        for bad in ["", "20", "20/", "/600", "0/600", "20/0", "-1/600", "20/600/1", "+20/600", "２/600", "20/604801"] {
            #expect(ClientThrottle.Policy(bad) == nil, "\(bad)")
        }
    }

    @Test("addresses print as dotted decimal and RFC 5952 text")
    func addressText() {
        #expect(Self.alice.description == "192.0.2.1")
        #expect(Self.ipv6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]).description == "2001:db8::1")
        #expect(Self.ipv6([0x2001, 0xdb8, 0, 1, 0, 0, 0, 1]).description == "2001:db8:0:1::1")
        #expect(Self.ipv6([0, 0, 0, 0, 0, 0, 0, 1]).description == "::1")
        #expect(Self.ipv6([0, 0, 0, 0, 0, 0, 0, 0]).description == "::")
        #expect(Self.ipv6([0x2001, 0, 0, 1, 0, 0, 0, 1]).description == "2001:0:0:1::1")
        #expect(Self.ipv6([0x2001, 0xdb8, 0, 1, 1, 1, 1, 1]).description == "2001:db8:0:1:1:1:1:1")
        #expect(Self.ipv6([0x2001, 0xdb8, 0xabcd, 1, 0, 0, 0, 0]).throttleKey.description == "2001:db8:abcd:1::")
        #expect(HTTPClientAddress(bytes: [1, 2, 3]) == nil)
    }

    @Test("UPGRADE_CLIENT_THROTTLE: default on, `off`, and one clear line for a bad value")
    func settings() throws {
        let base = ["UPGRADE_DB": "sqlite:unused.db"]
        #expect(try ServerSettings.load(base, development: true).clientThrottle == .default)
        let off = try ServerSettings.load(base.merging(["UPGRADE_CLIENT_THROTTLE": "off"]) { $1 }, development: true)
        #expect(off.clientThrottle == nil)
        let custom = try ServerSettings.load(
            base.merging(["UPGRADE_CLIENT_THROTTLE": "5/60"]) { $1 },
            development: true
        )
        #expect(custom.clientThrottle == ClientThrottle.Policy(failures: 5, window: 60))
        #expect {
            try ServerSettings.load(base.merging(["UPGRADE_CLIENT_THROTTLE": "lots"]) { $1 }, development: true)
        } throws: { error in
            let problems = (error as? ServerSettingsError)?.problems ?? []
            return problems.count == 1 && problems[0].hasPrefix("UPGRADE_CLIENT_THROTTLE: expected FAILURES/SECONDS")
        }
    }

    @Test(
        "UPGRADE_APPLE_LINK_CHECK_SECONDS: a day by default, at least 10, `off` or 0 to turn it off, one clear line otherwise",
        arguments: [
            (nil, 86_400), ("10", 10), ("3600", 3600), ("off", nil), ("0", nil),
        ] as [(String?, Int64?)]
    )
    func linkCheckSettings(_ text: String?, _ expected: Int64?) throws {
        var values = ["UPGRADE_DB": "sqlite:unused.db"]
        values["UPGRADE_APPLE_LINK_CHECK_SECONDS"] = text
        #expect(try ServerSettings.load(values, development: true).appleLinkCheckSeconds == expected)
    }

    @Test(
        "UPGRADE_APPLE_LINK_CHECK_SECONDS refuses values below 10 or not whole seconds",
        arguments: ["9", "-5", "1.5", "daily"]
    )
    func badLinkCheckSettings(_ text: String) {
        let values = ["UPGRADE_DB": "sqlite:unused.db", "UPGRADE_APPLE_LINK_CHECK_SECONDS": text]
        #expect {
            try ServerSettings.load(values, development: true)
        } throws: { error in
            let problems = (error as? ServerSettingsError)?.problems ?? []
            return problems.count == 1
                && problems[0].hasPrefix("UPGRADE_APPLE_LINK_CHECK_SECONDS: expected whole seconds from 10")
        }
    }

    @Test("UPGRADE_ADMIN_THROTTLE: a count of its own, default on, `off`, one clear line for a bad value")
    func adminSettings() throws {
        let base = ["UPGRADE_DB": "sqlite:unused.db"]
        let defaults = try ServerSettings.load(base, development: true)
        #expect(defaults.adminThrottle == .default)
        let custom = try ServerSettings.load(
            base.merging(["UPGRADE_ADMIN_THROTTLE": "5/60", "UPGRADE_CLIENT_THROTTLE": "off"]) { $1 },
            development: true
        )
        #expect(custom.adminThrottle == ClientThrottle.Policy(failures: 5, window: 60) && custom.clientThrottle == nil)
        let off = try ServerSettings.load(base.merging(["UPGRADE_ADMIN_THROTTLE": "off"]) { $1 }, development: true)
        #expect(off.adminThrottle == nil && off.clientThrottle == .default)
        #expect {
            try ServerSettings.load(base.merging(["UPGRADE_ADMIN_THROTTLE": "20"]) { $1 }, development: true)
        } throws: { error in
            let problems = (error as? ServerSettingsError)?.problems ?? []
            return problems.count == 1 && problems[0].hasPrefix("UPGRADE_ADMIN_THROTTLE: expected FAILURES/SECONDS")
        }
    }

    /// One `POST /v1/upgrades` over a fresh connection from `source` (a loopback address).
    static func startUpgrade(
        _ server: DevServer,
        from source: UInt32,
        username: String,
        password: String,
        forwardedFor: String? = nil
    ) throws -> TestClient.Response {
        let client = try TestClient(port: server.application.server.port, sourceHost: source)
        let body = try JSONSerialization.data(withJSONObject: [
            "username": username, "password": password, "serviceIdentifier": "example.com",
        ])
        try client.send(
            "POST /v1/upgrades HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
                + (forwardedFor.map { "X-Forwarded-For: \($0)\r\n" } ?? "") + "Connection: close\r\n\r\n"
        )
        try client.send([UInt8](body))
        return try client.readResponse()
    }

    @Test("over HTTP: a client spraying wrong passwords is refused before any check; another client is not")
    func sprayingClientIsRefused() throws {
        let server = try DevServer(environment: ["UPGRADE_CLIENT_THROTTLE": "3/60"])
        let sprayer: UInt32 = 0x7F00_0001
        let neighbour: UInt32 = 0x7F00_0002
        for index in 0..<3 {
            let wrong = try Self.startUpgrade(server, from: sprayer, username: "user\(index)", password: "guess")
            #expect(wrong.status == 401)
            #expect(wrong.problemSlug == "invalid-credentials")
        }
        // Even the right password is not checked while the client is over its limit...
        let refused = try Self.startUpgrade(
            server,
            from: sprayer,
            username: DevelopmentEnvironment.demoUsername,
            password: DevelopmentEnvironment.demoPassword
        )
        #expect(refused.status == 429)
        #expect(refused.problemSlug == "rate-limited")
        #expect(refused.header("Retry-After") == "20")
        #expect(refused.text.contains(#""result":"failure""#))
        #expect(refused.text.contains("from this client"))
        // ... and nothing was recorded for it: no upgrade was started.
        let upgrades = try server.application.store.read { tx in
            try tx.throttle(usernameKey: DevelopmentEnvironment.demoUsername)
        }
        #expect(upgrades == nil)

        // Another client is not affected.
        let other = try Self.startUpgrade(
            server,
            from: neighbour,
            username: DevelopmentEnvironment.demoUsername,
            password: DevelopmentEnvironment.demoPassword
        )
        #expect(other.status == 201)

        // Once an interval has passed, the sprayer may try again.
        server.clock.advance(20)
        let later = try Self.startUpgrade(
            server,
            from: sprayer,
            username: DevelopmentEnvironment.demoUsername,
            password: DevelopmentEnvironment.demoPassword
        )
        #expect(later.status == 201)

        // Each request's log line names its client, and never the password.
        let requests = server.logs.lines.withLock { $0 }.filter { $0.contains(#""msg":"request""#) }
        #expect(requests.count == 6)
        #expect(requests.filter { $0.contains(#""client":"127.0.0.1""#) }.count == 5)
        #expect(requests.filter { $0.contains(#""client":"127.0.0.2""#) }.count == 1)
        #expect(!requests.contains { $0.contains("guess") || $0.contains(DevelopmentEnvironment.demoPassword) })

        let metrics = try TestClient(port: server.application.server.port)
        try metrics.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let text = try metrics.readResponse().text
        #expect(text.contains("client_throttle_clients 1"))
    }

    @Test("X-Forwarded-For names the client only through a trusted proxy, right-most untrusted hop first")
    func forwardedClients() {
        let proxies = TrustedProxies("10.0.0.0/8, 2001:db8::/32,192.0.2.1")!
        let proxy = HTTPClientAddress("10.1.2.3")!
        let stranger = HTTPClientAddress("198.51.100.9")!
        #expect(proxies.client(peer: proxy, forwardedFor: ["203.0.113.7"]) == HTTPClientAddress("203.0.113.7"))
        // What the client wrote itself (left of the last untrusted hop) is never believed.
        #expect(
            proxies.client(peer: proxy, forwardedFor: ["1.1.1.1, 203.0.113.7", "10.9.9.9"])
                == HTTPClientAddress("203.0.113.7")
        )
        #expect(proxies.client(peer: stranger, forwardedFor: ["203.0.113.7"]) == stranger)
        #expect(proxies.client(peer: proxy, forwardedFor: []) == proxy)
        // Garbage ends the walk at the nearest trusted hop; all-trusted chains give the left-most.
        #expect(
            proxies.client(peer: proxy, forwardedFor: ["203.0.113.7, not-an-ip, 10.0.0.5"])
                == HTTPClientAddress("10.0.0.5")
        )
        #expect(proxies.client(peer: proxy, forwardedFor: ["10.0.0.5, 10.0.0.6"]) == HTTPClientAddress("10.0.0.5"))
        #expect(proxies.client(peer: proxy, forwardedFor: ["::ffff:203.0.113.7"]) == HTTPClientAddress("203.0.113.7"))
        #expect(proxies.trusts(HTTPClientAddress("2001:db8:ffff::1")!))
        #expect(!proxies.trusts(HTTPClientAddress("2001:db9::1")!))
        #expect(proxies.trusts(HTTPClientAddress("192.0.2.1")!) && !proxies.trusts(HTTPClientAddress("192.0.2.2")!))
        #expect(proxies.description == "10.0.0.0/8,2001:db8::/32,192.0.2.1/32")
        for bad in [
            "", "10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/+8", "example.com", "10.0.0.0/8,", "[::1]", "1.2.3",
        ] {
            #expect(TrustedProxies(bad) == nil, "\(bad)")
        }
    }

    @Test("over HTTP behind a trusted proxy: each forwarded client has its own count, spoofed prefixes change nothing")
    func behindProxy() throws {
        let server = try DevServer(environment: [
            "UPGRADE_CLIENT_THROTTLE": "2/60", "UPGRADE_TRUSTED_PROXIES": "127.0.0.1",
        ])
        let proxy: UInt32 = 0x7F00_0001
        for index in 0..<2 {
            let wrong = try Self.startUpgrade(
                server,
                from: proxy,
                username: "u\(index)",
                password: "guess",
                forwardedFor: "203.0.113.7"
            )
            #expect(wrong.status == 401)
        }
        let demo = (DevelopmentEnvironment.demoUsername, DevelopmentEnvironment.demoPassword)
        let limited = try Self.startUpgrade(
            server,
            from: proxy,
            username: demo.0,
            password: demo.1,
            forwardedFor: "203.0.113.7"
        )
        #expect(limited.status == 429)
        let spoofed = try Self.startUpgrade(
            server,
            from: proxy,
            username: demo.0,
            password: demo.1,
            forwardedFor: "198.51.100.1, 203.0.113.7"
        )
        #expect(spoofed.status == 429)
        let other = try Self.startUpgrade(
            server,
            from: proxy,
            username: demo.0,
            password: demo.1,
            forwardedFor: "203.0.113.8"
        )
        #expect(other.status == 201)
        // An untrusted peer's header is ignored: it is counted as itself.
        let direct: UInt32 = 0x7F00_0002
        for index in 0..<2 {
            _ = try Self.startUpgrade(
                server,
                from: direct,
                username: "d\(index)",
                password: "guess",
                forwardedFor: "203.0.113.\(index + 50)"
            )
        }
        let ignored = try Self.startUpgrade(
            server,
            from: direct,
            username: demo.0,
            password: demo.1,
            forwardedFor: "203.0.113.99"
        )
        #expect(ignored.status == 429)
        let lines = server.logs.lines.withLock { $0 }.filter { $0.contains(#""msg":"request""#) }
        #expect(lines.contains { $0.contains(#""client":"203.0.113.8""#) && $0.contains(#""proxy":"127.0.0.1""#) })
        #expect(lines.contains { $0.contains(#""client":"127.0.0.2""#) && !$0.contains(#""proxy""#) })
    }

    @Test("UPGRADE_TRUSTED_PROXIES: none by default, one clear line for a bad value")
    func trustedProxySettings() throws {
        let base = ["UPGRADE_DB": "sqlite:unused.db"]
        #expect(try ServerSettings.load(base, development: true).trustedProxies == .none)
        let set = try ServerSettings.load(
            base.merging(["UPGRADE_TRUSTED_PROXIES": "10.0.0.0/8"]) { $1 },
            development: true
        )
        #expect(set.trustedProxies.trusts(HTTPClientAddress("10.2.3.4")!))
        #expect {
            try ServerSettings.load(base.merging(["UPGRADE_TRUSTED_PROXIES": "10.0.0.1/8"]) { $1 }, development: true)
        } throws: { error in
            let problems = (error as? ServerSettingsError)?.problems ?? []
            return problems.count == 1 && problems[0].hasPrefix("UPGRADE_TRUSTED_PROXIES: expected")
        }
    }
}
