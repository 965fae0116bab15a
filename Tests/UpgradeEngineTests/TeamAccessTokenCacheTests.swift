import Foundation
import Testing

@testable import UpgradeEngine

@Suite("The batch's team access token")
struct TeamAccessTokenCacheTests {
    @Test("once fetched, rows read the token without asking the cache's actor; invalidating drops that generation only")
    func cachedToken() async throws {
        let world = try TransferWorld()
        let cache = TeamAccessTokenCache(
            apple: world.appleA,
            clientID: TransferWorld.clientID,
            retry: AppleRetry(TransferWorld.options())
        )
        #expect(cache.cachedToken() == nil, "nothing before the first fetch")
        let first = try await cache.token()
        let cached = try #require(cache.cachedToken())
        #expect(cached == first)
        #expect(world.appleA.count(.teamAccessToken) == 1)

        await cache.invalidate(generation: first.generation)
        #expect(cache.cachedToken() == nil, "a refused token is not handed out again")
        let second = try await cache.token()
        #expect(second.generation == first.generation + 1 && second.token != first.token)
        #expect(world.appleA.count(.teamAccessToken) == 2)

        await cache.invalidate(generation: first.generation)
        let kept = try #require(cache.cachedToken(), "a newer token outlives refusals of the older one")
        #expect(kept == second)
    }
}
