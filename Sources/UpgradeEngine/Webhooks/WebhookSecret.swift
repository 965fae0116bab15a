import Foundation

/// The key webhooks are signed with, and the signature of the Standard Webhooks specification
/// (Schema/webhooks.md): the secret is `whsec_` followed by the base64 of the key bytes; the
/// signed content is `{webhook-id}.{webhook-timestamp}.{body}`; the `webhook-signature` header is
/// `v1,` followed by the base64 of its HMAC-SHA256. The key never appears in a description.
public struct WebhookSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let environmentVariable = "UPGRADE_WEBHOOK_SECRET_FILE"
    static let prefix = "whsec_"
    public static let howToCreate =
        "create one with: (umask 077; printf 'whsec_%s\\n' \"$(head -c 32 /dev/urandom | base64)\" > webhook-secret)"

    private let key: [UInt8]

    /// Parses `whsec_<base64>` (surrounding whitespace ignored). The message never repeats the text.
    public init(text: String) throws(WebhookSecretError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix(Self.prefix) else {
            throw WebhookSecretError("does not start with 'whsec_'; \(Self.howToCreate)")
        }
        guard let key = Data(base64Encoded: String(trimmed.dropFirst(Self.prefix.count))) else {
            throw WebhookSecretError("is not 'whsec_' followed by base64; \(Self.howToCreate)")
        }
        // The specification asks for 24 to 64 bytes of key.
        guard (24...64).contains(key.count) else {
            throw WebhookSecretError("holds a \(key.count)-byte key; it must be 24 to 64 bytes; \(Self.howToCreate)")
        }
        self.key = Array(key)
    }

    /// Reads the secret from an owner-only file (`chmod 600`), as the other secret files are read.
    public static func load(
        path: String,
        variable: String = environmentVariable
    ) throws(WebhookSecretError)
        -> WebhookSecret
    {
        let name = "\(variable)=\(path)"
        let text: String
        do {
            text = try OwnerOnlyFile.read(path: path, limit: 4096)
        } catch {
            throw WebhookSecretError("\(name): \(error.message)")
        }
        do {
            return try WebhookSecret(text: text)
        } catch {
            throw WebhookSecretError("\(name) \(error.message)")
        }
    }

    /// The `webhook-signature` header value for one delivery.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        let content = Array("\(id).\(timestamp).".utf8) + body
        return "v1," + Data(Digest.hmac(.sha256, key: key, message: content)).base64EncodedString()
    }

    /// Whether a `webhook-signature` header (space-separated entries, one per signing secret) holds
    /// this secret's `v1,` signature of the content. Every entry is compared in constant time, with
    /// no early exit; entries of other versions never match. The timestamp's age is the caller's check.
    public func isValidSignature(_ header: String, id: String, timestamp: Int64, body: [UInt8]) -> Bool {
        let expected = Array(signature(id: id, timestamp: timestamp, body: body).utf8)
        var found = false
        for entry in header.split(separator: " ", omittingEmptySubsequences: true) {
            found = ConstantTime.equals(Array(entry.utf8), expected) || found
        }
        return found
    }

    public var description: String { "WebhookSecret(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// Why a webhook secret was refused: one line naming the file, never the secret.
public struct WebhookSecretError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
