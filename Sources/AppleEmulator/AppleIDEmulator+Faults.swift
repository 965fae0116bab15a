import UpgradeEngine

/// What tests need beyond Apple's protocol: answers Apple gives when it is throttling or down, on
/// demand, and a record of the tokens revoked.
extension AppleIDEmulator {
    /// The endpoints whose faults can be injected.
    public static let revokePath = "/auth/revoke"
    public static let tokenPath = "/auth/token"

    /// One token's revocations: who it was issued to and how many `/auth/revoke` calls for it were
    /// answered 200. `tokenSHA256` (hex) names the token without revealing it.
    public struct RevocationCount: Sendable, Equatable {
        public var tokenSHA256: String
        public var tokenType: String
        public var clientID: String
        public var userID: String?
        public var count: Int
    }

    /// The next `statuses.count` requests to `endpoint` answer these HTTP statuses (429 or 5xx),
    /// one each, in order, before the endpoint handles anything; appended to any still queued.
    public func injectFaults(_ statuses: [Int], endpoint: String) throws(AppleEmulatorError) {
        guard endpoint == Self.revokePath || endpoint == Self.tokenPath else {
            throw AppleEmulatorError(
                .notAllowed,
                "faults can be injected for \(Self.revokePath) and \(Self.tokenPath) only"
            )
        }
        guard !statuses.isEmpty, statuses.count <= 100,
            statuses.allSatisfy({ $0 == 429 || (500...599).contains($0) })
        else {
            throw AppleEmulatorError(.invalidIdentifier, "statuses must be 1 to 100 of 429 or 500-599")
        }
        state.withLock { $0.faults[endpoint, default: []] += statuses }
    }

    /// Injected faults not answered yet, per endpoint.
    public func pendingFaults(endpoint: String) -> [Int] {
        state.withLock { $0.faults[endpoint] ?? [] }
    }

    /// Drops the faults still queued for `endpoint` (a test whose client was killed before it used
    /// them all).
    public func clearFaults(endpoint: String) {
        _ = state.withLock { $0.faults.removeValue(forKey: endpoint) }
    }

    /// How many `/auth/revoke` calls for `token` were answered 200 (an unknown token: 0).
    public func revocationCount(token: String) -> Int {
        let key = EmulatorState.secretKey(token)
        return state.withLock { $0.revocations[key]?.count ?? 0 }
    }

    /// Every token revoked at least once, by its SHA-256.
    public func revocationCounts() -> [RevocationCount] {
        state.withLock { state in
            state.revocations.sorted { $0.key < $1.key }.map { key, revocation in
                RevocationCount(
                    tokenSHA256: key,
                    tokenType: revocation.tokenType,
                    clientID: revocation.clientID,
                    userID: revocation.userID,
                    count: revocation.count
                )
            }
        }
    }

    /// How many `grant_type=refresh_token` requests presented a refresh token of `userID` (with a
    /// client secret Apple accepted), whatever the answer.
    public func refreshChecks(userID: String) -> Int {
        refreshCheckTimes(userID: userID).count
    }

    /// When (the emulator's clock) those requests came, oldest first.
    public func refreshCheckTimes(userID: String) -> [Int64] {
        state.withLock { $0.refreshChecks[userID] ?? [] }
    }

    /// `refreshChecks(userID:)` of every user checked at least once.
    public func refreshChecks() -> [String: Int] {
        state.withLock { $0.refreshChecks.mapValues(\.count) }
    }

    /// Answers the next injected fault for `endpoint`, if there is one.
    func takeFault(_ endpoint: String) throws(AppleEndpointError) {
        let status = state.withLock { state -> Int? in
            guard var queued = state.faults[endpoint], !queued.isEmpty else { return nil }
            let status = queued.removeFirst()
            state.faults[endpoint] = queued.isEmpty ? nil : queued
            return status
        }
        if let status {
            throw AppleEndpointError(code: .unavailable, httpStatus: status, message: "injected fault: HTTP \(status)")
        }
    }
}
