/// HMAC-SHA256 under keys derived by `SecretBox.authenticator(purpose:)`; the keys never leave it.
/// It reads its box's keys at each call, so it follows a reload (`SecretBox.replaceKeys`).
public struct MessageAuthenticator: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The derived keys of the box's keyring at the moment of the call, newest first; never empty.
    private let keys: @Sendable () -> [[UInt8]]

    init(keys: @escaping @Sendable () -> [[UInt8]]) {
        self.keys = keys
    }

    /// The 32-byte tag of `message`, under the newest key.
    public func tag<M: Collection<UInt8>>(_ message: M) -> [UInt8] {
        Digest.hmac(.sha256, key: keys()[0], message: message)
    }

    /// Whether `tag` is `message`'s tag under any listed key. Every key is tried and each comparison
    /// runs in constant time, so the time taken tells nothing of the tag nor of which key matched.
    public func isValid<M: Collection<UInt8>, T: Collection<UInt8>>(tag: T, for message: M) -> Bool {
        let given = Array(tag)
        var valid = false
        for key in keys() {
            let matches = ConstantTime.equals(given, Digest.hmac(.sha256, key: key, message: message))
            valid = valid || matches
        }
        return valid
    }

    public var description: String { "MessageAuthenticator(key redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
