/// The parts of a person's name as Apple's sheet gives them once, on the first authorization
/// (`ASAuthorizationAppleIDCredential.fullName`, a `PersonNameComponents`), forwarded by the device.
/// User-typed text that nothing verified (docs/apple-protocol.md §1.2): bounded, checked for
/// characters that would hide or reorder what people see, and never used to identify anyone.
public struct PersonName: Sendable, Equatable {
    public var namePrefix: String?
    public var givenName: String?
    public var middleName: String?
    public var familyName: String?
    public var nameSuffix: String?
    public var nickname: String?

    /// Each part at most this many bytes of UTF-8, and the display name formed from them too.
    public static let maxPartBytes = 256

    /// The JSON member names, as `PersonNameComponents` names its properties.
    public static var partNames: [String] { keyPaths.map { $0.0 } }

    /// A name from its parts by JSON member name (`partNames`; other names are the caller's to
    /// refuse), unchecked: `validated()` checks it.
    public init(parts: [String: String]) {
        for (key, keyPath) in Self.keyPaths { self[keyPath: keyPath] = parts[key] }
    }

    /// The name as it may be stored: an empty or white-space-only part counts as absent (the sheet
    /// leaves a cleared field so), and nil when no part is left. Throws for a part that is too long or
    /// holds a control, line-break or bidirectional-override character, naming it `fullName.PART`,
    /// and for given, middle and family names that together form a display name over the bound.
    public func validated() throws(ProfileValidationError) -> PersonName? {
        var name = PersonName()
        for (key, keyPath) in Self.keyPaths {
            guard let value = self[keyPath: keyPath], !Self.isBlank(value) else { continue }
            try Self.check(value, field: "fullName.\(key)")
            name[keyPath: keyPath] = value
        }
        guard name != PersonName() else { return nil }
        if let display = name.displayName, display.utf8.count > Self.maxPartBytes {
            throw ProfileValidationError(
                field: "fullName",
                "givenName, middleName and familyName together must be at most \(Self.maxPartBytes) bytes"
            )
        }
        return name
    }

    public init(
        namePrefix: String? = nil,
        givenName: String? = nil,
        middleName: String? = nil,
        familyName: String? = nil,
        nameSuffix: String? = nil,
        nickname: String? = nil
    ) {
        self.namePrefix = namePrefix
        self.givenName = givenName
        self.middleName = middleName
        self.familyName = familyName
        self.nameSuffix = nameSuffix
        self.nickname = nickname
    }

    static var keyPaths: [(String, WritableKeyPath<PersonName, String?>)] {
        [
            ("namePrefix", \.namePrefix), ("givenName", \.givenName), ("middleName", \.middleName),
            ("familyName", \.familyName), ("nameSuffix", \.nameSuffix), ("nickname", \.nickname),
        ]
    }

    /// The name people are shown: given, middle and family name in the order the name's script
    /// writes them (family name first and no spaces for Chinese, Japanese and Korean, as Apple's
    /// default name formatting does), or the nickname when none of those was given.
    public var displayName: String? {
        let parts = [givenName, middleName, familyName].compactMap { $0 }
        if parts.isEmpty { return nickname }
        if parts.contains(where: Self.isCJK) {
            return [familyName, middleName, givenName].compactMap { $0 }.joined()
        }
        return parts.joined(separator: " ")
    }

    /// The parts given, under their JSON names in `partNames` order; absent ones left out.
    public var json: JSONValue {
        .object(Self.keyPaths.compactMap { key, keyPath in self[keyPath: keyPath].map { .init(key, .string($0)) } })
    }

    /// A name stored as `json`; nil for text that is not such an object.
    public init?(json text: String) {
        guard let members = (try? JSONValue.parse(Array(text.utf8)))?.members else { return nil }
        var name = PersonName()
        for member in members {
            guard let keyPath = Self.keyPaths.first(where: { $0.0 == member.key })?.1,
                let value = member.value.stringValue
            else { return nil }
            name[keyPath: keyPath] = value
        }
        self = name
    }

    static func isBlank(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { $0.properties.isWhitespace }
    }

    /// Text a person typed, bounded, with nothing that changes how the rest of a screen reads:
    /// no control characters, line or paragraph separators, or bidirectional embeddings, overrides
    /// and isolates (U+202A-U+202E, U+2066-U+2069).
    static func check(_ value: String, field: String) throws(ProfileValidationError) {
        guard value.utf8.count <= maxPartBytes else {
            throw ProfileValidationError(field: field, "must be at most \(maxPartBytes) bytes")
        }
        for scalar in value.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator:
                throw ProfileValidationError(field: field, "contains a control or line-break character")
            default:
                if (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value) {
                    throw ProfileValidationError(field: field, "contains a bidirectional override character")
                }
            }
        }
    }

    /// Han, Hiragana, Katakana or Hangul: scripts whose names are written family name first, unspaced.
    static func isCJK(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x1100...0x11FF, 0x3040...0x30FF, 0x3130...0x318F, 0x3400...0x4DBF, 0x4E00...0x9FFF,
                0xAC00...0xD7AF, 0xF900...0xFAFF, 0x20000...0x2FA1F:
                true
            default: false
            }
        }
    }
}
