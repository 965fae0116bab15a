/// Single-use recovery codes that stand in for a TOTP code when the authenticator is lost.
///
/// A code is 24 symbols from a 32-symbol alphabet without `0`, `1`, `I` and `O` (so nothing read off
/// paper is ambiguous), shown as six groups of four: `7KQM-W3XD-PF9A-...`. Each symbol carries 5 bits
/// drawn uniformly from the CSPRNG, 120 bits per code.
///
/// Why a fast hash at rest is enough: a slow password hash exists to make guessing low-entropy,
/// human-chosen secrets expensive. These codes are not chosen by anyone; with 120 random bits, even a
/// stolen table of every stored hash gives an attacker a search of about 2^120 / (number of stored
/// codes) SHA-256 evaluations per code found, far beyond reach, so a salt or a work factor would add
/// nothing (NIST SP 800-63B §5.1.2.2 sets 112 bits as the level from which look-up secrets may be
/// stored under a plain approved hash). A fast hash also keeps step-up cheap: checking a code against
/// an account's ten hashes costs microseconds, not ten password-hash evaluations an attacker could
/// trigger at will. The hash input starts with a fixed domain-separation prefix, so these hashes can
/// never collide with SHA-256 used for anything else in the system.
///
/// Keeping track of which codes were used is the caller's job: mark a code used in the same
/// transaction that accepts it.
public enum RecoveryCodes {
    /// The symbols a code is drawn from: 32 of them, so a random byte's low 5 bits pick one uniformly.
    public static let alphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
    /// Symbols in a code, excluding separators.
    public static let length = 24
    static let groupLength = 4
    private static let alphabetBytes = Array(alphabet.utf8)
    private static let domainPrefix = Array("siwa-upgrade recovery-code v1\n".utf8)

    /// `count` fresh codes, formatted in groups for display.
    public static func generate(count: Int = 10) -> [String] {
        precondition(count >= 0)
        return (0..<count).map { _ in generateOne() }
    }

    private static func generateOne() -> String {
        let random = SecureRandom.bytes(length)
        var out = [UInt8]()
        out.reserveCapacity(length + length / groupLength)
        for (index, byte) in random.enumerated() {
            if index > 0 && index % groupLength == 0 { out.append(UInt8(ascii: "-")) }
            out.append(alphabetBytes[Int(byte & 0x1f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The canonical form of a code as typed: ASCII letters upper-cased, spaces, tabs and hyphens
    /// removed. Anything else is kept, so a malformed code stays malformed.
    public static func normalize(_ code: String) -> String {
        var out = [UInt8]()
        out.reserveCapacity(code.utf8.count)
        for c in code.utf8 {
            switch c {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "-"):
                continue
            case UInt8(ascii: "a")...UInt8(ascii: "z"):
                out.append(c - 0x20)
            default:
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// True when `code`, once normalized, has the shape of a generated code.
    public static func isWellFormed(_ code: String) -> Bool {
        let symbols = Array(normalize(code).utf8)
        return symbols.count == length && symbols.allSatisfy { alphabetBytes.contains($0) }
    }

    /// The value to store for `code`: lowercase hex SHA-256 of the domain prefix and the normalized code.
    public static func hash(_ code: String) -> String {
        Digest.sha256(domainPrefix + Array(normalize(code).utf8)).hexString
    }

    /// Whether `code` is the one whose hash is `hash`, compared in constant time. A code that is not
    /// well formed never matches.
    public static func matches(_ code: String, hash storedHash: String) -> Bool {
        let wellFormed = isWellFormed(code)
        let equal = ConstantTime.equals(hash(code), storedHash)
        return wellFormed && equal
    }
}
