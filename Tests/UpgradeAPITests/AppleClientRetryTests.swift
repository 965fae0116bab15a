import Foundation
import Synchronization
import Testing

@testable import AppleEmulator
@testable import UpgradeAPI
@testable import UpgradeEngine

/// Records what the client asked to wait and how often a handler was called, so retry behaviour
/// is checked on counts and requested delays, never on elapsed time.
final class RetryProbe: Sendable {
    private let attemptCount = Atomic<Int>(0)
    private let delayLog = Mutex<[Duration]>([])
    private let eventLog = Mutex<[AppleClientEvent]>([])

    /// Counts a request; returns its 1-based number.
    func attempt() -> Int {
        attemptCount.add(1, ordering: .relaxed).newValue
    }

    var attempts: Int { attemptCount.load(ordering: .relaxed) }
    var delays: [Duration] { delayLog.withLock { $0 } }
    var events: [AppleClientEvent] { eventLog.withLock { $0 } }

    func configure(_ configuration: inout AppleClient.Configuration) {
        configuration.sleep = { [self] delay in delayLog.withLock { $0.append(delay) } }
        configuration.onEvent = { [self] event in eventLog.withLock { $0.append(event) } }
    }
}

@Suite("AppleClient retries, bounds and answers")
struct AppleClientRetryTests {
    static let tokenJSON = #"{"access_token":"at-1","token_type":"bearer","expires_in":3600}"#

    /// A server answering with `respond` (given the 1-based attempt number), and a client of it.
    final class ScriptedApple {
        let probe = RetryProbe()
        let server: TestServer
        let client: AppleClient

        init(
            configure: (inout AppleClient.Configuration) -> Void = { _ in },
            respond: @escaping @Sendable (HTTPRequest, Int) throws -> HTTPResponse
        ) throws {
            let probe = self.probe
            server = try TestServer(handler: ScriptedHandler { request in try respond(request, probe.attempt()) })
            var configuration = AppleClient.Configuration(
                baseURL: try .init("http://127.0.0.1:\(server.port)"),
                credentials: try .init(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1", privateKey: P256PrivateKey())
            )
            probe.configure(&configuration)
            configure(&configuration)
            client = try AppleClient(configuration: configuration)
        }

        func stop() {
            server.stop()
        }
    }

    @Test("503 twice, then 200: three attempts, two backoffs growing from the initial one")
    func retriesServiceUnavailable() async throws {
        let apple = try ScriptedApple { _, attempt in
            attempt <= 2 ? HTTPResponse(status: 503) : .json(Self.tokenJSON)
        }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let token = try await client.teamAccessToken(clientID: "com.example.app")
        #expect(token.accessToken == "at-1")
        #expect(probe.attempts == 3)
        let delays = probe.delays
        #expect(delays.count == 2)
        // Equal jitter: between half and all of 250 ms, then of 500 ms.
        #expect(delays[0] >= .milliseconds(125) && delays[0] <= .milliseconds(250))
        #expect(delays[1] >= .milliseconds(250) && delays[1] <= .milliseconds(500))
        #expect(probe.events.count == 2)
        #expect(probe.events.first?.description.contains("HTTP 503") == true)
    }

    @Test("429 with Retry-After: the wait is what Apple asked for")
    func honoursRetryAfter() async throws {
        let apple = try ScriptedApple { _, attempt in
            attempt == 1 ? HTTPResponse(status: 429, headers: ["Retry-After": "3"]) : .json(Self.tokenJSON)
        }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        _ = try await client.teamAccessToken(clientID: "com.example.app")
        #expect(probe.attempts == 2)
        #expect(probe.delays == [.seconds(3)])
    }

    @Test("a Retry-After longer than a call may wait ends the call instead of holding it")
    func refusesLongRetryAfter() async throws {
        let apple = try ScriptedApple { _, _ in HTTPResponse(status: 503, headers: ["Retry-After": "120"]) }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.teamAccessToken(clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("Retry-After 120") == true)
        #expect(error?.retryAfter == .seconds(120), "handed up for the caller's own backoff")
        #expect(probe.attempts == 1)
        #expect(probe.delays.isEmpty)
    }

    @Test("a refresh-token check that meets a 429 on its one attempt hands Apple's Retry-After up")
    func refreshCheckRetryAfter() async throws {
        let apple = try ScriptedApple(
            configure: { $0.retry.maximumAttempts = 1 },
            respond: { request, _ in
                #expect(String(decoding: request.body, as: UTF8.self).contains("grant_type=refresh_token"))
                return HTTPResponse(status: 429, headers: ["Retry-After": "30"])
            }
        )
        defer { apple.stop() }
        let client = apple.client
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.validateRefreshToken("r.token", clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable && error?.retryAfter == .seconds(30))
        #expect(error?.message.contains("r.token") == false)
    }

    @Test("Retry-After as delay-seconds or an HTTP-date")
    func retryAfterParsing() {
        let now: Int64 = 1_445_412_480  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(AppleClient.retryAfter("7", now: now) == .seconds(7))
        #expect(AppleClient.retryAfter(" 0 ", now: now) == .seconds(0))
        #expect(AppleClient.retryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == .seconds(30))
        #expect(AppleClient.retryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now: now) == .seconds(0))
        #expect(AppleClient.retryAfter("soon", now: now) == nil)
        #expect(AppleClient.retryAfter("-5", now: now) == nil)
    }

    @Test("a 400 is Apple's answer, not a failure to retry")
    func doesNotRetryClientErrors() async throws {
        let apple = try ScriptedApple { _, _ in .json(status: 400, #"{"error":"invalid_grant"}"#) }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.exchangeAuthorizationCode("c-1", clientID: "com.example.app")
        }
        #expect(error?.code == .invalidGrant)
        #expect(error?.httpStatus == 400)
        #expect(probe.attempts == 1)
        #expect(probe.delays.isEmpty)
    }

    @Test("invalid_grant after a retried exchange says an earlier attempt may have used the code")
    func invalidGrantAfterRetry() async throws {
        let apple = try ScriptedApple { _, attempt in
            attempt == 1 ? HTTPResponse(status: 502) : .json(status: 400, #"{"error":"invalid_grant"}"#)
        }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.exchangeAuthorizationCode("c-1", clientID: "com.example.app")
        }
        #expect(error?.code == .invalidGrant)
        #expect(error?.message.contains("earlier attempt") == true)
        #expect(probe.attempts == 2)
    }

    @Test("5xx on every attempt: bounded attempts, then unavailable")
    func boundedAttempts() async throws {
        let apple = try ScriptedApple { _, _ in HTTPResponse(status: 500) }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.revoke(token: "t", clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("HTTP 500 on each of 4 attempts") == true)
        #expect(probe.attempts == 4)
        #expect(probe.delays.count == 3)
    }

    @Test("waits that would pass the total time are not started")
    func boundedTotalTime() async throws {
        let apple = try ScriptedApple(
            configure: { $0.retry.totalTime = .milliseconds(300) },
            respond: { _, _ in HTTPResponse(status: 503, headers: ["Retry-After": "1"]) }
        )
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.teamAccessToken(clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("no time left") == true)
        #expect(probe.attempts == 1)
    }

    @Test("a connection refused is retried, then reported without the request's secrets")
    func retriesTransportFailures() async throws {
        // A port that was just listening and no longer is.
        let closed = try TestServer(handler: ScriptedHandler { _ in HTTPResponse(status: 200) })
        let port = closed.port
        closed.stop()
        let probe = RetryProbe()
        var configuration = AppleClient.Configuration(
            baseURL: try .init("http://127.0.0.1:\(port)"),
            credentials: try .init(teamID: "TEAMAAAAA1", keyID: "KEYAAAAAA1", privateKey: P256PrivateKey())
        )
        configuration.retry.maximumAttempts = 3
        probe.configure(&configuration)
        let client = try AppleClient(configuration: configuration)
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.exchangeAuthorizationCode("secret-code-123", clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("could not connect") == true)
        #expect(error?.message.contains("on each of 3 attempts") == true)
        #expect(error?.description.contains("secret-code-123") == false)
        #expect(probe.delays.count == 2)
    }

    @Test("a redirect is not followed: the client secret must not travel elsewhere")
    func refusesRedirects() async throws {
        let apple = try ScriptedApple { _, _ in
            HTTPResponse(status: 307, headers: ["Location": "http://127.0.0.1:9/auth/token"])
        }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.teamAccessToken(clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("redirect") == true)
        #expect(probe.attempts == 1)
    }

    @Test("an answer larger than the bound is refused")
    func boundsAnswerSize() async throws {
        let big = "{\"access_token\":\"" + String(repeating: "a", count: 100_000) + "\"}"
        let apple = try ScriptedApple { _, _ in .json(big) }
        defer { apple.stop() }
        let client = apple.client
        let probe = apple.probe
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.teamAccessToken(clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("larger than 65536 bytes") == true)
        #expect(probe.attempts == 1)
    }

    @Test("an attempt that takes longer than the request timeout fails as a timeout")
    func timesOut() async throws {
        let apple = try ScriptedApple(
            configure: {
                $0.requestTimeout = .milliseconds(300)
                $0.retry.maximumAttempts = 1
            },
            respond: { _, _ in
                usleep(1_500_000)
                return .json(Self.tokenJSON)
            }
        )
        defer { apple.stop() }
        let client = apple.client
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.teamAccessToken(clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("no complete answer within 0.3 s") == true)
    }

    @Test("cancelling the caller ends the call, whether the request is under way or not yet sent")
    func cancellation() async throws {
        let gate = HandlerGate()
        let apple = try ScriptedApple { _, _ in
            gate.pass()
            return .json(Self.tokenJSON)
        }
        defer {
            gate.open(4)
            apple.stop()
        }
        let client = apple.client
        let inFlight = Task { () async -> AppleEndpointError? in
            do throws(AppleEndpointError) {
                _ = try await client.teamAccessToken(clientID: "com.example.app")
                return nil
            } catch {
                return error
            }
        }
        #expect(await gate.entered())
        inFlight.cancel()
        let error = await inFlight.value
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("cancelled") == true)

        let early = Task { () async -> AppleEndpointError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(AppleEndpointError) {
                _ = try await client.teamAccessToken(clientID: "com.example.app")
                return nil
            } catch {
                return error
            }
        }
        let earlyError = await early.value
        #expect(earlyError?.message.contains("cancelled") == true)
        #expect(apple.probe.attempts == 1, "the request of a caller cancelled beforehand is never sent")
    }

    @Test(
        "Apple's answers are read strictly",
        arguments: [
            (400, #"{"error":"temporarily_unavailable"}"#, "temporarily_unavailable"),
            (401, #"{"error":"invalid_client"}"#, "invalid_client"),
            (400, #"{"error":"bad\ncode"}"#, "unavailable"),
            (404, "<html>not here</html>", "unavailable"),
            (200, #"{"access_token":"a","token_type":"BEARER","expires_in":3600}"#, "ok"),
            (200, #"{"access_token":"a","token_type":"mac","expires_in":3600}"#, "unavailable"),
            (200, #"{"access_token":"a","token_type":"bearer"}"#, "unavailable"),
            (200, #"{"access_token":"","token_type":"bearer","expires_in":3600}"#, "unavailable"),
            (200, "not json", "unavailable"),
        ]
    )
    func answers(status: Int, body: String, expected: String) async throws {
        let apple = try ScriptedApple { _, _ in .json(status: status, body) }
        defer { apple.stop() }
        let client = apple.client
        do {
            _ = try await client.teamAccessToken(clientID: "com.example.app")
            #expect(expected == "ok")
        } catch {
            #expect(error.code.rawValue == expected, "\(error)")
        }
    }

    @Test("the authorization-code answer must carry the refresh and identity tokens")
    func codeAnswerIsComplete() async throws {
        let apple = try ScriptedApple { _, _ in .json(Self.tokenJSON) }
        defer { apple.stop() }
        let client = apple.client
        let error = await appleError { () async throws(AppleEndpointError) in
            try await client.exchangeAuthorizationCode("c", clientID: "com.example.app")
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("refresh_token") == true)
    }

    @Test("requests are strictly form-encoded, with the bearer token only where Apple wants it")
    func requestShape() async throws {
        let seen = Mutex<[(String, String?, String?, [UInt8])]>([])
        let apple = try ScriptedApple { request, _ in
            seen.withLock {
                $0.append(
                    (
                        String(request.path), request.headers["Content-Type"], request.headers["Authorization"],
                        request.body
                    )
                )
            }
            return .json(#"{"transfer_sub":"ts-1"}"#)
        }
        defer { apple.stop() }
        let client = apple.client
        let transferSub = try await client.transferSub(
            forSub: "001.abc+/=.002",
            target: "TEAMBBBBB2",
            clientID: "com.example.app",
            accessToken: "tok-1"
        )
        #expect(transferSub == "ts-1")
        let (path, contentType, authorization, body) = try #require(seen.withLock { $0.first })
        #expect(path == "/auth/usermigrationinfo")
        #expect(contentType == "application/x-www-form-urlencoded")
        #expect(authorization == "Bearer tok-1")
        let form = try AppleFormBody.decode(body)
        #expect(form.map(\.name) == ["sub", "target", "client_id", "client_secret"])
        #expect(form[0].value == "001.abc+/=.002")
        #expect(String(decoding: body, as: UTF8.self).hasPrefix("sub=001.abc%2B%2F%3D.002&target=TEAMBBBBB2&"))
    }
}
