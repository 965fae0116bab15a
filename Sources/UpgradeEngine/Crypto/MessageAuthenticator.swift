/// HMAC-SHA256 under a key derived by `SecretBox.authenticator(purpose:)`; the key never leaves it.
public struct MessageAuthenticator: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private let key: [UInt8]

    init(key: [UInt8]) {
        self.key = key
    }

    /// The 32-byte tag of `message`.
    public func tag<M: Collection<UInt8>>(_ message: M) -> [UInt8] {
        Digest.hmac(.sha256, key: key, message: message)
    }

    /// Whether `tag` is `message`'s tag, compared in constant time.
    public func isValid<M: Collection<UInt8>, T: Collection<UInt8>>(tag: T, for message: M) -> Bool {
        ConstantTime.equals(Array(tag), self.tag(message))
    }

    public var description: String { "MessageAuthenticator(key redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
