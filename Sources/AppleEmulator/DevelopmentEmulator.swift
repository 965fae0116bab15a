import Foundation
import UpgradeAPI
import UpgradeEngine

/// Apple for `serve --dev` and `demo`: an Apple ID emulator in this process, served over HTTP on its
/// own loopback port, with `DevelopmentEnvironment`'s team, app and registered key, and the demo
/// Apple Account. Published and insecure by design; the banner says so.
public final class DevelopmentEmulator: DevelopmentApple {
    public let emulator: AppleIDEmulator
    public let privateKey: P256PrivateKey
    /// The emulator's id of the demo Apple Account (the device signs in as this user).
    public let appleUserID: String
    /// Apple's endpoints and the emulator's own, on loopback.
    public let emulatorServer: HTTPServer

    public init(
        clientIDs: [String],
        emulatorPort: Int,
        clock: @escaping @Sendable () -> Int64,
        log: @escaping @Sendable (String) -> Void
    ) throws {
        emulator = AppleIDEmulator(clock: clock)
        try emulator.addTeam(DevelopmentEnvironment.teamID)
        privateKey = P256PrivateKey()
        try emulator.registerKey(
            teamID: DevelopmentEnvironment.teamID,
            keyID: DevelopmentEnvironment.keyID,
            publicKey: privateKey.publicKey
        )
        for clientID in Set(clientIDs + [DevelopmentEnvironment.clientID]) {
            try emulator.addApp(clientID: clientID, teamID: DevelopmentEnvironment.teamID)
        }
        appleUserID = try emulator.createUser(email: DevelopmentEnvironment.demoAppleUserEmail, fullName: "Demo User")
        var handlerConfiguration = AppleIDEmulatorHandler.Configuration()
        handlerConfiguration.log = log
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = emulatorPort
        configuration.onEvent = { event in log("emulator: \(event)") }
        emulatorServer = HTTPServer(
            configuration: configuration,
            handler: AppleIDEmulatorHandler(emulator: emulator, configuration: handlerConfiguration)
        )
        try emulatorServer.start()
    }

    /// The emulator's base URL, what `APPLE_BASE_URL` would be.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(emulatorServer.port)")! }

    public func stop() {
        emulatorServer.shutdown()
        emulatorServer.wait()
    }
}
