import Foundation
import UpgradeEngine

/// `serve --dev` and `demo`: an Apple ID emulator in this process, served over HTTP on its own
/// loopback port, with one team, one app and one registered key; and a demo account with a password
/// and TOTP. Everything here is published and insecure by design; the banner says so.
public final class DevelopmentEnvironment: Sendable {
    public static let teamID = "DEVTEAM001"
    public static let keyID = "DEVKEY0001"
    public static let clientID = "com.example.siwa-upgrade"
    public static let demoUsername = "demo"
    public static let demoPassword = "demo-password"
    /// The demo account's TOTP secret (RFC 6238's SHA-1 seed), so codes can be made with
    /// `oathtool --totp --base32 GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ`.
    public static let demoTOTPSecretBase32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    public static let demoAppleUserEmail = "demo@example.com"

    public let emulator: AppleIDEmulator
    public let privateKey: P256PrivateKey
    /// The emulator's id of the demo Apple Account (the device signs in as this user).
    public let appleUserID: String
    /// Apple's endpoints and the emulator's own, on loopback.
    public let emulatorServer: HTTPServer

    public init(
        clientIDs: [String],
        emulatorPort: Int,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        emulator = AppleIDEmulator(clock: clock)
        try emulator.addTeam(Self.teamID)
        privateKey = P256PrivateKey()
        try emulator.registerKey(teamID: Self.teamID, keyID: Self.keyID, publicKey: privateKey.publicKey)
        for clientID in Set(clientIDs + [Self.clientID]) {
            try emulator.addApp(clientID: clientID, teamID: Self.teamID)
        }
        appleUserID = try emulator.createUser(email: Self.demoAppleUserEmail, fullName: "Demo User")
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

    /// The server's connections to the emulator, through the same HTTPS client production uses.
    public func connections(audiences: Set<String>) throws -> AppleConnections {
        try AppleConnections(
            baseURL: baseURL,
            teamID: Self.teamID,
            keyID: Self.keyID,
            privateKey: privateKey,
            audiences: audiences.union([Self.clientID])
        )
    }

    /// Creates the demo account if it does not exist (password, TOTP, sealed with `secrets`).
    /// Returns whether it was created now.
    @discardableResult
    public static func ensureDemoAccount(store: any UpgradeStore, secrets: SecretBox, now: Int64) throws -> Bool {
        let request = try AccountCreationService.Request(
            username: Username(demoUsername),
            password: demoPassword,
            totp: OTPAuthURI(
                secret: Base32.decode(demoTOTPSecretBase32) ?? [],
                parameters: .standard,
                issuer: nil,
                accountName: nil
            ),
            origin: "dev"
        )
        do {
            _ = try AccountCreationService(store: store, secrets: secrets).create(request, now: now)
            return true
        } catch AccountCreationError.usernameTaken {
            return false
        }
    }

    public static let banner = """
        ************************************************************************
        *  DEVELOPMENT MODE - NOT FOR PRODUCTION                               *
        *  Apple is an emulator on loopback; secrets use a published dev key;  *
        *  the demo account's password and TOTP seed are public.               *
        ************************************************************************
        """
}
