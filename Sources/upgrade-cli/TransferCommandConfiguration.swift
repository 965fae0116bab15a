import Foundation
import UpgradeAPI
import UpgradeEngine

/// The Apple configuration the transfer batches read from the environment (README, Configuration). Every
/// problem is one line naming the variable; nothing read here is ever printed except ids.
struct TransferCommandConfiguration {
    /// `APPLE_TEAM_ID`: the sender team while preparing, the recipient team when completing.
    var teamID: String
    var keyID: String
    var privateKey: P256PrivateKey
    /// `APPLE_CLIENT_IDS`; the first is the default `--client-id`.
    var clientIDs: [String]
    var baseURL: URL
    /// `APPLE_BASE_URL` is a loopback `http://` address: the emulator.
    var isEmulator: Bool

    static let defaultBaseURL = ServerSettings.appleProductionURL

    /// A configuration problem: one line naming the variable, exit 2, no usage text (the command
    /// line was fine).
    static func problem(_ message: String) -> CommandFailure {
        .configuration(message)
    }

    static func load(_ environment: [String: String]) throws -> TransferCommandConfiguration {
        func value(_ name: String) -> String? { ServerSettings.setting(name, in: environment) }
        func required(_ name: String, _ what: String) throws -> String {
            guard let value = value(name) else {
                throw Self.problem("\(name) is not set: \(what)")
            }
            return value
        }
        let teamID = try required(
            "APPLE_TEAM_ID",
            "the 10-character id (A-Z, 0-9) of the team whose key this deployment holds"
        )
        guard ClientSecretSigner.isAppleIdentifier(teamID) else {
            throw Self.problem("APPLE_TEAM_ID must be 10 characters A-Z or 0-9, as Apple issues team ids")
        }
        // The key id as `serve` takes it: `APPLE_KEY_ID`, or the file `APPLE_KEY_ID_FILE` that a key
        // rotation rewrites (README, Rotating the Apple key); not both.
        let keyID: String
        if let keyIDFile = value("APPLE_KEY_ID_FILE") {
            guard value("APPLE_KEY_ID") == nil else {
                throw Self.problem("APPLE_KEY_ID_FILE: give APPLE_KEY_ID or APPLE_KEY_ID_FILE, not both")
            }
            switch ServerSettings.readKeyID(path: keyIDFile) {
            case .success(let id): keyID = id
            case .failure(let problem): throw Self.problem(problem.message)
            }
        } else {
            keyID = try required(
                "APPLE_KEY_ID",
                "the 10-character id of the team's Sign in with Apple key (or APPLE_KEY_ID_FILE, a file holding it)"
            )
            guard ClientSecretSigner.isAppleIdentifier(keyID) else {
                throw Self.problem("APPLE_KEY_ID must be 10 characters A-Z or 0-9, as Apple issues key ids")
            }
        }
        let keyPath = try required("APPLE_PRIVATE_KEY_FILE", "the path of the team's key file (.p8, a PKCS#8 PEM)")
        let privateKey: P256PrivateKey
        switch ServerSettings.readPrivateKey(path: keyPath) {
        case .success(let key): privateKey = key
        case .failure(let problem): throw Self.problem(problem.message)
        }
        let clientList = try required(
            "APPLE_CLIENT_IDS",
            "a comma-separated list of bundle ids and Services ids; the first is the default --client-id"
        )
        let clientIDs = try Self.clientIDs(clientList)
        // The same rule and message as `serve`: https://, or http:// only to a loopback emulator.
        let urlText = value("APPLE_BASE_URL") ?? defaultBaseURL
        let url: URL
        switch ServerSettings.validateAppleBaseURL(urlText) {
        case .success(let valid): url = valid
        case .failure(let refusal): throw Self.problem(refusal.message)
        }
        return TransferCommandConfiguration(
            teamID: teamID,
            keyID: keyID,
            privateKey: privateKey,
            clientIDs: clientIDs,
            baseURL: url,
            isEmulator: url.scheme?.lowercased() == "http"
        )
    }

    /// `APPLE_CLIENT_IDS`' list, each a bundle id or Services id; anything else is one line, exit 2.
    static func clientIDs(_ list: String) throws -> [String] {
        let clientIDs = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !clientIDs.isEmpty, clientIDs.allSatisfy(ClientSecretSigner.isClientID) else {
            throw Self.problem(
                "APPLE_CLIENT_IDS must list bundle ids or Services ids separated by commas (printable ASCII, no spaces)"
            )
        }
        return clientIDs
    }

    /// `--client-id`, which must be one of ours, or the first of `APPLE_CLIENT_IDS`.
    func clientID(_ requested: String?) throws -> String {
        guard let requested else { return clientIDs[0] }
        guard clientIDs.contains(requested) else {
            throw UsageError(
                "--client-id \(requested) is not in APPLE_CLIENT_IDS (\(clientIDs.joined(separator: ",")))"
            )
        }
        return requested
    }
}

/// The one place the Apple client for team transfers is made: Apple (or the emulator behind a
/// loopback `APPLE_BASE_URL`) over the same libcurl transport the server uses, with an ES256 client
/// secret from the team's key. A configuration it cannot use is a one-line error, exit 2.
func makeAppleMigrationClient(_ configuration: TransferCommandConfiguration) throws -> any AppleUserMigrating {
    do {
        return try AppleClient(
            configuration: AppleClient.Configuration(
                baseURL: try AppleClient.BaseURL(configuration.baseURL.absoluteString),
                credentials: try AppleClient.Credentials(
                    teamID: configuration.teamID,
                    keyID: configuration.keyID,
                    privateKey: configuration.privateKey
                )
            )
        )
    } catch {
        throw TransferCommandConfiguration.problem("APPLE_BASE_URL or credentials: \(error)")
    }
}
