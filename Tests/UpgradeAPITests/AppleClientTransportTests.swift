import Foundation
import Synchronization
import Testing

@testable import UpgradeAPI
@testable import UpgradeEngine

/// The production path is HTTPS: libcurl must verify the server's certificate chain and name.
@Suite("AppleClient over TLS")
struct AppleClientTLSTests {
    /// An HTTPS server (Python's `ssl`) with a self-signed certificate for 127.0.0.1, answering every
    /// request with an empty key set and counting them on standard output.
    final class UntrustedServer {
        let directory: URL
        let process = Process()
        let output = Pipe()
        let port: Int

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            openssl.arguments = [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", directory.appendingPathComponent("key.pem").path,
                "-out", directory.appendingPathComponent("cert.pem").path,
            ]
            openssl.standardOutput = FileHandle.nullDevice
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            guard openssl.terminationStatus == 0 else { throw ServerFailure("openssl could not make a certificate") }

            let script = """
                import http.server, ssl, sys
                class Handler(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        print("request", flush=True)
                        body = b'{"keys":[]}'
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    def log_message(self, *args):
                        pass
                server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(sys.argv[1], sys.argv[2])
                server.socket = context.wrap_socket(server.socket, server_side=True)
                print(server.server_address[1], flush=True)
                server.serve_forever()
                """
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", "-c", script, directory.appendingPathComponent("cert.pem").path,
                directory.appendingPathComponent("key.pem").path,
            ]
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            var text = ""
            while !text.contains("\n") {
                let data = output.fileHandleForReading.availableData
                guard !data.isEmpty else { throw ServerFailure("the TLS server did not start") }
                text += String(decoding: data, as: UTF8.self)
            }
            guard let port = Int(text.split(separator: "\n")[0]) else { throw ServerFailure("no port: \(text)") }
            self.port = port
        }

        func stop() {
            // SIGKILL: the test process may have SIGTERM blocked (the HTTP server's signal handling),
            // and a spawned child inherits that mask.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    struct ServerFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test("a certificate no trusted authority signed fails the call as untrusted TLS, and is not retried")
    func untrustedCertificate() async throws {
        let server = try UntrustedServer()
        defer { server.stop() }
        let probe = RetryProbe()
        var configuration = AppleClient.Configuration(
            baseURL: try .init("https://127.0.0.1:\(server.port)"),
            credentials: nil
        )
        configuration.retry.maximumAttempts = 3
        probe.configure(&configuration)
        let client = try AppleClient(configuration: configuration)
        let error = await appleError { () async throws(AppleEndpointError) in try await client.fetchKeySet() }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message.contains("the TLS connection could not be trusted") == true,
            "\(String(describing: error))"
        )
        #expect(probe.delays.isEmpty, "an untrusted certificate does not heal by retrying")
    }
}

@Suite("AppleClient called from Swift's pool")
struct AppleClientConcurrencyTests {
    /// Holds each request until `expected` are inside at once (or 10 s pass), recording the most
    /// seen together.
    final class Rendezvous: Sendable {
        let expected: Int
        private let inside = Atomic<Int>(0)
        private let most = Atomic<Int>(0)
        init(expected: Int) { self.expected = expected }

        func enter() {
            let now = inside.add(1, ordering: .relaxed).newValue
            _ = most.max(now, ordering: .relaxed)
            let deadline = ContinuousClock.now + .seconds(10)
            while most.load(ordering: .relaxed) < expected, ContinuousClock.now < deadline { usleep(1000) }
            inside.subtract(1, ordering: .relaxed)
        }

        var mostTogether: Int { most.load(ordering: .relaxed) }
    }

    @Test("eight calls from a task group are all under way at once: no small pool of blocking threads holds them back")
    func callsRunConcurrently() async throws {
        let rendezvous = Rendezvous(expected: 8)
        let server = try TestServer(
            handler: ScriptedHandler { _ in
                rendezvous.enter()
                return HTTPResponse(status: 200)
            },
            configure: { $0.workerCount = 8 }
        )
        defer { server.stop() }
        let client = try AppleClient(
            configuration: AppleClient.Configuration(
                baseURL: try .init("http://127.0.0.1:\(server.port)"),
                credentials: try .init(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1", privateKey: P256PrivateKey())
            )
        )
        let failures = await withTaskGroup(of: AppleEndpointError?.self) { group in
            for index in 0..<8 {
                group.addTask {
                    do throws(AppleEndpointError) {
                        try await client.revoke(token: "token-\(index)", clientID: "com.example.app")
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            return await group.reduce(into: [AppleEndpointError]()) { if let error = $1 { $0.append(error) } }
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(rendezvous.mostTogether == 8)
    }
}
