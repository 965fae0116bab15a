import Foundation
import UpgradeAPI
import UpgradeEngine

/// The secret box for TOTP secrets and refresh tokens, chosen as `serve` chooses it:
/// `UPGRADE_SECRET_KEY_FILE` whenever it is set, `--dev` or not (a value sealed under the published
/// development key in a database that `serve` opens with the key file could never be opened again),
/// else the development key only when `--dev` was given explicitly. A problem is a configuration
/// error: one line, exit 2, no usage text.
enum SecretKeyOption {
    /// `UPGRADE_SECRET_KEY_FILE` as `serve` reads it: surrounding blanks dropped, blank is unset.
    static var keyFile: String? {
        ServerSettings.setting(SecretKeyFile.environmentVariable, in: ProcessInfo.processInfo.environment)
    }

    /// The box for a command that needs one only when a key is configured: nil without
    /// `UPGRADE_SECRET_KEY_FILE` and without `--dev`.
    static func loadIfConfigured(dev: Bool) throws -> SecretBox? {
        dev || keyFile != nil ? try load(dev: dev) : nil
    }

    static func load(dev: Bool) throws -> SecretBox {
        let path = keyFile
        if dev && path == nil { return SecretBox.developmentOnly() }
        do {
            return try SecretKeyFile.load(environment: path.map { [SecretKeyFile.environmentVariable: $0] } ?? [:])
        } catch {
            throw CommandFailure.configuration(
                dev ? error.message : "\(error.message) (or pass --dev to use the insecure development key)"
            )
        }
    }
}

struct AccountsAddCommand: CLICommand {
    static let path = ["accounts", "add"]
    static let summary = "create a password account (password on stdin), optionally with TOTP"
    static let usage =
        "upgrade-cli accounts add USER [--totp-uri URI | --totp-uri-file FILE] [--recovery-codes N] [--dev] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let dev = arguments.flag("--dev")
        let location = try StoreOption.location(&arguments, dev: dev)
        let inlineURI = try arguments.option("--totp-uri")
        let uriFile = try arguments.option("--totp-uri-file")
        let recoveryCount = try arguments.intOption("--recovery-codes") ?? 0
        let username = try arguments.positional("USER")
        try arguments.finish()

        guard inlineURI == nil || uriFile == nil else {
            throw UsageError("give --totp-uri or --totp-uri-file, not both")
        }
        let maximumRecoveryCodes = AccountCreationService.Request.maximumRecoveryCodes
        guard (0...maximumRecoveryCodes).contains(recoveryCount) else {
            throw UsageError("--recovery-codes must be between 0 and \(maximumRecoveryCodes)")
        }
        let enforced: Username
        do {
            enforced = try Username(username)
        } catch {
            throw CommandFailure("USER: \(error.message)", exitCode: ExitCode.usage)
        }

        // Everything is validated before the database is opened, so bad input changes nothing.
        var totp: OTPAuthURI?
        if let text = try inlineURI ?? uriFile.map(readURIFile) {
            do {
                totp = try OTPAuthURI.parse(text)
            } catch {
                throw UsageError("--totp-uri: \(error.message)")
            }
        }
        let secrets = try totp == nil ? nil : SecretKeyOption.load(dev: dev)
        let request: AccountCreationService.Request
        do {
            request = try AccountCreationService.Request(
                username: enforced,
                password: Console.readSecretFromStdin(),
                totp: totp,
                recoveryCodes: recoveryCount
            )
        } catch .emptyPassword {
            throw UsageError("the password is read from standard input and was empty")
        } catch .passwordTooLong {
            throw UsageError("the password is longer than \(AccountCreationService.Request.maximumPasswordBytes) bytes")
        } catch {
            throw UsageError("--recovery-codes must be between 0 and \(maximumRecoveryCodes)")
        }

        let store = try StoreOption.openMigrated(location)
        let created: AccountCreationService.Created
        do {
            created = try AccountCreationService(store: store, secrets: secrets).create(request, now: Clock.nowSeconds)
        } catch AccountCreationError.usernameTaken {
            throw CommandFailure("an account named '\(enforced)' already exists", exitCode: ExitCode.failure)
        } catch AccountCreationError.lookAlike(let other) {
            // Named here, where only an operator reads it.
            throw CommandFailure(
                "'\(UsernameCheck.escaped(enforced.value))' looks like "
                    + (other.map {
                        "the existing account '\(UsernameCheck.escaped($0.username))' (id \($0.id)): their confusable "
                            + "skeletons (UTS #39) are equal; choose another username"
                    } ?? "another account's username (UTS #39)"),
                exitCode: ExitCode.failure
            )
        }
        Console.out(
            "added account \(enforced) (id \(created.account.id)): password (argon2id)\(totp.map { ", TOTP \($0.parameters.algorithm.rawValue)/\($0.parameters.digits) digits" } ?? "")"
        )
        if !created.recoveryCodes.isEmpty {
            Console.out("recovery codes (shown once; store them now):")
            for code in created.recoveryCodes { Console.out("  \(code)") }
        }
        return ExitCode.success
    }

    private static func readURIFile(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("--totp-uri-file: cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

struct AccountsShowCommand: CLICommand {
    static let path = ["accounts", "show"]
    static let summary = "show an account, its credential state, open upgrades and audit trail (no secrets)"
    static let usage = "upgrade-cli accounts show USER [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let typed = try arguments.positional("USER")
        try arguments.finish()
        let username: Username
        do {
            username = try Username(typed)
        } catch {
            throw CommandFailure("USER: \(error.message)", exitCode: ExitCode.usage)
        }
        let store = try StoreOption.openMigrated(location)
        // The same gathering as GET /v1/admin/accounts/{username}, with a longer trail.
        guard let snapshot = try store.read({ try AccountOverview.read(username: username, events: 500, in: $0) })
        else {
            throw CommandFailure("no account named '\(username)'")
        }
        let time = ISO8601DateFormatter()
        func when(_ seconds: Int64) -> String { time.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))) }

        let account = snapshot.account
        Console.out("account      \(account.username) (id \(account.id))")
        Console.out("created      \(when(account.createdAt))")
        Console.out("credential   \(account.credentialKind.rawValue)")
        // Where a value came from: an import, or the device forwarding Apple's first authorization.
        func from(_ source: ProfileSource?) -> String {
            switch source {
            case .device?: " (given by the device)"
            case .import?: " (imported)"
            case nil: ""
            }
        }
        if let email = snapshot.email { Console.out("email        \(email)\(from(snapshot.emailSource))") }
        if let name = snapshot.displayName {
            Console.out("display name \(name)\(from(snapshot.displayNameSource))")
        }
        if let fullName = snapshot.fullName {
            Console.out("full name    \(fullName.json.serializedString) (given by the device)")
        }
        if let status = snapshot.realUserStatus {
            Console.out("real user    \(status.name) (\(status.rawValue), Apple's real_user_status)")
        }
        let password = snapshot.password.map { password in
            password.format == PasswordCredentialRecord.legacyFormat
                ? "legacy (checked by the legacy login system at the first sign-in; no hash yet)"
                : "set (\(password.format))"
        }
        Console.out("password     \(password ?? "none")")
        Console.out(
            "totp         \(snapshot.totp.map { "enrolled (\($0.algorithm.rawValue), \($0.digits) digits)" } ?? "none")"
        )
        Console.out("recovery     \(snapshot.recoveryCodesLeft) unused code(s)")
        if let link = snapshot.apple {
            Console.out(
                "apple        \(link.status.rawValue): sub \(link.sub), team \(link.teamID), client \(link.clientID)"
            )
            if let email = link.email {
                Console.out("apple email  \(email)\(link.isPrivateEmail == true ? " (private relay)" : "")")
            }
            Console.out("refresh      \(link.hasRefreshToken ? "stored (encrypted)" : "none")")
            Console.out("apple state  \(link.credentialState?.name ?? "unknown (the stored transfer cannot be read)")")
        } else {
            Console.out("apple        not linked")
        }
        for earlier in snapshot.earlierTransfers {
            Console.out(
                "transfer     \(earlier.status) to team \(earlier.targetTeamID), earlier (retired \(when(earlier.retiredAt ?? 0)))"
            )
        }
        if let transfer = snapshot.transfer {
            Console.out(
                "transfer     \(transfer.status) to team \(transfer.targetTeamID)\(transfer.failureReason.map { " (\($0))" } ?? "")"
            )
        }
        for upgrade in snapshot.openUpgrades {
            Console.out("upgrade      \(upgrade.id) \(upgrade.status), expires \(when(upgrade.expiresAt))")
        }
        // The latest events, printed oldest first like a log.
        Console.out("audit trail  \(snapshot.lastEvents.count) event(s)")
        for event in snapshot.lastEvents.reversed() {
            var line = "  \(when(event.at))  \(event.event)"
            if let from = event.fromStatus, let to = event.toStatus { line += "  \(from) -> \(to)" }
            if !event.detail.isEmpty {
                line +=
                    "  "
                    + event.detail.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            }
            Console.out(line)
        }
        return ExitCode.success
    }
}
