import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What Apple gives the device only once (`email`, `fullName`) and the token's `real_user_status`,
/// over HTTP on loopback with signed webhooks: kept where the account has none, marked as the
/// device's, shown by the admin overview, `accounts show` and `account.converted`; never replacing
/// what an account has, never written to another account; refused with a 422 naming the field.
@Suite("REST API end to end: the server keeps what Apple gives once")
struct DeviceGivenProfileEndToEndTests {
    final class Harness: Sendable {
        let receiver: WebhookReceiver
        let server: DevServer
        let supportToken: String

        init(_ backend: Backend) throws {
            (receiver, server, supportToken) = try WebhookReceiver.withServer(backend)
        }

        deinit { receiver.stop() }

        var store: any UpgradeStore { server.application.store }

        func accountID(_ username: String) throws -> String {
            try #require(try store.read { try $0.account(username: Username(username))?.id })
        }

        func profile(_ username: String) throws -> AccountProfileRecord? {
            let id = try accountID(username)
            return try store.read { try $0.accountProfile(accountID: id) }
        }

        /// A new Apple Account in the emulator, not yet authorized for the app.
        func appleUser(_ email: String, realUserStatus: Int = 2) throws -> String {
            try server.development.emulator.createUser(email: email, realUserStatus: realUserStatus)
        }

        /// An upgrade of a new password account, up to Apple's sheet.
        func start(_ username: String) async throws -> DevServer.Response {
            try server.addAccount(username, password: "pw-\(username)")
            let started = try await server.post(
                "/v1/upgrades",
                ["username": username, "password": "pw-\(username)", "serviceIdentifier": "s"]
            )
            #expect(started["status"] == "awaitingAppleCredential")
            return started
        }

        /// The device's part: Apple's sheet for `userID`, and what the app forwards of the credential,
        /// with `extra` members (`email`, `fullName`) added.
        func credential(
            for started: DevServer.Response,
            userID: String,
            _ extra: [String: any Sendable] = [:]
        ) throws -> [String: any Sendable] {
            try server.appleCredential(for: started, userID: userID).merging(extra) { _, given in given }
        }

        func overview(_ username: String) async throws -> [String: Any] {
            let answer = try await server.send(
                "GET",
                "/v1/admin/accounts/\(username)",
                body: nil,
                contentType: nil,
                headers: ["Authorization": "Bearer \(supportToken)"]
            )
            #expect(answer.status == 200)
            return answer.json
        }

        /// The `data` of the event of `type` (`account.converted` unless told) the receiver verified
        /// for `accountID`.
        func deliveredEvent(_ accountID: String, type: String = "account.converted") async throws -> [String: Any] {
            func find() -> [String: Any]? {
                let lines = FileManager.default.contents(atPath: receiver.record).map {
                    String(decoding: $0, as: UTF8.self).split(separator: "\n")
                }
                for line in lines ?? [] {
                    guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        record["type"] as? String == type, record["accountId"] as? String == accountID,
                        let body = record["body"] as? String,
                        let event = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
                    else { continue }
                    return event["data"] as? [String: Any]
                }
                return nil
            }
            #expect(await WebhookReceiver.eventually { find() != nil })
            return try #require(find())
        }
    }

    static let adaName: [String: any Sendable] = [
        "givenName": "Ada", "familyName": "Lovelace", "nickname": "Countess", "middleName": NSNull(),
    ]

    @Test(
        "the first authorization's fullName and email: the overview, accounts show and account.converted carry them, marked as the device's",
        arguments: Backend.all
    )
    func firstAuthorizationKept(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let ada = try harness.appleUser("ada@example.com")
        let started = try await harness.start("ada")
        let id = try #require(started["id"])
        let completed = try await server.post(
            "/v1/upgrades/\(id)/apple-credential",
            try harness.credential(
                for: started,
                userID: ada,
                ["email": "ada.relay@privaterelay.appleid.com", "fullName": Self.adaName]
            )
        )
        #expect(completed.status == 200 && completed["status"] == "completed")

        let overview = try await harness.overview("ada")
        #expect(overview["displayName"] as? String == "Ada Lovelace")
        #expect(overview["displayNameSource"] as? String == "device")
        #expect(overview["email"] as? String == "ada.relay@privaterelay.appleid.com")
        #expect(overview["emailSource"] as? String == "device")
        #expect(
            overview["fullName"] as? [String: String]
                == ["givenName": "Ada", "familyName": "Lovelace", "nickname": "Countess"]
        )
        #expect(overview["realUserStatus"] as? String == "likelyReal")

        let data = try await harness.deliveredEvent(try harness.accountID("ada"))
        #expect(data["displayName"] as? String == "Ada Lovelace")
        #expect(data["displayNameSource"] as? String == "device")
        #expect(data["email"] as? String == "ada.relay@privaterelay.appleid.com")
        #expect(data["emailSource"] as? String == "device")
        #expect(
            data["fullName"] as? [String: String]
                == ["givenName": "Ada", "familyName": "Lovelace", "nickname": "Countess"]
        )
        #expect(data["realUserStatus"] as? String == "likelyReal")
        #expect(data["username"] as? String == "ada" && data["upgradeId"] as? String == id)

        // The audit row says which fields the device filled, never their values.
        let trail = try harness.store.read { try $0.auditTrail(accountID: harness.accountID("ada"), limit: 50) }
        let converted = try #require(trail.first { $0.event == "account.convertedToApple" })
        #expect(converted.detail["profileFilled"] == "email,displayName,fullName,realUserStatus")
        #expect(!trail.map { "\($0.detail)" }.joined().contains("Lovelace"))

        let shown = try WebhookEndToEndTests.cli(server, ["accounts", "show", "ada"])
        #expect(shown.status == 0, "\(shown.err)")
        #expect(shown.out.contains("display name Ada Lovelace (given by the device)"))
        #expect(shown.out.contains("email        ada.relay@privaterelay.appleid.com (given by the device)"))
        #expect(shown.out.contains(#"full name    {"givenName":"Ada","familyName":"Lovelace","nickname":"Countess"}"#))
        #expect(shown.out.contains("real user    likelyReal (2, Apple's real_user_status)"))
    }

    @Test(
        "an imported display name stays; only the missing email and the name's parts come from the device",
        arguments: Backend.all
    )
    func importedValuesKept(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let hash = try PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1)).hash(password: "pw-imp")
        let line = try JSONSerialization.data(withJSONObject: [
            "username": "imp", "passwordHash": hash, "displayName": "Imported Name",
        ])
        var reader = ImportReader(bytes: Array(line) + [10], format: .jsonl)
        let summary = try AccountImporter(
            store: harness.store,
            options: AccountImportOptions(runID: "device-given", source: "test.jsonl (jsonl)")
        ).run(&reader, now: { [server] in server.clock.now }, onRow: { _ in })
        #expect(summary.created == 1)
        #expect(try harness.profile("imp")?.displayNameSource == .import)

        let user = try harness.appleUser("imp@example.com", realUserStatus: 1)
        let started = try await server.post(
            "/v1/upgrades",
            ["username": "imp", "password": "pw-imp", "serviceIdentifier": "s"]
        )
        let completed = try await server.post(
            "/v1/upgrades/\(try #require(started["id"]))/apple-credential",
            try harness.credential(
                for: started,
                userID: user,
                ["email": "imp@example.com", "fullName": ["givenName": "Device", "familyName": "Name"]]
            )
        )
        #expect(completed["status"] == "completed")
        let overview = try await harness.overview("imp")
        #expect(overview["displayName"] as? String == "Imported Name")
        #expect(overview["displayNameSource"] as? String == "import")
        #expect(overview["email"] as? String == "imp@example.com")
        #expect(overview["emailSource"] as? String == "device")
        #expect(overview["fullName"] as? [String: String] == ["givenName": "Device", "familyName": "Name"])
        #expect(overview["realUserStatus"] as? String == "unknown")
        let data = try await harness.deliveredEvent(try harness.accountID("imp"))
        #expect(data["displayName"] as? String == "Imported Name" && data["displayNameSource"] as? String == "import")
    }

    @Test(
        "a second upgrade of another account never writes the first's values, not even with the first's Apple ID",
        arguments: Backend.all
    )
    func otherAccountsUntouched(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let ada = try harness.appleUser("ada@example.com")
        let adaStarted = try await harness.start("ada")
        let adaDone = try await server.post(
            "/v1/upgrades/\(try #require(adaStarted["id"]))/apple-credential",
            try harness.credential(
                for: adaStarted,
                userID: ada,
                ["email": "ada@example.com", "fullName": Self.adaName]
            )
        )
        #expect(adaDone["status"] == "completed")
        let adaProfile = try #require(try harness.profile("ada"))

        // Another account, another Apple ID, its own first authorization.
        let bob = try harness.appleUser("bob@example.com", realUserStatus: 0)
        let bobStarted = try await harness.start("bob")
        let bobDone = try await server.post(
            "/v1/upgrades/\(try #require(bobStarted["id"]))/apple-credential",
            try harness.credential(
                for: bobStarted,
                userID: bob,
                ["email": "bob@example.com", "fullName": ["givenName": "Bob", "familyName": "Builder"]]
            )
        )
        #expect(bobDone["status"] == "completed")
        #expect(try harness.profile("ada") == adaProfile)
        let bobProfile = try #require(try harness.profile("bob"))
        #expect(bobProfile.displayName == "Bob Builder" && bobProfile.email == "bob@example.com")
        #expect(bobProfile.realUserStatus == .unsupported)

        // A third account presents ada's Apple ID with a name of its choosing: refused as a
        // sub-conflict, and neither ada's profile nor its own holds the name.
        let maloryStarted = try await harness.start("mallory")
        let conflict = try await server.post(
            "/v1/upgrades/\(try #require(maloryStarted["id"]))/apple-credential",
            try harness.credential(
                for: maloryStarted,
                userID: ada,
                ["email": "mallory@example.com", "fullName": ["givenName": "Mallory", "familyName": "Taken"]]
            )
        )
        #expect(conflict.status == 409 && conflict.problem == "sub-conflict")
        #expect(try harness.profile("ada") == adaProfile)
        #expect(try harness.profile("mallory") == nil)
        let overview = try await harness.overview("ada")
        #expect(
            overview["displayName"] as? String == "Ada Lovelace" && overview["email"] as? String == "ada@example.com"
        )
    }

    /// Bad `email` and `fullName` values, the field the 422 must name, and a value it must not echo.
    static let refusals: [(String, any Sendable, String)] = [
        ("fullName", ["givenName": "Ada", "title": "Dr."], "fullName.title"),
        ("fullName", "Ada Lovelace", "fullName"),
        ("fullName", ["givenName": 42], "fullName.givenName"),
        ("fullName", ["givenName": ["Ada"]], "fullName.givenName"),
        ("fullName", ["familyName": String(repeating: "Lovelace", count: 33)], "fullName.familyName"),
        ("fullName", ["givenName": "Ada\u{202E}ecalevoL"], "fullName.givenName"),
        ("fullName", ["nickname": "Ada\u{0007}"], "fullName.nickname"),
        (
            "fullName",
            [
                "givenName": String(repeating: "G", count: 128), "familyName": String(repeating: "F", count: 128),
            ],
            "fullName"
        ),
        ("email", "ada.example.com", "email"),
        ("email", "ada @example.com", "email"),
        ("email", String(repeating: "a", count: 320) + "@example.com", "email"),
        ("email", 7, "email"),
    ]

    @Test(
        "bad email and fullName values are 422s naming the field, change nothing, and the upgrade goes on",
        arguments: Backend.all
    )
    func boundsRefused(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let ada = try harness.appleUser("ada@example.com")
        let started = try await harness.start("ada")
        let id = try #require(started["id"])
        let credential = try harness.credential(for: started, userID: ada)
        for (field, value, named) in Self.refusals {
            let refused = try await server.post(
                "/v1/upgrades/\(id)/apple-credential",
                credential.merging([field: value]) { _, given in given }
            )
            let body = String(decoding: refused.body, as: UTF8.self)
            #expect(refused.status == 422 && refused.problem == "validation", "\(named): \(body)")
            #expect(refused["detail"]?.contains("'\(named)'") == true, "\(named): \(body)")
            // Neither the value (personal data) nor any credential is echoed.
            for secret in [credential["identityToken"], credential["authorizationCode"], credential["state"]] {
                #expect(!body.contains(try #require(secret as? String)))
            }
            #expect(!body.contains("Lovelace") && !body.contains("ecalevoL") && !body.contains("ada.example.com"))
        }
        #expect(try harness.profile("ada") == nil)
        let view = try await server.get("/v1/upgrades/\(id)")
        #expect(view["status"] == "awaitingAppleCredential")
        // Empty values count as absent; the same credential still completes the upgrade.
        let completed = try await server.post(
            "/v1/upgrades/\(id)/apple-credential",
            credential.merging([
                "email": "", "fullName": ["givenName": " ", "familyName": NSNull()] as [String: any Sendable],
            ]) { _, given in given }
        )
        #expect(completed.status == 200 && completed["status"] == "completed")
        #expect(try harness.profile("ada")?.email == nil && harness.profile("ada")?.displayName == nil)
        #expect(try harness.profile("ada")?.realUserStatus == .likelyReal)
    }

    @Test(
        "sign-in keeps what the device forwards where the account has none, refuses bad values before spending the nonce",
        arguments: Backend.all
    )
    func signInKeeps(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let sam = try harness.appleUser("sam@example.com", realUserStatus: 0)
        let started = try await harness.start("sam")
        // The upgrade forwarded nothing: only the token's real_user_status is kept.
        let completed = try await server.post(
            "/v1/upgrades/\(try #require(started["id"]))/apple-credential",
            try harness.credential(for: started, userID: sam)
        )
        #expect(completed["status"] == "completed")
        #expect(try harness.profile("sam")?.realUserStatus == .unsupported)
        #expect(try harness.profile("sam")?.displayName == nil)

        func token() async throws -> String {
            try server.development.emulator.authorize(
                userID: sam,
                clientID: DevelopmentEnvironment.clientID,
                nonce: try await server.signInNonce(),
                state: nil,
                emailMode: .hidden
            ).identityToken
        }
        let first = try await token()
        let refused = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": first, "fullName": ["givenName": "Sam", "surname": "x"]]
        )
        #expect(refused.status == 422 && refused["detail"]?.contains("'fullName.surname'") == true)
        let tooLong = try await server.post(
            "/v1/apple/sign-in",
            ["identityToken": first, "email": "sam@" + String(repeating: "e", count: 320)]
        )
        #expect(tooLong.status == 422 && tooLong["detail"]?.contains("'email'") == true)
        // Nothing was spent: the same token signs in, and what it forwards is kept.
        let signedIn = try await server.post(
            "/v1/apple/sign-in",
            [
                "identityToken": first, "email": "sam.contact@example.com",
                "fullName": ["givenName": "Sam", "familyName": "Signin"],
            ]
        )
        #expect(signedIn.status == 200, "\(String(decoding: signedIn.body, as: UTF8.self))")
        let profile = try #require(try harness.profile("sam"))
        #expect(profile.displayName == "Sam Signin" && profile.displayNameSource == .device)
        #expect(profile.email == "sam.contact@example.com" && profile.emailSource == .device)

        // The backend, told of the conversion with no name or email, learns them: a signed
        // account.profile-filled naming the fields filled, with the profile in account.converted's shape.
        let samID = try harness.accountID("sam")
        let filled = try await harness.deliveredEvent(samID, type: "account.profile-filled")
        #expect(filled["accountId"] as? String == samID && filled["sub"] as? String == signedIn["sub"])
        #expect(filled["fields"] as? [String] == ["email", "displayName", "fullName"])
        #expect(filled["displayName"] as? String == "Sam Signin" && filled["displayNameSource"] as? String == "device")
        #expect(filled["email"] as? String == "sam.contact@example.com" && filled["emailSource"] as? String == "device")
        #expect(filled["fullName"] as? [String: String] == ["givenName": "Sam", "familyName": "Signin"])
        #expect(filled["realUserStatus"] as? String == "unsupported")
        let converted = try await harness.deliveredEvent(samID)
        #expect(converted["email"] is NSNull && converted["displayName"] is NSNull)
        #expect(
            Set(filled.keys).subtracting(["fields"]) == Set(converted.keys).subtracting(["username", "upgradeId"])
        )

        // A later sign-in forwarding something else changes nothing.
        let again = try await server.post(
            "/v1/apple/sign-in",
            [
                "identityToken": try await token(), "email": "other@example.com",
                "fullName": ["givenName": "Someone", "familyName": "Else"],
            ]
        )
        #expect(again.status == 200)
        let bare = try await server.post("/v1/apple/sign-in", ["identityToken": try await token()])
        #expect(bare.status == 200)
        #expect(try harness.profile("sam") == profile)
        let trail = try harness.store.read { try $0.auditTrail(accountID: samID, limit: 50) }
        #expect(
            trail.filter { $0.event == "account.profileFilled" }.map(\.detail) == [
                ["fields": "email,displayName,fullName", "source": "sign-in"]
            ]
        )

        // account.deleted comes after every earlier event of the account, so once it arrives the
        // receiver has them all: one account.profile-filled, none for the sign-ins that filled nothing.
        let deleted = try await server.send(
            "DELETE",
            "/v1/admin/accounts/sam",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(harness.supportToken)"]
        )
        #expect(deleted.status == 200)
        let receiver = harness.receiver
        #expect(
            await WebhookReceiver.eventually {
                receiver.deliveries().verified.contains { $0.type == "account.deleted" && $0.accountID == samID }
            }
        )
        let delivered = receiver.deliveries()
        #expect(delivered.bad == 0)
        let samEvents = delivered.verified.filter { $0.accountID == samID }
        #expect(samEvents.map(\.type) == ["account.converted", "account.profile-filled", "account.deleted"])
        // The stored event keeps its members; those that name the person are now null.
        let stored = try #require(
            try harness.store.read { try $0.webhookEvent(id: samEvents[1].id) }?.payload
        )
        let data = try #require(
            (try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any])?["data"] as? [String: Any]
        )
        #expect(Set(data.keys) == Set(filled.keys))
        for key in ["sub", "email", "displayName", "fullName"] { #expect(data[key] is NSNull, "\(key)") }
        #expect(
            data["accountId"] as? String == samID
                && data["fields"] as? [String] == ["email", "displayName", "fullName"]
        )
        #expect(!stored.contains("Signin") && !stored.contains("sam.contact"))
    }
}
