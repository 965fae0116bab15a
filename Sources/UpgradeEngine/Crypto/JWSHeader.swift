/// The members of a JWS protected header that we act on.
///
/// Only `alg`, `kid` and `typ` are read. Header members that would let the token choose its own
/// key (`jwk`, `jku`, `x5u`, `x5c`) are ignored: keys come from configuration only. A `crit`
/// member is refused, as RFC 7515 §4.1.11 requires when the listed extensions are not understood
/// (we understand none).
public struct JWSHeader: Sendable, Equatable {
    public var algorithm: String
    public var keyID: String?
    public var type: String?

    public init(algorithm: String, keyID: String?, type: String? = nil) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.type = type
    }

    public init(json bytes: [UInt8]) throws(JWSError) {
        var algorithm: String?
        var keyID: String?
        var type: String?
        var notString: String?
        var hasCritical = false
        do {
            try bytes.withUnsafeBufferPointer { buffer throws(JSONValueError) in
                var reader = JSONValueReader(buffer)
                // Duplicates matter only for the members we act on; a bit each is enough.
                var seen: UInt8 = 0
                try reader.readObject { key, reader throws(JSONValueError) in
                    let bit: UInt8 =
                        switch key {
                        case "alg": 1
                        case "kid": 2
                        case "typ": 4
                        case "crit": 8
                        default: 0
                        }
                    guard seen & bit == 0 else {
                        throw JSONValueError(offset: reader.index, message: "duplicate member \(key)")
                    }
                    seen |= bit
                    switch key {
                    case "alg", "kid", "typ":
                        guard try reader.peekKind() == .string else {
                            notString = notString ?? key
                            try reader.skipValue()
                            return
                        }
                        let value = try reader.readString()
                        if key == "alg" {
                            algorithm = value
                        } else if key == "kid" {
                            keyID = value
                        } else {
                            type = value
                        }
                    case "crit":
                        hasCritical = true
                        try reader.skipValue()
                    default:
                        try reader.skipValue()
                    }
                }
                try reader.finish()
            }
        } catch {
            throw JWSError("token header is not a JSON object: \(error)")
        }
        if let notString { throw JWSError("token header member \(notString) is not a string") }
        guard !hasCritical else {
            throw JWSError("token header lists critical extensions (crit), which are not supported")
        }
        guard let algorithm else { throw JWSError("token header has no alg") }
        self.algorithm = algorithm
        self.keyID = keyID
        self.type = type
    }

    /// `{"alg":…,"kid":…}` in that order, plus `typ` when set.
    public var json: JSONValue {
        .object(["alg": .string(algorithm), "kid": keyID.map(JSONValue.string), "typ": type.map(JSONValue.string)])
    }
}
