import Foundation
import Glibc
import Testing
import UpgradeAPI
import UpgradeTestSupport

/// `serve`'s defences against a client that opens connections and sends nothing: the per-client
/// connection limit, and the separate health listener that answers while the API's table is full.
@Suite("Connection flood")
struct ConnectionFloodTests {
    static func loopback(_ last: UInt32) -> UInt32 { 0x7F00_0000 | last }

    /// Waits (at most 5 s) until the API server holds `count` connections.
    static func waitForOpenConnections(_ server: DevServer, _ count: Int) -> Bool {
        for _ in 0..<500 {
            if server.application.server.statistics.connectionsOpen == count { return true }
            usleep(10_000)
        }
        return false
    }

    static func get(_ path: String, port: Int, from source: UInt32) throws -> TestClient.Response {
        let client = try TestClient(port: port, sourceHost: source)
        try client.send("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = try client.readResponse()
        try client.readUntilClosed()
        return response
    }

    @Test("idle connections from one address lock out neither other addresses nor the health listener")
    func floodFromOneAddress() throws {
        let server = try DevServer(
            environment: ["UPGRADE_MAX_CONNECTIONS_PER_CLIENT": "8", "UPGRADE_HEALTH_LISTEN": "127.0.0.1:0"],
            configureServer: {
                $0.maxConnections = 24
                // The flood stays connected for the whole test, however slow the machine.
                $0.firstByteTimeout = .seconds(60)
            }
        )
        let port = server.application.server.port
        let healthPort = try #require(server.application.healthServer?.port)
        #expect(healthPort != 0 && healthPort != port)

        // 40 idle connections from one address: 8 are held, the rest refused at once.
        var flood: [TestClient] = []
        for _ in 0..<8 { flood.append(try TestClient(port: port, sourceHost: Self.loopback(1))) }
        for _ in 0..<32 {
            let refused = try TestClient(port: port, sourceHost: Self.loopback(1))
            let response = try refused.readResponse()
            #expect(response.status == 503 && response.problemSlug == "client-connection-limit")
            #expect(response.requestID != nil)
        }
        #expect(server.application.server.statistics.connectionsRefusedPerClient == 32)

        // Another address is served by the API listener meanwhile.
        let other = try Self.get("/healthz", port: port, from: Self.loopback(2))
        #expect(other.status == 200)
        #expect(Self.waitForOpenConnections(server, 8))

        // Two more addresses fill the table: now the API listener refuses everyone...
        for address: UInt32 in [3, 4] {
            for _ in 0..<8 { flood.append(try TestClient(port: port, sourceHost: Self.loopback(address))) }
        }
        #expect(Self.waitForOpenConnections(server, 24))
        let refused = try TestClient(port: port, sourceHost: Self.loopback(5))
        #expect(try refused.readResponse().problemSlug == "connection-limit")

        // ...and the health listener still answers liveness and readiness, and nothing else.
        for path in ["/healthz", "/readyz"] {
            let response = try Self.get(path, port: healthPort, from: Self.loopback(5))
            #expect(response.status == 200 && response.text == #"{"status":"ok"}"#, "\(path)")
            #expect(response.requestID != nil)
        }
        let elsewhere = try Self.get("/v1/upgrades/upg_1", port: healthPort, from: Self.loopback(5))
        #expect(elsewhere.status == 404 && elsewhere.problemSlug == "not-found")
        #expect(flood.count == 24)
    }

    @Test("UPGRADE_MAX_CONNECTIONS_PER_CLIENT and UPGRADE_HEALTH_LISTEN: defaults, and one clear line for a bad value")
    func settings() throws {
        let probe = SettingsProbe()
        let load = probe.load
        let problems = probe.problems
        let defaults = try load([:])
        #expect(defaults.maxConnectionsPerClient == HTTPServer.Configuration().maxConnectionsPerClient)
        #expect(defaults.healthListen == nil)
        #expect(try load(["UPGRADE_MAX_CONNECTIONS_PER_CLIENT": "200"]).maxConnectionsPerClient == 200)
        let health = try load(["UPGRADE_HEALTH_LISTEN": "10.0.0.5:9090"]).healthListen
        #expect(health?.host == "10.0.0.5" && health?.port == 9090)

        for bad in ["0", "-1", "1025", "many", "+5", " 8x"] {
            let found = problems(["UPGRADE_MAX_CONNECTIONS_PER_CLIENT": bad])
            #expect(found.count == 1, "\(bad): \(found)")
            #expect(
                found.first?.hasPrefix("UPGRADE_MAX_CONNECTIONS_PER_CLIENT: expected a whole number from 1 to 1024")
                    == true
            )
        }
        for bad in ["9090", "localhost:9090", "127.0.0.1:65536", "127.0.0.1:", "[::1]:9090"] {
            let found = problems(["UPGRADE_HEALTH_LISTEN": bad])
            #expect(found.count == 1, "\(bad): \(found)")
            #expect(found.first?.hasPrefix("UPGRADE_HEALTH_LISTEN: expected a numeric ADDRESS:PORT") == true)
        }
        #expect(
            problems(["UPGRADE_HEALTH_LISTEN": "127.0.0.1:8080"]) == [
                "UPGRADE_HEALTH_LISTEN: must differ from UPGRADE_LISTEN (127.0.0.1:8080); it is a second listener"
            ]
        )
    }

    @Test("a health listener whose address is taken stops the API server again and names UPGRADE_HEALTH_LISTEN")
    func healthListenerAddressInUse() throws {
        let taken = try DevServer()
        let port = taken.application.server.port
        do {
            _ = try DevServer(environment: ["UPGRADE_HEALTH_LISTEN": "127.0.0.1:\(port)"])
            Issue.record("started with a taken health address")
        } catch let failure as UpgradeApplication.StartFailure {
            #expect(failure.variable == "UPGRADE_HEALTH_LISTEN")
            #expect(failure.description.hasPrefix("UPGRADE_HEALTH_LISTEN: cannot listen on 127.0.0.1:\(port)"))
        }
    }
}
