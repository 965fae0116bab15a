import Foundation
import Synchronization
import Testing

@testable import UpgradeAPI
@testable import UpgradeEngine

/// A monotonic clock the test moves by hand.
final class ManualClock: Sendable {
    private let elapsed = Mutex<Duration>(.seconds(1000))

    var now: Duration { elapsed.withLock { $0 } }

    func advance(_ duration: Duration) {
        elapsed.withLock { $0 += duration }
    }
}

/// Switches a test flips from outside the server: `/auth/keys` fails with a 500 while `failing` is
/// set, and waits at `gate` while `gated` is set.
final class KeysSwitches: Sendable {
    let failing = Atomic<Bool>(false)
    let gated = Atomic<Bool>(false)
    let gate = HandlerGate()
}

struct KeysSwitchingHandler: HTTPHandler {
    let inner: any HTTPHandler
    let switches: KeysSwitches

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        if request.path == "/auth/keys" {
            if switches.failing.load(ordering: .relaxed) { return HTTPResponse(status: 500) }
            if switches.gated.load(ordering: .relaxed) { switches.gate.pass() }
        }
        return try inner.handle(request)
    }
}

@Suite("AppleIdentityTokenVerifier: identity tokens verified with Apple's keys, fetched over HTTP and cached")
struct AppleIdentityTokenVerifierTests {
    /// The emulator world, a key source over an `AppleClient` of it, and the hand-moved clock.
    final class Fixture {
        let world: EmulatorHTTPWorld
        let switches = KeysSwitches()
        let clock = ManualClock()
        let source: AppleIdentityTokenVerifier

        init(keysMaxAge: Int? = nil) throws {
            let switches = self.switches
            world = try EmulatorHTTPWorld(
                configure: { $0.keysMaxAge = keysMaxAge },
                wrap: { KeysSwitchingHandler(inner: $0, switches: switches) }
            )
            var configuration = AppleIdentityTokenVerifier.Configuration()
            let clock = self.clock
            configuration.clock = { clock.now }
            source = AppleIdentityTokenVerifier(
                fetcher: try world.client(),
                policy: try IdentityTokenPolicy(allowedAudiences: [EmulatorHTTPWorld.app]),
                configuration: configuration
            )
        }

        var fetches: Int { world.counter.count("/auth/keys") }

        func stop() {
            switches.gate.open(64)
            world.stop()
        }

        func token(nonce: String = "n-1") throws -> String {
            try world.authorize(nonce: nonce).identityToken
        }

        @discardableResult
        func verify(_ token: String, nonce: String = "n-1") async throws -> AppleIdentityClaims {
            try await source.verifyIdentityToken(token, nonce: .exact(nonce), now: world.clock.now)
        }

        /// `token` with its header's kid replaced (the signature no longer matters: the kid is looked up first).
        static func withKeyID(_ keyID: String, _ token: String) -> String {
            let header = Base64URL.encode(Array(#"{"kid":"\#(keyID)","alg":"RS256"}"#.utf8))
            return header + token.drop { $0 != "." }
        }
    }

    @Test("many verifications, one fetch")
    func caches() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        for index in 0..<5 {
            let claims = try await fixture.verify(try fixture.token(nonce: "n-\(index)"), nonce: "n-\(index)")
            #expect(claims.audience == EmulatorHTTPWorld.app)
        }
        #expect(fixture.fetches == 1)
    }

    @Test(
        "the set is kept for Cache-Control max-age, bounded to 60 s … 24 h (1 h without a header)",
        arguments: [(600, 599, 601), (0, 59, 61), (nil, 3599, 3601), (864_000, 86_399, 86_401)] as [(Int?, Int, Int)]
    )
    func honoursMaxAge(maxAge: Int?, stillCached: Int, refetched: Int) async throws {
        let fixture = try Fixture(keysMaxAge: maxAge)
        defer { fixture.stop() }
        let token = try fixture.token()
        try await fixture.verify(token)
        fixture.clock.advance(.seconds(stillCached))
        try await fixture.verify(token)
        #expect(fixture.fetches == 1)
        fixture.clock.advance(.seconds(refetched - stillCached))
        try await fixture.verify(token)
        #expect(fixture.fetches == 2)
    }

    @Test("after a key rotation the unknown kid causes one refetch, then the new token verifies")
    func rotation() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let old = try fixture.token()
        try await fixture.verify(old)
        let newKeyID = fixture.world.emulator.rotateSigningKey()
        let new = try fixture.token()
        #expect(new.hasPrefix(Base64URL.encode(Array(#"{"kid":"\#(newKeyID)""#.utf8)).dropLast(2)))
        try await fixture.verify(new)
        #expect(fixture.fetches == 2)
        try await fixture.verify(old)
        #expect(fixture.fetches == 2, "the old key is still published and cached")
    }

    @Test("a kid still unknown after the refetch is rejected; refetches are limited to one per minute")
    func unknownKeyIDRateLimited() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let token = try fixture.token()
        try await fixture.verify(token)
        let forged = Fixture.withKeyID("madeUpKid1", token)
        for expectedFetches in [2, 2, 2] {
            do {
                try await fixture.verify(forged)
                Issue.record("a token with an unknown kid verified")
            } catch let error as IdentityTokenError {
                #expect(error.code == .unknownKeyID)
                #expect(error.message.contains("madeUpKid1"))
            }
            #expect(fixture.fetches == expectedFetches)
        }
        fixture.clock.advance(.seconds(61))
        await #expect(throws: IdentityTokenError.self) { try await fixture.verify(forged) }
        #expect(fixture.fetches == 3, "a minute later one more refetch is allowed")
        try await fixture.verify(token)
        #expect(fixture.fetches == 3)
    }

    @Test("concurrent callers share one fetch")
    func sharesFetch() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        fixture.switches.gated.store(true, ordering: .relaxed)
        let tokens = try (0..<8).map { try fixture.token(nonce: "n-\($0)") }
        let source = fixture.source
        let now = fixture.world.clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, token) in tokens.enumerated() {
                group.addTask { _ = try await source.verifyIdentityToken(token, nonce: .exact("n-\(index)"), now: now) }
            }
            // Hold the first fetch until every caller has had time to ask for the keys too;
            // without sharing, each of them would start a fetch of its own here.
            #expect(await fixture.switches.gate.entered())
            try await Task.sleep(for: .milliseconds(300))
            fixture.switches.gate.open(8)
            try await group.waitForAll()
        }
        #expect(fixture.fetches == 1)
    }

    @Test("when a refetch fails, the cached keys keep being used")
    func keepsServingAfterFailedRefetch() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        let token = try fixture.token()
        try await fixture.verify(token)
        fixture.switches.failing.store(true, ordering: .relaxed)
        fixture.clock.advance(.seconds(3601))
        try await fixture.verify(token)
        #expect(fixture.fetches == 2, "the expired set was fetched again, and that failed")
        try await fixture.verify(token)
        #expect(fixture.fetches == 2, "after a failure, the next attempt waits a minute")
        fixture.switches.failing.store(false, ordering: .relaxed)
        fixture.clock.advance(.seconds(61))
        try await fixture.verify(token)
        #expect(fixture.fetches == 3)
    }

    @Test("with no keys at all and Apple failing, verification fails and says why")
    func noKeys() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        fixture.switches.failing.store(true, ordering: .relaxed)
        let token = try fixture.token()
        for _ in 0..<2 {
            do {
                try await fixture.verify(token)
                Issue.record("verified without keys")
            } catch let error as IdentityTokenError {
                #expect(error.code == .keysUnavailable)
                #expect(error.message.contains("not available"))
                #expect(error.message.contains("HTTP 500"))
            }
        }
        #expect(fixture.fetches == 1, "the second caller got the recent failure instead of a new fetch")
    }

    @Test("claims failures are the verifier's, unchanged (a wrong nonce is not a key problem)")
    func verifierErrorsPassThrough() async throws {
        let fixture = try Fixture()
        defer { fixture.stop() }
        do {
            try await fixture.verify(try fixture.token(nonce: "n-1"), nonce: "n-2")
            Issue.record("a wrong nonce verified")
        } catch let error as IdentityTokenError {
            #expect(error.code == .nonceMismatch)
        }
        #expect(fixture.fetches == 1)
    }
}
