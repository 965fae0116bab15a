import Foundation
import UpgradeEngine

/// Apple in development (`serve --dev`, `demo`): a stand-in on loopback holding
/// `DevelopmentEnvironment`'s team, key and app. UpgradeAPI contains none, so no server links one by
/// mistake: upgrade-cli passes AppleEmulator's `DevelopmentEmulator` (docs/architecture.md §2).
public protocol DevelopmentApple: AnyObject, Sendable {
    /// Starts it on `emulatorPort` (0: any free port), knowing `clientIDs` besides the development app.
    init(
        clientIDs: [String],
        emulatorPort: Int,
        clock: @escaping @Sendable () -> Int64,
        log: @escaping @Sendable (String) -> Void
    ) throws

    /// What `APPLE_BASE_URL` would be.
    var baseURL: URL { get }
    /// The private half of `DevelopmentEnvironment.keyID`.
    var privateKey: P256PrivateKey { get }

    func stop()
}

extension DevelopmentApple {
    /// The server's connections to it, through the same HTTPS client production uses.
    public func connections(audiences: Set<String>) throws -> AppleConnections {
        try AppleConnections(
            baseURL: baseURL,
            teamID: DevelopmentEnvironment.teamID,
            keyID: DevelopmentEnvironment.keyID,
            privateKey: privateKey,
            audiences: audiences.union([DevelopmentEnvironment.clientID])
        )
    }
}
