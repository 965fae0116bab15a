import Testing

@testable import UpgradeEngine

/// What the device forwards from Apple's first authorization: how a name is checked and shown, and
/// that filling a profile only ever adds what it lacks.
@Suite("Device-given profile: checked, shown, and never replacing what an account has")
struct DeviceGivenProfileTests {
    @Test(
        "a display name in the order the name's script writes it, the nickname when nothing else",
        arguments: [
            (PersonName(givenName: "Ada", familyName: "Lovelace"), "Ada Lovelace"),
            (PersonName(givenName: "Ada", middleName: "Augusta", familyName: "King"), "Ada Augusta King"),
            (PersonName(namePrefix: "Dr.", givenName: "Grace", nameSuffix: "PhD"), "Grace"),
            (PersonName(givenName: "太郎", familyName: "山田"), "山田太郎"),
            (PersonName(givenName: "길동", familyName: "홍"), "홍길동"),
            (PersonName(nickname: "Zed"), "Zed"),
            (PersonName(familyName: "Curie", nickname: "Marie"), "Curie"),
        ]
    )
    func displayName(_ name: PersonName, _ expected: String) throws {
        #expect(try name.validated()?.displayName == expected)
    }

    @Test("empty and white-space-only parts count as absent; a name of none is no name")
    func blankParts() throws {
        let name = PersonName(parts: ["givenName": "Ada", "middleName": "", "familyName": " \u{3000}"])
        #expect(try name.validated() == PersonName(givenName: "Ada"))
        #expect(try PersonName(parts: ["givenName": "", "nickname": "  "]).validated() == nil)
        #expect(try DeviceGivenProfile(email: "", fullName: PersonName(parts: [:])).isEmpty)
    }

    @Test(
        "a part or an email that is too long or hides characters is refused, naming the field and not the value",
        arguments: [
            (nil, ["givenName": String(repeating: "é", count: 129)], "fullName.givenName", "at most 256 bytes"),
            (nil, ["familyName": "Evil\u{202E}gnp.exe"], "fullName.familyName", "bidirectional override"),
            (nil, ["nickname": "two\nlines"], "fullName.nickname", "control or line-break"),
            (nil, ["middleName": "a\u{2028}b"], "fullName.middleName", "control or line-break"),
            (nil, ["namePrefix": "\u{1B}[31m"], "fullName.namePrefix", "control or line-break"),
            (
                nil,
                [
                    "givenName": String(repeating: "g", count: 100), "middleName": String(repeating: "m", count: 100),
                    "familyName": String(repeating: "f", count: 100),
                ],
                "fullName", "together must be at most 256 bytes"
            ),
            ("no-at-sign.example.com", [:], "email", "local@domain"),
            ("two@@example.com", [:], "email", "local@domain"),
            ("a b@example.com", [:], "email", "a space or a control character"),
            ("a\u{200B}b@example.com", [:], "email", "a space or a control character"),
            (String(repeating: "a", count: 310) + "@example.com", [:], "email", "at most 320 bytes"),
        ] as [(String?, [String: String], String, String)]
    )
    func refused(_ email: String?, _ parts: [String: String], _ field: String, _ reason: String) {
        #expect {
            _ = try DeviceGivenProfile(email: email, fullName: PersonName(parts: parts))
        } throws: { error in
            guard let error = error as? ProfileValidationError else { return false }
            let named = error.field == field && error.reason.contains(reason)
            let echoes = (parts.values + [email ?? ""]).contains { !$0.isEmpty && error.description.contains($0) }
            return named && !echoes && error.description.hasPrefix("field '\(field)' ")
        }
    }

    @Test("a name's parts survive the JSON they are stored as")
    func jsonRoundTrip() throws {
        let name = PersonName(
            namePrefix: "Dr.",
            givenName: "Ada \"Countess\"",
            middleName: "Augusta",
            familyName: "King\\Lovelace",
            nameSuffix: "FRS",
            nickname: "Ada 🐝"
        )
        let text = name.json.serializedString
        #expect(text.hasPrefix(#"{"namePrefix":"Dr.","givenName":"#))
        #expect(PersonName(json: text) == name)
        #expect(PersonName(json: #"{"givenName":1}"#) == nil)
        #expect(PersonName(json: #"{"title":"x"}"#) == nil)
        #expect(PersonName(json: "[]") == nil)
    }

    static let imported = AccountProfileRecord(
        accountID: "acc",
        email: nil,
        displayName: "Imported Name",
        importRun: "run",
        importLine: 3,
        updatedAt: 10,
        displayNameSource: .import
    )

    @Test("filling adds only what the profile lacks, marks it the device's, and keeps the import's values")
    func fillingKeepsWhatIsThere() throws {
        let given = try DeviceGivenProfile(
            email: "relay@privaterelay.appleid.com",
            fullName: PersonName(givenName: "Ada", familyName: "Lovelace")
        )
        let filled = try #require(given.filling(Self.imported, accountID: "acc", realUserStatus: .likelyReal, now: 20))
        #expect(filled.fields == ["email", "fullName", "realUserStatus"])
        var expected = Self.imported
        expected.email = "relay@privaterelay.appleid.com"
        expected.emailSource = .device
        expected.fullName = PersonName(givenName: "Ada", familyName: "Lovelace")
        expected.realUserStatus = .likelyReal
        expected.updatedAt = 20
        #expect(filled.profile == expected)

        // A later authorization (or another device) changes nothing that is there.
        let again = try DeviceGivenProfile(email: "other@example.com", fullName: PersonName(givenName: "Mallory"))
        #expect(again.filling(filled.profile, accountID: "acc", realUserStatus: .unknown, now: 30) == nil)
        #expect(DeviceGivenProfile().filling(filled.profile, accountID: "acc", realUserStatus: nil, now: 30) == nil)
    }

    @Test("an account without a profile gets one with the device's values; nothing given makes none")
    func fillingCreates() throws {
        let given = try DeviceGivenProfile(email: nil, fullName: PersonName(givenName: "太郎", familyName: "山田"))
        let filled = try #require(given.filling(nil, accountID: "acc", realUserStatus: nil, now: 5))
        #expect(filled.fields == ["displayName", "fullName"])
        #expect(
            filled.profile
                == AccountProfileRecord(
                    accountID: "acc",
                    email: nil,
                    displayName: "山田太郎",
                    importRun: nil,
                    importLine: nil,
                    updatedAt: 5,
                    displayNameSource: .device,
                    fullName: PersonName(givenName: "太郎", familyName: "山田")
                )
        )
        #expect(DeviceGivenProfile().filling(nil, accountID: "acc", realUserStatus: nil, now: 5) == nil)
        let status = try #require(DeviceGivenProfile().filling(nil, accountID: "acc", realUserStatus: .unknown, now: 5))
        #expect(status.fields == ["realUserStatus"] && status.profile.displayName == nil)
    }
}
