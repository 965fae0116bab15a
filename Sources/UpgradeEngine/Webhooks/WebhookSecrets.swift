import Foundation

/// The secrets of a webhook secret file (`UPGRADE_WEBHOOK_SECRET_FILE`,
/// `UPGRADE_LEGACY_VERIFY_SECRET_FILE`): one `whsec_` secret a line, newest first, blank lines and
/// `#` comments allowed. During a rotation the file holds the new secret and the old one, and every
/// request carries one `v1,` signature per secret in `webhook-signature`, space separated, as the
/// Standard Webhooks specification has it: a receiver holding either secret verifies it
/// (Schema/webhooks.md, "Rotating the secret"). No secret appears in a description.
public struct WebhookSecrets: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Newest first; never empty.
    public let secrets: [WebhookSecret]
    /// More would only lengthen every request's header; a rotation needs two.
    public static let maximumCount = 8

    public init(_ secrets: [WebhookSecret]) {
        precondition(!secrets.isEmpty, "a webhook secret list holds at least one secret")
        self.secrets = secrets
    }

    public init(_ secret: WebhookSecret) { self.init([secret]) }

    /// Parses the file's text; the message names the line, never its content.
    public init(text: String) throws(WebhookSecretError) {
        var secrets: [WebhookSecret] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do {
                secrets.append(try WebhookSecret(text: trimmed))
            } catch {
                throw WebhookSecretError("line \(number + 1) \(error.message)")
            }
        }
        guard !secrets.isEmpty else {
            throw WebhookSecretError("holds no secret; \(WebhookSecret.howToCreate)")
        }
        guard secrets.count <= Self.maximumCount else {
            throw WebhookSecretError(
                "holds \(secrets.count) secrets; at most \(Self.maximumCount) (the new one and the old ones still in use)"
            )
        }
        self.secrets = secrets
    }

    /// Reads the secrets from an owner-only file (`chmod 600`), as the other secret files are read.
    public static func load(
        path: String,
        variable: String = WebhookSecret.environmentVariable
    ) throws(WebhookSecretError) -> WebhookSecrets {
        let name = "\(variable)=\(path)"
        let text: String
        do {
            text = try OwnerOnlyFile.read(path: path, limit: 16 * 1024)
        } catch {
            throw WebhookSecretError("\(name): \(error.message)")
        }
        do {
            return try WebhookSecrets(text: text)
        } catch {
            throw WebhookSecretError("\(name) \(error.message)")
        }
    }

    public var count: Int { secrets.count }

    /// The `webhook-signature` header value: one `v1,` signature per secret, newest first.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        secrets.map { $0.signature(id: id, timestamp: timestamp, body: body) }.joined(separator: " ")
    }

    /// Whether the header holds a valid signature by any of the secrets (what a receiver that
    /// accepts either side of a rotation checks). Every secret is tried, with no early exit.
    public func isValidSignature(_ header: String, id: String, timestamp: Int64, body: [UInt8]) -> Bool {
        var found = false
        for secret in secrets {
            found = secret.isValidSignature(header, id: id, timestamp: timestamp, body: body) || found
        }
        return found
    }

    public var description: String { "WebhookSecrets(\(secrets.count), redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
