import AppleEmulator
import Foundation
import UpgradeAPI
import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `demo`: the whole upgrade over real HTTP on loopback against the development server and its
/// Apple ID emulator: password, TOTP step-up, Apple's sheet, credential, completed; then shows
/// that the password no longer works. Prints each transition.
struct DemoCommand: CLICommand {
    static let path = ["demo"]
    static let summary = "run the whole upgrade end to end over HTTP against the embedded emulator"
    static let usage = "upgrade-cli demo [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let database = try arguments.option("--db")
        var values = try ServeOptions.read(&arguments)
        try arguments.finish()
        // A fresh database per run unless one is named, so the demo always starts from a password account.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-demo-\(UUID().uuidString)")
        if let database {
            values["UPGRADE_DB"] = database
        } else {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            values["UPGRADE_DB"] = "sqlite:" + directory.appendingPathComponent("demo.db").path
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        values["UPGRADE_LISTEN"] = "127.0.0.1:0"
        values["UPGRADE_DEV_EMULATOR_PORT"] = "0"
        let settings: ServerSettings
        do {
            settings = try ServerSettings.load(values, development: true)
        } catch {
            throw ServeOptions.configuration(error)
        }
        let application = try ServeOptions.assemble(settings, log: RequestLog(write: { _ in }), shutdownSignals: [])
        try application.server.start()
        defer { application.stop() }
        guard let development = application.development as? DevelopmentEmulator else {
            throw CommandFailure("the demo needs the development environment")
        }
        let base = "http://127.0.0.1:\(application.server.port)"
        let client = BlockingJSONClient()
        Console.out(
            "server      \(base) (development mode; Apple is the emulator at \(development.baseURL.absoluteString))"
        )

        // 1. The extension hands the saved password to the server.
        let started = try client.post(
            "\(base)/v1/upgrades",
            [
                "username": DevelopmentEnvironment.demoUsername, "password": DevelopmentEnvironment.demoPassword,
                "serviceIdentifier": "example.com",
            ]
        )
        try show("POST /v1/upgrades", started)
        guard let id = started.json["id"] as? String, started.json["status"] as? String == "stepUpRequired" else {
            throw CommandFailure("expected stepUpRequired, got \(started.text)")
        }

        // 2. The user types the TOTP code.
        let code = TOTP.code(
            secret: Base32.decode(DevelopmentEnvironment.demoTOTPSecretBase32) ?? [],
            parameters: .standard,
            counter: UInt64(Date().timeIntervalSince1970) / 30
        )
        let stepped = try client.post("\(base)/v1/upgrades/\(id)/step-up", ["code": code])
        try show("POST /v1/upgrades/{id}/step-up", stepped)
        guard let state = stepped.json["state"] as? String, let nonce = stepped.json["nonce"] as? String else {
            throw CommandFailure("expected a state and nonce, got \(stepped.text)")
        }

        // 3. The system's Sign in with Apple sheet, with our state and nonce.
        let sheet = try client.post(
            "\(development.baseURL.absoluteString)/emulator/authorize",
            [
                "userId": development.appleUserID, "clientId": DevelopmentEnvironment.clientID, "nonce": nonce,
                "state": state,
                "emailMode": "hidden",
            ]
        )
        guard sheet.status == 200, let identityToken = sheet.json["identityToken"] as? String,
            let authorizationCode = sheet.json["authorizationCode"] as? String, let user = sheet.json["user"] as? String
        else { throw CommandFailure("the emulator's authorize failed: \(sheet.text)") }
        Console.out(
            "POST /emulator/authorize                   HTTP \(sheet.status)  Apple's sheet approved: token and code issued, state echoed"
        )

        // 4. The extension sends Apple's credential; the account is converted.
        let completed = try client.post(
            "\(base)/v1/upgrades/\(id)/apple-credential",
            [
                "identityToken": identityToken, "authorizationCode": authorizationCode,
                "state": sheet.json["state"] as? String ?? "", "user": user,
            ]
        )
        try show("POST /v1/upgrades/{id}/apple-credential", completed)
        guard completed.json["status"] as? String == "completed" else {
            throw CommandFailure("the upgrade did not complete")
        }

        // 5. The history, and proof the password is gone.
        let view = try client.get("\(base)/v1/upgrades/\(id)")
        for entry in view.json["history"] as? [[String: Any]] ?? [] {
            let problem = (entry["problem"] as? String).map { " (\($0))" } ?? ""
            Console.out(
                "history     \(entry["from"] as? String ?? "?") -> \(entry["to"] as? String ?? "?") on \(entry["event"] as? String ?? "?")\(problem)"
            )
        }
        let again = try client.post(
            "\(base)/v1/upgrades",
            [
                "username": DevelopmentEnvironment.demoUsername, "password": DevelopmentEnvironment.demoPassword,
                "serviceIdentifier": "example.com",
            ]
        )
        try show("POST /v1/upgrades (old password)", again, expectFailure: true)
        guard again.status == 401 else { throw CommandFailure("the old password still works") }
        Console.out("done        account converted to Sign in with Apple; its password is deleted")
        return ExitCode.success
    }

    private static func show(
        _ call: String,
        _ response: BlockingJSONClient.Response,
        expectFailure: Bool = false
    ) throws {
        let status = response.json["status"].map { "\($0)" } ?? "-"
        let result = response.json["result"] as? String ?? "-"
        let type = (response.json["type"] as? String)?.split(separator: "/").last.map(String.init)
        var line = "\(call.padding(toLength: 42, withPad: " ", startingAt: 0)) HTTP \(response.status)  "
        line += type.map { "problem \($0), result \(result)" } ?? "status \(status), result \(result)"
        Console.out(line)
        if !expectFailure, response.status >= 400 { throw CommandFailure("\(call) failed: \(response.text)") }
    }
}
