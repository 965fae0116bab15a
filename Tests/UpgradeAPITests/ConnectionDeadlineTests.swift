import Testing

@testable import HTTPCore
@testable import UpgradeAPI

/// `Connection.expiry`: which deadline has passed, from the connection's timestamps alone.
@Suite("Connection deadlines")
struct ConnectionDeadlineTests {
    /// Defaults: 5 s to the first byte, 10 s per request, 15 s keep-alive, 10 s write.
    let context = ServerContext(
        configuration: HTTPServer.Configuration(),
        handler: TestHandler(),
        pool: WorkerPool(handler: TestHandler(), queueCapacity: 1, maxQueueDelay: .seconds(1), onEvent: { _ in }),
        requestIDs: .random()
    )
    let accepted: UInt64 = 1_000_000_000_000
    let second: UInt64 = 1_000_000_000

    private func connection() -> Connection {
        Connection(
            fd: -1,
            id: 1,
            client: nil,
            clientKey: nil,
            denseIndex: 0,
            limits: HTTPRequestParser.Limits(),
            interest: 0,
            now: accepted
        )
    }

    @Test("each deadline expires when its time has passed, and not before")
    func deadlines() {
        let silent = connection()
        #expect(silent.expiry(at: accepted + 4 * second, context) == nil)
        #expect(silent.expiry(at: accepted + 5 * second, context) == .silentSinceAccept)

        let idle = connection()
        idle.awaitingFirstByte = false
        idle.requestStartedAt = nil
        #expect(idle.expiry(at: accepted + 14 * second, context) == nil)
        #expect(idle.expiry(at: accepted + 15 * second, context) == .idle)

        let stalled = connection()
        stalled.output = [1, 2, 3]
        stalled.writeBlockedSince = accepted
        #expect(stalled.expiry(at: accepted + 9 * second, context) == nil)
        #expect(stalled.expiry(at: accepted + 10 * second, context) == .writeStalled)
    }

    // A loop thread reads the clock, then may wait for the loop's lock while a worker holding it
    // delivers a response and stamps the connection with a later time. Subtracting with wrap-around
    // made that look like a deadline passed long ago, and the connection was closed under its client.
    @Test("a clock reading older than the connection's own timestamps finds no deadline passed")
    func olderClockReading() {
        let earlier = accepted - 1_000
        let silent = connection()
        #expect(silent.expiry(at: earlier, context) == nil)

        let idle = connection()
        idle.awaitingFirstByte = false
        idle.requestStartedAt = nil
        #expect(idle.expiry(at: earlier, context) == nil)

        let stalled = connection()
        stalled.output = [1, 2, 3]
        stalled.writeBlockedSince = accepted
        #expect(stalled.expiry(at: earlier, context) == nil)
    }
}
