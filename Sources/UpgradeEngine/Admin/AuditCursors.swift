/// The `cursor` of `GET /v1/admin/audit`: which page comes next, tamper-evident. A cursor is
/// `base64url(0x01 ‖ last event id (8 bytes, big-endian) ‖ HMAC-SHA256 tag)`, the tag under a key
/// derived from `UPGRADE_SECRET_KEY_FILE` for this purpose only (as `SignInNonces` does), so only a
/// `nextCursor` this server issued reads back as a position; anything else, the base64url of some
/// other id included, is refused. It carries no expiry and binds no filter: it names a position in
/// the trail, which any admin with the `audit` scope may read anyway. The CLI pages by id directly.
public struct AuditCursors: Sendable {
    static let version: UInt8 = 1
    static let signedLength = 1 + 8
    static let tagLength = 32
    /// 41 bytes in unpadded base64url.
    public static let encodedLength = ((signedLength + tagLength) * 4 + 2) / 3

    let authenticator: MessageAuthenticator

    public init(secrets: SecretBox) {
        authenticator = secrets.authenticator(purpose: "audit cursor")
    }

    /// The cursor for "the page after the one ending with event `id`".
    public func cursor(afterID id: Int64) -> String {
        var signed: [UInt8] = [Self.version]
        signed.reserveCapacity(Self.signedLength + Self.tagLength)
        for shift in stride(from: 56, through: 0, by: -8) { signed.append(UInt8(truncatingIfNeeded: id >> shift)) }
        return Base64URL.encode(signed + authenticator.tag(signed))
    }

    /// The id `text` stands for, or nil when it is not a cursor this server (with this key) issued.
    public func id(cursor text: String) -> Int64? {
        guard text.utf8.count == Self.encodedLength, let bytes = Base64URL.decode(text),
            bytes.count == Self.signedLength + Self.tagLength, bytes[0] == Self.version
        else { return nil }
        let signed = bytes[0..<Self.signedLength]
        guard authenticator.isValid(tag: bytes[Self.signedLength...], for: signed) else { return nil }
        let id = bytes[1..<Self.signedLength].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return id > 0 ? id : nil
    }
}
