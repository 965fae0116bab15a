import Foundation
import UpgradeAPI
import UpgradeEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `accounts delete USER`: deletes the account in one transaction (as `DELETE
/// /v1/admin/accounts/{username}` does), then sends its Apple revocation itself, a few times with
/// short waits. What it cannot send stays queued in the database for `serve`'s revocation worker (or
/// a rerun). Without `--yes` it asks for the username on a terminal and refuses otherwise, so a
/// script never deletes by accident.
struct AccountsDeleteCommand: CLICommand {
    static let path = ["accounts", "delete"]
    static let summary = "delete an account and revoke its Apple tokens (--yes, or confirm on a terminal)"
    static let usage = "upgrade-cli accounts delete USER [--yes] [--dev] [--db URL]"

    /// Attempts at the revocation in this run, and the waits between them.
    static let waits: [Duration] = [.seconds(1), .seconds(3)]

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let dev = arguments.flag("--dev")
        let location = try StoreOption.location(&arguments, dev: dev)
        let confirmed = arguments.flag("--yes")
        let typed = try arguments.positional("USER")
        try arguments.finish()
        let username: Username
        do {
            username = try Username(typed)
        } catch {
            throw CommandFailure("USER: \(error.message)", exitCode: ExitCode.usage)
        }
        // Everything is checked before the database is opened: bad configuration deletes nothing.
        let apple = try revocationClient(ProcessInfo.processInfo.environment)
        let secrets = try apple == nil ? nil : SecretKeyOption.load(dev: dev)
        if !confirmed {
            guard isatty(STDIN_FILENO) == 1 else {
                throw UsageError("refusing to delete without --yes: standard input is not a terminal to confirm on")
            }
            FileHandle.standardError.write(Data("type the username to delete '\(username)' and all of its data: ".utf8))
            guard readLine(strippingNewline: true).map({ (try? Username($0))?.value }) == username.value else {
                throw CommandFailure("not deleted: the username typed does not match")
            }
        }

        let store = try StoreOption.openMigrated(location)
        let deletion: AccountDeletion
        do {
            deletion = try AccountDeletionService(store: store).deleteAndRevoke(
                username: username.value,
                deletedBy: "cli",
                revocations: apple.flatMap { apple in
                    secrets.map { AppleRevocationSender(store: store, secrets: $0, apple: apple) }
                },
                waits: waits,
                clock: { Clock.nowSeconds }
            )
        } catch  where error.kind == .accountNotFound {
            throw CommandFailure("no account named '\(username)'")
        } catch {
            throw CommandFailure("not deleted: \(error.message)\(error.cause.map { " (\($0))" } ?? "")")
        }
        var line = "deleted account \(username) (id \(deletion.accountID)); appleRevocation: "
        guard let id = deletion.revocationID, let outcome = deletion.appleRevocation else {
            Console.out(line + "none")
            return ExitCode.success
        }
        guard apple != nil else {
            Console.out(
                line
                    + "pending (APPLE_TEAM_ID, APPLE_KEY_ID or APPLE_KEY_ID_FILE, and APPLE_PRIVATE_KEY_FILE are not set; serve's revocation worker will send it)"
            )
            return ExitCode.success
        }
        if let error = deletion.revocationError { throw CommandFailure(error) }
        line += outcome.rawValue
        if outcome == .pending {
            let reason = try store.read { try $0.appleRevocation(id: id)?.lastError } ?? "another sender holds it"
            line += " (\(reason); queued: serve's revocation worker or a rerun sends it)"
        }
        Console.out(line)
        return ExitCode.success
    }

    /// The `/auth/revoke` client from the environment, as `serve` reads it; nil when none of the
    /// team key's variables is set. One attempt per call with short timeouts: the retries are ours.
    static func revocationClient(_ environment: [String: String]) throws -> AppleClient? {
        let names = ["APPLE_TEAM_ID", "APPLE_KEY_ID", "APPLE_KEY_ID_FILE", "APPLE_PRIVATE_KEY_FILE"]
        guard names.contains(where: { ServerSettings.setting($0, in: environment) != nil }) else { return nil }
        let configuration = try TransferCommandConfiguration.load(environment)
        do {
            var client = AppleClient.Configuration(
                baseURL: try AppleClient.BaseURL(configuration.baseURL.absoluteString),
                credentials: try AppleClient.Credentials(
                    teamID: configuration.teamID,
                    keyID: configuration.keyID,
                    privateKey: configuration.privateKey
                )
            )
            client.connectTimeout = .seconds(3)
            client.requestTimeout = .seconds(5)
            client.retry.maximumAttempts = 1
            client.retry.totalTime = .seconds(5)
            return try AppleClient(configuration: client)
        } catch {
            throw TransferCommandConfiguration.problem("APPLE_BASE_URL or credentials: \(error)")
        }
    }
}
