/// The project-wide parameters two imported hash formats need besides the hash: Firebase's scrypt
/// (the project's signer key, salt separator, rounds and memory cost) and keyed HMAC digests (the
/// key). They are given once per import (`accounts import --hash-parameters FILE`), stored once,
/// sealed (`hash_parameter_sets`), and each hash names its set by id (`p=<id>`;
/// docs/architecture.md, Password hashes).
///
/// The values are secrets: `description`, `debugDescription` and the mirror show the kind and the
/// cost only, so a set can be logged or printed by mistake without leaking a key.
public struct HashParameterSet: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Firebase Authentication's modified scrypt.
        case firebaseScrypt = "firebase-scrypt"
        /// HMAC-SHA256 or HMAC-SHA512 of the password under one key (`$hmac-sha256$`, `$hmac-sha512$`).
        case hmac

        /// What the hashes that use a set of this kind start with (`$hmac-sha256$` and `$hmac-sha512$`).
        var hashPrefix: String { self == .firebaseScrypt ? "$firebase-scrypt$" : "$hmac-sha" }
    }

    /// Where a keyed HMAC hash's per-user salt goes: `HMAC(key, salt ‖ password)` or `HMAC(key, password ‖ salt)`.
    public enum SaltPosition: String, Sendable, Hashable {
        case before, after
    }

    enum Values: Sendable, Equatable {
        case firebaseScrypt(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int)
        case hmac(key: [UInt8], saltPosition: SaltPosition)
    }

    let values: Values

    init(_ values: Values) {
        self.values = values
    }

    public var kind: Kind {
        switch values {
        case .firebaseScrypt: return .firebaseScrypt
        case .hmac: return .hmac
        }
    }

    /// The non-secret part, for people: the cost, or the salt position.
    public var summary: String {
        switch values {
        case .firebaseScrypt(_, _, let rounds, let memoryCost):
            return "rounds \(rounds), memory cost \(memoryCost) (scrypt N=2^\(memoryCost), r=\(rounds), p=1)"
        case .hmac(_, let saltPosition):
            return "a salt goes \(saltPosition.rawValue) the password"
        }
    }

    public var description: String { "HashParameterSet(\(kind.rawValue), \(summary), secrets redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Firebase's own ranges (`firebase auth:import --rounds`, `--mem-cost`).
    public static let firebaseRounds = 1...8
    public static let firebaseMemoryCost = 1...14
    /// Key sizes accepted: Firebase's signer key is 64 bytes, its salt separator 1 (`Bw==`).
    public static let maxKeyBytes = 1024
    public static let maxSaltSeparatorBytes = 64

    /// The sealing context of the stored set `id`: a sealed set copied to another id does not open.
    public static func sealingContext(id: Int64) -> String { "hash-parameters:\(id)" }
}
